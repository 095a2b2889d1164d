/* Stress of async requests: many runs spread over 4 streams with 16 requests
 * in flight, on REF and SLOWDEV. Half the requests are driven by their
 * callbacks: each completion's callback checks the run's outputs, sets new
 * inputs (in place, or by set_tensor with other tensors; every fourth
 * request has its second input set and its outputs in remote tensors of the
 * model's context) and restarts its
 * request. The other half are driven by two threads of the test, which own
 * four requests each: they poll them with wait_for or block in wait, check,
 * set new inputs and start them again. Every callback may cancel another
 * request; the test's thread cancels requests at random and polls the
 * callback-driven ones with wait_for meanwhile.
 *
 * What must hold: every start completes exactly once (a run in flight per
 * request at most, a callback per start), with RN_OK or RN_CANCELLED; wait
 * returns after the callback, with the status it received; every
 * RN_OK run's output is the sum of the inputs it was started with; the
 * requests are still usable afterwards. ASan and TSan builds of this test
 * check that nothing leaks and nothing races. */
#include <pthread.h>
#include <unistd.h>

#include "tests/stress/stress.h"

#ifdef STRESS_SOAK
/* The soak (test_async_soak, manual): 64 requests in flight on 8 streams,
 * 10^6 runs by default, the process's RSS sampled over the run. */
#define N_REQUESTS   64
#define N_DRIVEN     16
#define N_STREAMS    "8"
#define DEFAULT_RUNS 1000000
#define TIMEOUT_S    7200
#else
#define N_REQUESTS   16
#define N_DRIVEN     8 /* the last 8 requests are driven by threads */
#define N_STREAMS    "4"
#define DEFAULT_RUNS 100000
#define TIMEOUT_S    600
#endif
#define N_DRIVERS     2
#define N_ELEMENTS    60   /* test_add: x, y and sum are 3x4x5 */
#define STALL_LIMIT_S 30.0 /* seconds without a completion: a lost one */

typedef struct stress_run stress_run;

/* One request and what the test knows about it. Its inputs and outputs
 * (and `rng`) are touched by the test's thread before the first start, then
 * only by whoever drives it (its callbacks, which never overlap, or its
 * driver thread between a wait and the next start), then by the test's
 * thread again after the final wait. */
typedef struct slot {
    stress_run *run;
    rn_infer_request *request;
    uint32_t id;
    uint64_t rng;
    uint64_t callback_rng;  /* the callbacks' own, for the thread-driven ones */
    bool driven;            /* by a driver thread (else by its callbacks) */
    atomic_int last_status; /* what the last callback received */
    /* Two sets of input tensors; `set` is the one bound. */
    rn_tensor *inputs[2][2];
    int set;
    uint32_t gen; /* the inputs' generation */
    /* Odd slots write into their own output tensors, alternately. */
    bool user_output;
    rn_tensor *outputs[2];
    int out;
    /* Every fourth slot: input set 1 is bound as remote tensors (copied
     * from inputs[1] before each run) and its outputs are remote. */
    bool remote;
    rn_tensor *remote_in[2];
    /* Exactly once: starts and completions, and whether a run is in flight. */
    atomic_long starts, completions, ok, cancelled;
    atomic_int in_flight;
} slot;

struct stress_run {
    const char *device;
    rn_remote_context *context; /* the compiled model's */
    slot slots[N_REQUESTS];
    const char *input_names[2];
    atomic_long tickets; /* starts left to hand out */
    atomic_long settled; /* completions plus failed starts */
    atomic_long cancels; /* cancels issued */
    stress_failures failures;
};

static bool take_ticket(stress_run *run)
{
    return atomic_fetch_sub(&run->tickets, 1) > 0;
}

/* Sets the next run's inputs (in place or by swapping tensors) and output,
 * then starts it. Called by the test's thread for the first run, then by
 * the request's callback or driver. False when the start failed (recorded). */
/* Copies `n` host floats into a remote tensor or out of one. */
static rn_status remote_copy(rn_tensor *remote, float *host, bool to_remote)
{
    int64_t dims[] = {3, 4, 5};
    rn_tensor *h;
    rn_status st = rn_tensor_wrap(RN_F32, dims, 3, host, N_ELEMENTS * sizeof(float), &h);
    if (st == RN_OK)
        st = to_remote ? rn_tensor_copy(h, remote) : rn_tensor_copy(remote, h);
    rn_tensor_free(h);
    return st;
}

/* The tensor bound for input k of set `set`. */
static rn_tensor *bound_input(slot *s, int set, int k)
{
    return s->remote && set == 1 ? s->remote_in[k] : s->inputs[set][k];
}

/* A remote slot on set 1: its fresh inputs go to device memory. */
static void sync_remote_inputs(slot *s)
{
    for (int k = 0; s->remote && s->set == 1 && k < 2; k++) {
        rn_status st = remote_copy(s->remote_in[k], rn_tensor_data(s->inputs[1][k]), true);
        if (st != RN_OK)
            stress_fail(&s->run->failures, "request %u: copy to a remote input: %s: %s", s->id,
                        rn_status_name(st), rn_last_error());
    }
}

/* The values of an output: its data, or a host copy of a remote one. */
static const float *output_values(slot *s, rn_tensor *out, float *buf)
{
    if (!rn_tensor_is_remote(out))
        return rn_tensor_data(out);
    rn_status st = remote_copy(out, buf, false);
    if (st != RN_OK)
        stress_fail(&s->run->failures, "request %u: copy from a remote output: %s: %s", s->id,
                    rn_status_name(st), rn_last_error());
    return buf;
}

static bool start_next(slot *s)
{
    stress_run *run = s->run;
    rn_infer_request *r = s->request;
    s->gen++;
    int set = stress_rand(&s->rng) % 2 ? s->set ^ 1 : s->set;
    stress_fill_inputs(rn_tensor_data(s->inputs[set][0]), rn_tensor_data(s->inputs[set][1]),
                       N_ELEMENTS, s->id, s->gen);
    if (set != s->set) {
        for (int k = 0; k < 2; k++) {
            rn_status st =
                rn_infer_request_set_tensor(r, run->input_names[k], bound_input(s, set, k));
            if (st != RN_OK)
                stress_fail(&run->failures, "request %u: set_tensor(%s): %s: %s", s->id,
                            run->input_names[k], rn_status_name(st), rn_last_error());
        }
        s->set = set;
    }
    sync_remote_inputs(s);
    if (s->user_output) {
        s->out ^= 1;
        float minus[N_ELEMENTS];
        float *z = s->remote ? minus : rn_tensor_data(s->outputs[s->out]);
        for (int i = 0; i < N_ELEMENTS; i++)
            z[i] = -1.0f; /* no input sum is negative: a stale buffer shows */
        if (s->remote && remote_copy(s->outputs[s->out], minus, true) != RN_OK)
            stress_fail(&run->failures, "request %u: copy to a remote output: %s", s->id,
                        rn_last_error());
        rn_status st = rn_infer_request_set_output_tensor(r, 0, s->outputs[s->out]);
        if (st != RN_OK)
            stress_fail(&run->failures, "request %u: set_output_tensor: %s: %s", s->id,
                        rn_status_name(st), rn_last_error());
    }
    /* Sometimes cancel at once, from the starting thread: the kernels are
     * most likely not started yet. Drawn before the start: from then on the
     * slot is the run's callback's. */
    bool cancel_at_once = stress_rand(&s->rng) % 32 == 0;
    if (atomic_exchange(&s->in_flight, 1) != 0)
        stress_fail(&run->failures, "request %u: started while a run was in flight", s->id);
    atomic_fetch_add(&s->starts, 1);
    rn_status st = rn_infer_request_start_async(r);
    if (st != RN_OK) {
        atomic_fetch_sub(&s->starts, 1);
        atomic_store(&s->in_flight, 0);
        stress_fail(&run->failures, "request %u: start_async: %s: %s", s->id, rn_status_name(st),
                    rn_last_error());
        atomic_fetch_add(&run->settled, 1);
        return false;
    }
    if (cancel_at_once) {
        atomic_fetch_add(&run->cancels, 1);
        rn_infer_request_cancel(r);
    }
    return true;
}

/* A RN_OK run's output must be x + y of the inputs it was started with. */
static void check_output(slot *s)
{
    stress_run *run = s->run;
    rn_tensor *out;
    rn_status st = rn_infer_request_get_output_tensor(s->request, 0, &out);
    if (st != RN_OK) {
        stress_fail(&run->failures, "request %u run %u: get_output_tensor: %s: %s", s->id, s->gen,
                    rn_status_name(st), rn_last_error());
        return;
    }
    if (s->user_output && out != s->outputs[s->out]) {
        stress_fail(&run->failures, "request %u run %u: the output is not the tensor set for it",
                    s->id, s->gen);
        return;
    }
    if (rn_tensor_element_count(out) != N_ELEMENTS) {
        stress_fail(&run->failures, "request %u run %u: output has %zu elements", s->id, s->gen,
                    rn_tensor_element_count(out));
        return;
    }
    const float *x = rn_tensor_data(s->inputs[s->set][0]);
    const float *y = rn_tensor_data(s->inputs[s->set][1]);
    float buf[N_ELEMENTS];
    const float *z = output_values(s, out, buf);
    long bad = stress_check_sum(x, y, z, N_ELEMENTS);
    if (bad >= 0)
        stress_fail(&run->failures, "request %u run %u: element %ld is %g, expected %g + %g", s->id,
                    s->gen, bad, z[bad], x[bad], y[bad]);
}

static void on_complete(rn_infer_request *r, rn_status status, void *user_data)
{
    slot *s = user_data;
    stress_run *run = s->run;
    if (r != s->request)
        stress_fail(&run->failures, "request %u: callback with another request's handle", s->id);
    if (atomic_exchange(&s->in_flight, 0) != 1)
        stress_fail(&run->failures, "request %u: completion without a run in flight", s->id);
    long completions = atomic_fetch_add(&s->completions, 1) + 1;
    if (completions > atomic_load(&s->starts))
        stress_fail(&run->failures, "request %u: %ld completions for %ld starts", s->id,
                    completions, atomic_load(&s->starts));
    atomic_store(&s->last_status, (int)status);
    if (status == RN_OK) {
        atomic_fetch_add(&s->ok, 1);
        if (!s->driven)
            check_output(s);
    } else if (status == RN_CANCELLED) {
        atomic_fetch_add(&s->cancelled, 1);
    } else {
        stress_fail(&run->failures, "request %u run %u: status %s: %s", s->id, s->gen,
                    rn_status_name(status), rn_last_error());
    }
    /* Cancels from the callback executor too, of another request. */
    if (stress_rand(&s->callback_rng) % 16 == 0) {
        atomic_fetch_add(&run->cancels, 1);
        rn_infer_request_cancel(run->slots[stress_rand(&s->callback_rng) % N_REQUESTS].request);
    }
    if (!s->driven && take_ticket(run))
        start_next(s);
    atomic_fetch_add(&run->settled, 1);
}

/* A driver thread: owns requests [first, first + count), starts them, and
 * after each completes (wait_for polls, sometimes a blocking wait) checks
 * the run and starts the next while tickets last. */
typedef struct driver {
    stress_run *run;
    int first, count;
    uint64_t rng;
} driver;

/* Checks a completed run of a thread-driven request: wait returns after the
 * callback, with the status the callback received. */
static void driver_check(slot *s, rn_status st)
{
    stress_run *run = s->run;
    if (atomic_load(&s->in_flight) != 0)
        stress_fail(&run->failures, "request %u run %u: wait returned %s before the callback ran",
                    s->id, s->gen, rn_status_name(st));
    if ((int)st != atomic_load(&s->last_status))
        stress_fail(&run->failures, "request %u run %u: wait returned %s, the callback got %s",
                    s->id, s->gen, rn_status_name(st),
                    rn_status_name((rn_status)atomic_load(&s->last_status)));
    if (st == RN_OK)
        check_output(s);
}

static void *drive_requests(void *arg)
{
    driver *d = arg;
    stress_run *run = d->run;
    bool active[N_REQUESTS] = {false};
    int live = 0;
    for (int i = 0; i < d->count; i++)
        if (take_ticket(run) && start_next(&run->slots[d->first + i])) {
            active[i] = true;
            live++;
        }
    while (live > 0) {
        bool progress = false;
        for (int i = 0; i < d->count; i++) {
            slot *s = &run->slots[d->first + i];
            if (!active[i])
                continue;
            rn_status st = stress_rand(&d->rng) % 4 == 0 ? rn_infer_request_wait(s->request)
                                                         : rn_infer_request_wait_for(s->request, 0);
            if (st == RN_RESULT_NOT_READY)
                continue;
            progress = true;
            driver_check(s, st);
            if (stress_rand(&d->rng) % 8 == 0) {
                atomic_fetch_add(&run->cancels, 1);
                rn_infer_request_cancel(run->slots[stress_rand(&d->rng) % N_REQUESTS].request);
            }
            if (!take_ticket(run) || !start_next(s)) {
                active[i] = false;
                live--;
            }
        }
        if (!progress)
            usleep(20);
    }
    return NULL;
}

static void slots_create(stress_run *run, rn_compiled_model *compiled)
{
    int64_t dims[] = {3, 4, 5};
    cr_assert_eq(rn_compiled_model_get_context(compiled, &run->context), RN_OK, "%s",
                 rn_last_error());
    for (uint32_t i = 0; i < N_REQUESTS; i++) {
        slot *s = &run->slots[i];
        *s = (slot){.run = run,
                    .id = i,
                    .rng = 0x9E3779B97F4A7C15ull * (i + 1),
                    .callback_rng = 0xBF58476D1CE4E5B9ull * (i + 1),
                    .driven = i >= N_REQUESTS - N_DRIVEN,
                    .user_output = i % 2 == 1,
                    .remote = i % 4 == 3};
        cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &s->request), RN_OK, "%s",
                     rn_last_error());
        for (int set = 0; set < 2; set++)
            for (int k = 0; k < 2; k++)
                cr_assert_eq(rn_tensor_create(RN_F32, dims, 3, &s->inputs[set][k]), RN_OK);
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(
                rn_infer_request_set_tensor(s->request, run->input_names[k], s->inputs[0][k]),
                RN_OK, "%s", rn_last_error());
            if (s->remote) {
                cr_assert_eq(rn_remote_context_create_tensor(run->context, RN_F32, dims, 3, NULL, 0,
                                                             &s->outputs[k]),
                             RN_OK, "%s", rn_last_error());
                cr_assert_eq(rn_remote_context_create_tensor(run->context, RN_F32, dims, 3, NULL, 0,
                                                             &s->remote_in[k]),
                             RN_OK);
            } else if (s->user_output) {
                cr_assert_eq(rn_tensor_create(RN_F32, dims, 3, &s->outputs[k]), RN_OK);
            }
        }
        cr_assert_eq(rn_infer_request_set_callback(s->request, on_complete, s), RN_OK);
    }
}

static void slots_free(stress_run *run)
{
    for (int i = 0; i < N_REQUESTS; i++) {
        slot *s = &run->slots[i];
        rn_infer_request_free(s->request);
        for (int set = 0; set < 2; set++)
            for (int k = 0; k < 2; k++)
                rn_tensor_free(s->inputs[set][k]);
        rn_tensor_free(s->outputs[0]);
        rn_tensor_free(s->outputs[1]);
        rn_tensor_free(s->remote_in[0]);
        rn_tensor_free(s->remote_in[1]);
    }
    rn_remote_context_free(run->context);
}

/* Prints each request's counters: the diagnosis of a lost completion. */
static void dump_slots(stress_run *run)
{
    for (int i = 0; i < N_REQUESTS; i++) {
        slot *s = &run->slots[i];
        rn_status st = rn_infer_request_wait_for(s->request, 0);
        fprintf(stderr, "  request %2d: starts %ld completions %ld in_flight %d wait_for(0) %s\n",
                i, atomic_load(&s->starts), atomic_load(&s->completions),
                atomic_load(&s->in_flight), rn_status_name(st));
    }
}

/* The process's resident set in KiB (/proc/self/statm), or -1. */
static long rss_kib(void)
{
    long pages_total, pages_resident = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2)
        pages_resident = -1;
    fclose(f);
    return pages_resident < 0 ? -1 : pages_resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* RSS samples over a run: one per 1/RSS_SAMPLES of the runs settled. */
#define RSS_SAMPLES 20
typedef struct rss_curve {
    long settled[RSS_SAMPLES + 1];
    long kib[RSS_SAMPLES + 1];
    int n;
} rss_curve;

static void rss_sample(rss_curve *c, long settled, long runs)
{
    if (c->n <= RSS_SAMPLES && settled >= runs / RSS_SAMPLES * c->n) {
        c->settled[c->n] = settled;
        c->kib[c->n] = rss_kib();
        c->n++;
    }
}

/* The test's thread while the runs go: random cancels and wait_for polls,
 * until every ticket has settled, sampling the RSS. Fails on a completion
 * that never comes. */
static void disturb(stress_run *run, long runs, rss_curve *rss)
{
    uint64_t rng = 0xD1B54A32D192ED03ull;
    long last = -1;
    double last_progress = stress_now_s();
    while (atomic_load(&run->settled) < runs) {
        rss_sample(rss, atomic_load(&run->settled), runs);
        slot *s = &run->slots[stress_rand(&rng) % N_REQUESTS];
        uint32_t what = stress_rand(&rng) % 8;
        if (what < 3) {
            atomic_fetch_add(&run->cancels, 1);
            cr_assert_eq(rn_infer_request_cancel(s->request), RN_OK);
        } else if (what == 3 && !s->driven) {
            rn_status st = rn_infer_request_wait_for(s->request, 0);
            if (st != RN_OK && st != RN_CANCELLED && st != RN_RESULT_NOT_READY)
                stress_fail(&run->failures, "request %u: wait_for(0): %s: %s", s->id,
                            rn_status_name(st), rn_last_error());
        }
        usleep(stress_rand(&rng) % 100);
        long settled = atomic_load(&run->settled);
        double now = stress_now_s();
        if (settled != last) {
            last = settled;
            last_progress = now;
        } else if (now - last_progress > STALL_LIMIT_S) {
            fprintf(stderr, "stress %s: no completion for %.0f s, %ld of %ld runs settled\n",
                    run->device, STALL_LIMIT_S, settled, runs);
            dump_slots(run);
            pthread_mutex_lock(&run->failures.lock);
            fprintf(stderr, "  %ld failures recorded; the first: %s\n",
                    atomic_load(&run->failures.count), run->failures.first);
            pthread_mutex_unlock(&run->failures.lock);
            cr_assert_fail("%s: a completion was lost (%ld of %ld runs settled); see the log",
                           run->device, settled, runs);
        }
    }
}

static void stress_async(const char *device)
{
    char test[64];
    snprintf(test, sizeof test, "async %s", device);
    long runs = stress_runs(test, DEFAULT_RUNS);
    rn_core *core = stress_core(device);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, STRESS_ADD_MODEL, &model), RN_OK, "%s", rn_last_error());
    rn_property props[] = {{"NUM_STREAMS", N_STREAMS}};
    rn_compiled_model *compiled;
    cr_assert_eq(rn_core_compile_model(core, model, device, props, 1, &compiled), RN_OK, "%s",
                 rn_last_error());

    stress_run *run = calloc(1, sizeof *run);
    cr_assert_not_null(run);
    run->device = device;
    stress_failures_init(&run->failures);
    atomic_init(&run->tickets, runs);
    rn_port port;
    for (size_t k = 0; k < 2; k++) {
        cr_assert_eq(rn_compiled_model_input(compiled, k, &port), RN_OK);
        run->input_names[k] = port.name;
    }
    slots_create(run, compiled);

    double t0 = stress_now_s();
    for (int i = 0; i < N_REQUESTS - N_DRIVEN && take_ticket(run); i++)
        start_next(&run->slots[i]);
    driver drivers[N_DRIVERS];
    pthread_t threads[N_DRIVERS];
    for (int k = 0; k < N_DRIVERS; k++) {
        drivers[k] = (driver){.run = run,
                              .first = N_REQUESTS - N_DRIVEN + k * (N_DRIVEN / N_DRIVERS),
                              .count = N_DRIVEN / N_DRIVERS,
                              .rng = 0x94D049BB133111EBull * (k + 1)};
        cr_assert_eq(pthread_create(&threads[k], NULL, drive_requests, &drivers[k]), 0);
    }
    rss_curve rss = {0};
    disturb(run, runs, &rss);
    for (int k = 0; k < N_DRIVERS; k++)
        pthread_join(threads[k], NULL);
    long starts = 0, completions = 0, ok = 0, cancelled = 0, by_threads = 0;
    for (int i = 0; i < N_REQUESTS; i++) {
        slot *s = &run->slots[i];
        if (s->driven)
            by_threads += atomic_load(&s->completions);
        rn_status st = rn_infer_request_wait(s->request);
        cr_expect(st == RN_OK || st == RN_CANCELLED, "request %d: final wait: %s: %s", i,
                  rn_status_name(st), rn_last_error());
        cr_expect_eq(atomic_load(&s->in_flight), 0, "request %d: a run is still in flight", i);
        cr_expect_eq(atomic_load(&s->starts), atomic_load(&s->completions),
                     "request %d: %ld starts, %ld completions", i, atomic_load(&s->starts),
                     atomic_load(&s->completions));
        cr_expect_eq(atomic_load(&s->ok) + atomic_load(&s->cancelled),
                     atomic_load(&s->completions));
        starts += atomic_load(&s->starts);
        completions += atomic_load(&s->completions);
        ok += atomic_load(&s->ok);
        cancelled += atomic_load(&s->cancelled);
    }
    double seconds = stress_now_s() - t0;
    fprintf(stderr,
            "stress %s: %ld starts, %ld completions (%ld OK, %ld CANCELLED; %ld driven by "
            "threads, the rest by callbacks; %ld cancels issued) in %.1f s, %.0f runs/s\n",
            test, starts, completions, ok, cancelled, by_threads, atomic_load(&run->cancels),
            seconds, (double)completions / seconds);
    rss_sample(&rss, completions, runs);
    fprintf(stderr, "stress %s: RSS (KiB) by runs settled:", test);
    for (int i = 0; i < rss.n; i++)
        fprintf(stderr, " %ld:%ld", rss.settled[i], rss.kib[i]);
    fprintf(stderr, "\n");
#ifdef STRESS_SOAK
    /* Flat: from a fifth of the run (warm: every request, stream and kernel
     * cache made) to the end, the RSS grows by at most 10% + 4 MiB. */
    long warm = rss.kib[RSS_SAMPLES / 5], last_kib = rss.kib[rss.n - 1];
    cr_expect(warm > 0 && last_kib <= warm + warm / 10 + 4096,
              "%s: RSS grew from %ld KiB (after %ld runs) to %ld KiB", test, warm,
              rss.settled[RSS_SAMPLES / 5], last_kib);
#endif
    stress_assert_no_failures(&run->failures);
    cr_assert_eq(starts, runs, "every ticket was started");
    cr_assert_eq(completions, runs, "every start completed once");
    if (runs >= 1000) {
        cr_assert_gt(ok, 0, "some runs completed");
        cr_assert_gt(cancelled, 0, "some runs were cancelled");
    }

    /* The requests still work: a sync run and an async one each. */
    for (int i = 0; i < N_REQUESTS; i++) {
        slot *s = &run->slots[i];
        cr_assert_eq(rn_infer_request_set_callback(s->request, NULL, NULL), RN_OK);
        stress_fill_inputs(rn_tensor_data(s->inputs[s->set][0]),
                           rn_tensor_data(s->inputs[s->set][1]), N_ELEMENTS, s->id, 123456);
        sync_remote_inputs(s);
        for (int mode = 0; mode < 2; mode++) {
            if (mode == 0) {
                cr_assert_eq(rn_infer_request_infer(s->request), RN_OK, "%s", rn_last_error());
            } else {
                cr_assert_eq(rn_infer_request_start_async(s->request), RN_OK, "%s",
                             rn_last_error());
                cr_assert_eq(rn_infer_request_wait(s->request), RN_OK, "%s", rn_last_error());
            }
            rn_tensor *out;
            cr_assert_eq(rn_infer_request_get_output_tensor(s->request, 0, &out), RN_OK);
            float buf[N_ELEMENTS];
            long bad = stress_check_sum(rn_tensor_data(s->inputs[s->set][0]),
                                        rn_tensor_data(s->inputs[s->set][1]),
                                        output_values(s, out, buf), N_ELEMENTS);
            cr_assert_eq(bad, -1, "request %d after the stress: element %ld is wrong", i, bad);
        }
    }
    slots_free(run);
    free(run);
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
}

Test(async_stress, ref_restarts_cancels_and_set_tensor, .timeout = TIMEOUT_S)
{
    stress_async("REF");
}

Test(async_stress, slowdev_restarts_cancels_and_set_tensor, .timeout = TIMEOUT_S)
{
    stress_async("SLOWDEV");
}
