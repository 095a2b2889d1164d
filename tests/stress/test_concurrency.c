/* Concurrent use of the public API from many threads at once, on REF, with
 * test_add (each run's output is checked: x + y):
 *   - 8 threads compiling the same model of one core at once, each running
 *     what it compiled;
 *   - 8 threads each creating a core, compiling, running and freeing it all,
 *     freeing the core before or after its compiled model;
 *   - properties of the core, of REF and of a compiled model set from one
 *     thread while 4 others run requests and another compiles.
 * Every call returns RN_OK or an error with a message; every run's output
 * is right. Tagged "concurrent": CI also runs it under TSan, which checks
 * that nothing races. */
#include <unistd.h>

#include "tests/stress/stress.h"

#define N_THREADS  8
#define N_ELEMENTS 60 /* test_add: x, y and sum are 3x4x5 */

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ROUNDS 3
#else
#define ROUNDS 10
#endif

typedef struct shared {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
    atomic_bool stop;
    atomic_long runs;
    stress_failures failures;
} shared;

typedef struct worker {
    shared *sh;
    uint32_t id;
    pthread_t thread;
} worker;

/* One run of test_add on a request: inputs from (id, gen), output checked. */
static bool run_and_check(shared *sh, rn_compiled_model *compiled, rn_infer_request *r, uint32_t id,
                          uint32_t gen)
{
    int64_t dims[] = {3, 4, 5};
    float x[N_ELEMENTS], y[N_ELEMENTS];
    stress_fill_inputs(x, y, N_ELEMENTS, id, gen);
    rn_tensor *tx = NULL, *ty = NULL, *out = NULL;
    rn_status st = rn_tensor_wrap(RN_F32, dims, 3, x, sizeof x, &tx);
    if (st == RN_OK)
        st = rn_tensor_wrap(RN_F32, dims, 3, y, sizeof y, &ty);
    if (st == RN_OK)
        st = rn_infer_request_set_input_tensor(r, 0, tx);
    if (st == RN_OK)
        st = rn_infer_request_set_input_tensor(r, 1, ty);
    if (st == RN_OK)
        st = gen % 2 ? rn_infer_request_infer(r) : rn_infer_request_start_async(r);
    if (st == RN_OK && gen % 2 == 0)
        st = rn_infer_request_wait(r);
    if (st == RN_OK)
        st = rn_infer_request_get_output_tensor(r, 0, &out);
    bool ok = st == RN_OK;
    if (!ok)
        stress_fail(&sh->failures, "thread %u, run %u: %s: %s", id, gen, rn_status_name(st),
                    rn_last_error());
    else if (stress_check_sum(x, y, rn_tensor_data(out), N_ELEMENTS) != -1) {
        stress_fail(&sh->failures, "thread %u, run %u: wrong sum", id, gen);
        ok = false;
    }
    (void)compiled;
    rn_tensor_free(tx);
    rn_tensor_free(ty);
    atomic_fetch_add(&sh->runs, 1);
    return ok;
}

/* Compiles sh->model on sh->core, runs it twice, frees it; ROUNDS times. */
static void *compile_same_model(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        rn_compiled_model *compiled;
        rn_infer_request *r;
        rn_status st = rn_core_compile_model(sh->core, sh->model, "REF", NULL, 0, &compiled);
        if (st != RN_OK) {
            stress_fail(&sh->failures, "thread %u: compile: %s: %s", w->id, rn_status_name(st),
                        rn_last_error());
            return NULL;
        }
        st = rn_compiled_model_create_infer_request(compiled, &r);
        if (st == RN_OK) {
            run_and_check(sh, compiled, r, w->id, round * 2);
            run_and_check(sh, compiled, r, w->id, round * 2 + 1);
            rn_infer_request_free(r);
        } else {
            stress_fail(&sh->failures, "thread %u: create_infer_request: %s", w->id,
                        rn_last_error());
        }
        rn_compiled_model_free(compiled);
    }
    return NULL;
}

/* Everything from a core of its own, freed in an order that changes. */
static void *own_core(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        rn_core *core = NULL;
        rn_model *model = NULL;
        rn_compiled_model *compiled = NULL;
        rn_infer_request *r = NULL;
        rn_status st = rn_core_create(&core);
        if (st == RN_OK)
            st = rn_core_read_model(core, STRESS_ADD_MODEL, &model);
        if (st == RN_OK)
            st = rn_core_compile_model(core, model, "REF", NULL, 0, &compiled);
        if (st == RN_OK)
            st = rn_compiled_model_create_infer_request(compiled, &r);
        if (st != RN_OK)
            stress_fail(&sh->failures, "thread %u, round %u: %s: %s", w->id, round,
                        rn_status_name(st), rn_last_error());
        else
            run_and_check(sh, compiled, r, w->id, round);
        rn_model_free(model);
        if (round % 2) { /* the core first: the compiled model keeps it alive */
            rn_core_free(core);
            rn_infer_request_free(r);
            rn_compiled_model_free(compiled);
        } else {
            rn_compiled_model_free(compiled); /* the request keeps it alive */
            rn_infer_request_free(r);
            rn_core_free(core);
        }
    }
    return NULL;
}

/* Runs sh->compiled until told to stop. */
static void *run_until_stopped(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    rn_infer_request *r;
    rn_status st = rn_compiled_model_create_infer_request(sh->compiled, &r);
    if (st != RN_OK) {
        stress_fail(&sh->failures, "thread %u: create_infer_request: %s", w->id, rn_last_error());
        return NULL;
    }
    for (uint32_t gen = 0; !atomic_load(&sh->stop); gen++)
        if (!run_and_check(sh, sh->compiled, r, w->id, gen))
            break;
    rn_infer_request_free(r);
    return NULL;
}

static void start_workers(shared *sh, worker *w, int n, void *(*fn)(void *))
{
    for (int i = 0; i < n; i++) {
        w[i] = (worker){.sh = sh, .id = (uint32_t)i};
        cr_assert_eq(pthread_create(&w[i].thread, NULL, fn, &w[i]), 0);
    }
}

static void join_workers(worker *w, int n)
{
    for (int i = 0; i < n; i++)
        pthread_join(w[i].thread, NULL);
}

static void shared_init(shared *sh)
{
    memset(sh, 0, sizeof *sh);
    stress_failures_init(&sh->failures);
    cr_assert_eq(rn_core_create(&sh->core), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_read_model(sh->core, STRESS_ADD_MODEL, &sh->model), RN_OK, "%s",
                 rn_last_error());
}

static void shared_fini(shared *sh)
{
    stress_assert_no_failures(&sh->failures);
    rn_compiled_model_free(sh->compiled);
    rn_model_free(sh->model);
    rn_core_free(sh->core);
}

Test(concurrency, compile_same_model_from_8_threads, .timeout = 300)
{
    shared sh;
    shared_init(&sh);
    worker w[N_THREADS];
    start_workers(&sh, w, N_THREADS, compile_same_model);
    join_workers(w, N_THREADS);
    cr_expect_eq(atomic_load(&sh.runs), N_THREADS * ROUNDS * 2, "every compiled model ran twice");
    shared_fini(&sh);
}

Test(concurrency, cores_created_and_freed_concurrently, .timeout = 300)
{
    shared sh;
    memset(&sh, 0, sizeof sh);
    stress_failures_init(&sh.failures);
    worker w[N_THREADS];
    start_workers(&sh, w, N_THREADS, own_core);
    join_workers(w, N_THREADS);
    cr_expect_eq(atomic_load(&sh.runs), N_THREADS * ROUNDS, "every core's model ran");
    stress_assert_no_failures(&sh.failures);
}

/* A set_property call either applies or says why not. */
static void expect_set(const char *what, rn_status st)
{
    const char *message = rn_last_error();
    cr_expect(st == RN_OK || (message != NULL && message[0] != '\0'), "%s: %s without a message",
              what, rn_status_name(st));
}

Test(concurrency, properties_set_while_requests_run, .timeout = 300)
{
    shared sh;
    shared_init(&sh);
    rn_property streams[] = {{"NUM_STREAMS", "2"}};
    cr_assert_eq(rn_core_compile_model(sh.core, sh.model, "REF", streams, 1, &sh.compiled), RN_OK,
                 "%s", rn_last_error());
    char cache[] = "/tmp/runnel-concurrency-XXXXXX";
    cr_assert_not_null(mkdtemp(cache));
    worker w[4];
    start_workers(&sh, w, 4, run_until_stopped);
    const char *hints[] = {"LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"};
    for (int i = 0; i < ROUNDS * 10; i++) {
        rn_property hint[] = {{"PERFORMANCE_HINT", hints[i % 3]}};
        expect_set("REF PERFORMANCE_HINT", rn_core_set_property(sh.core, "REF", hint, 1));
        rn_property dir[] = {{"CACHE_DIR", i % 2 ? cache : ""}};
        expect_set("CACHE_DIR", rn_core_set_property(sh.core, NULL, dir, 1));
        rn_property requests[] = {{"PERFORMANCE_HINT_NUM_REQUESTS", i % 2 ? "4" : "1"}};
        expect_set("compiled PERFORMANCE_HINT_NUM_REQUESTS",
                   rn_compiled_model_set_property(sh.compiled, requests, 1));
        /* A compile in the middle reads the properties being set. */
        rn_compiled_model *other;
        rn_status st = rn_core_compile_model(sh.core, sh.model, "REF", NULL, 0, &other);
        cr_expect_eq(st, RN_OK, "compile while properties change: %s", rn_last_error());
        rn_compiled_model_free(other);
    }
    atomic_store(&sh.stop, true);
    join_workers(w, 4);
    cr_expect_gt(atomic_load(&sh.runs), 0, "the requests ran");
    shared_fini(&sh);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
    cr_expect_eq(system(cmd), 0);
}
