/* Stress of object lifetimes around async runs, on REF and SLOWDEV: round
 * after round, a fresh core and compiled model (4 streams) start 16 requests,
 * and requests are freed while their runs are in flight, some cancelled
 * first, some after the core and compiled model are already freed (the
 * requests keep them alive). Freeing a running request waits for its run:
 * when rn_infer_request_free returns, that run's callback has been called
 * exactly once. The ASan build checks that nothing leaks (the executor pools,
 * the plugin's device thread, the requests' buffers) and the TSan build that
 * nothing races. */
#include "tests/stress/stress.h"

#define N_REQUESTS 16
#define N_STREAMS  "4"
#define N_ELEMENTS 60 /* test_add: x, y and sum are 3x4x5 */

typedef struct lifetime_slot {
    stress_failures *failures;
    rn_infer_request *request;
    uint32_t id, gen;
    atomic_long starts, completions, ok, cancelled;
} lifetime_slot;

static void on_complete(rn_infer_request *r, rn_status status, void *user_data)
{
    lifetime_slot *s = user_data;
    long completions = atomic_fetch_add(&s->completions, 1) + 1;
    if (completions > atomic_load(&s->starts))
        stress_fail(s->failures, "request %u: %ld completions for %ld starts", s->id, completions,
                    atomic_load(&s->starts));
    if (status == RN_CANCELLED) {
        atomic_fetch_add(&s->cancelled, 1);
        return;
    }
    if (status != RN_OK) {
        stress_fail(s->failures, "request %u: status %s: %s", s->id, rn_status_name(status),
                    rn_last_error());
        return;
    }
    atomic_fetch_add(&s->ok, 1);
    rn_tensor *x, *y, *z;
    if (rn_infer_request_get_input_tensor(r, 0, &x) != RN_OK ||
        rn_infer_request_get_input_tensor(r, 1, &y) != RN_OK ||
        rn_infer_request_get_output_tensor(r, 0, &z) != RN_OK) {
        stress_fail(s->failures, "request %u: get_tensor in the callback: %s", s->id,
                    rn_last_error());
        return;
    }
    long bad = stress_check_sum(rn_tensor_data(x), rn_tensor_data(y), rn_tensor_data(z),
                                rn_tensor_element_count(z));
    if (bad >= 0)
        stress_fail(s->failures, "request %u run %u: element %ld of the sum is wrong", s->id,
                    s->gen, bad);
}

/* Creates slot s's request, fills its inputs and starts it. */
static void slot_start(lifetime_slot *s, rn_compiled_model *compiled)
{
    cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &s->request), RN_OK, "%s",
                 rn_last_error());
    rn_tensor *x, *y;
    cr_assert_eq(rn_infer_request_get_input_tensor(s->request, 0, &x), RN_OK);
    cr_assert_eq(rn_infer_request_get_input_tensor(s->request, 1, &y), RN_OK);
    cr_assert_eq(rn_tensor_element_count(x), N_ELEMENTS);
    s->gen++;
    stress_fill_inputs(rn_tensor_data(x), rn_tensor_data(y), N_ELEMENTS, s->id, s->gen);
    cr_assert_eq(rn_infer_request_set_callback(s->request, on_complete, s), RN_OK);
    atomic_fetch_add(&s->starts, 1);
    cr_assert_eq(rn_infer_request_start_async(s->request), RN_OK, "%s", rn_last_error());
}

/* Frees slot s's request (running or not); its run's callback must have
 * been called by the time free returns. */
static void slot_free(lifetime_slot *s)
{
    rn_infer_request_free(s->request);
    s->request = NULL;
    long starts = atomic_load(&s->starts), completions = atomic_load(&s->completions);
    if (starts != completions)
        stress_fail(s->failures,
                    "request %u: free returned with %ld starts and %ld completions (the "
                    "callback of the run in flight had not been called)",
                    s->id, starts, completions);
}

static void stress_lifetime(const char *device)
{
    char test[64];
    snprintf(test, sizeof test, "lifetime %s", device);
    long rounds = stress_runs(test, 100000) / N_REQUESTS / 4;
    if (rounds < 1)
        rounds = 1;
    fprintf(stderr, "stress %s: %ld rounds of %d requests\n", test, rounds, N_REQUESTS);
    stress_failures failures;
    stress_failures_init(&failures);
    lifetime_slot *slots = calloc(N_REQUESTS, sizeof *slots);
    cr_assert_not_null(slots);
    for (uint32_t i = 0; i < N_REQUESTS; i++) {
        slots[i].failures = &failures;
        slots[i].id = i;
    }
    uint64_t rng = 0x243F6A8885A308D3ull;
    double t0 = stress_now_s();
    for (long round = 0; round < rounds; round++) {
        rn_core *core = stress_core(device);
        rn_model *model;
        cr_assert_eq(rn_core_read_model(core, STRESS_ADD_MODEL, &model), RN_OK, "%s",
                     rn_last_error());
        rn_property props[] = {{"NUM_STREAMS", N_STREAMS}};
        rn_compiled_model *compiled;
        cr_assert_eq(rn_core_compile_model(core, model, device, props, 1, &compiled), RN_OK, "%s",
                     rn_last_error());
        for (int i = 0; i < N_REQUESTS; i++)
            slot_start(&slots[i], compiled);
        /* Every other round, the requests outlive everything they came from. */
        bool early = round % 2 == 0;
        if (early) {
            rn_compiled_model_free(compiled);
            rn_model_free(model);
            rn_core_free(core);
        }
        /* Replace requests while others run: free (some cancelled, some
         * waited for first) and start anew. */
        for (int k = 0; k < N_REQUESTS; k++) {
            lifetime_slot *s = &slots[stress_rand(&rng) % N_REQUESTS];
            if (s->request == NULL)
                continue;
            uint32_t what = stress_rand(&rng) % 4;
            if (what == 0) {
                rn_infer_request_cancel(s->request);
            } else if (what == 1) {
                rn_status st = rn_infer_request_wait(s->request);
                if (st != RN_OK && st != RN_CANCELLED)
                    stress_fail(&failures, "request %u: wait: %s: %s", s->id, rn_status_name(st),
                                rn_last_error());
            }
            slot_free(s);
            if (!early) /* early rounds have no compiled model left to create one */
                slot_start(s, compiled);
        }
        for (int i = 0; i < N_REQUESTS; i++)
            if (slots[i].request != NULL) {
                if (stress_rand(&rng) % 4 == 0)
                    rn_infer_request_cancel(slots[i].request);
                slot_free(&slots[i]);
            }
        if (!early) {
            rn_compiled_model_free(compiled);
            rn_model_free(model);
            rn_core_free(core);
        }
    }
    long starts = 0, completions = 0, ok = 0, cancelled = 0;
    for (int i = 0; i < N_REQUESTS; i++) {
        starts += atomic_load(&slots[i].starts);
        completions += atomic_load(&slots[i].completions);
        ok += atomic_load(&slots[i].ok);
        cancelled += atomic_load(&slots[i].cancelled);
    }
    double seconds = stress_now_s() - t0;
    fprintf(stderr,
            "stress %s: %ld rounds, %ld starts, %ld completions (%ld OK, %ld CANCELLED) in "
            "%.1f s\n",
            test, rounds, starts, completions, ok, cancelled, seconds);
    free(slots);
    stress_assert_no_failures(&failures);
    cr_assert_eq(completions, starts);
    cr_assert_gt(ok, 0);
}

Test(lifetime_stress, ref_free_while_running, .timeout = 600)
{
    stress_lifetime("REF");
}

Test(lifetime_stress, slowdev_free_while_running, .timeout = 600)
{
    stress_lifetime("SLOWDEV");
}
