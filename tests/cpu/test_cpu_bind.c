/* CPU_BIND_THREAD on the CPU device: the property (YES / NO / NUMA, and
 * OpenVINO's ENABLE_CPU_PINNING) is validated and read back; with YES each
 * stream's worker pins itself to one core of the process's affinity mask
 * (THROUGHPUT: one core per stream, different streams different cores
 * where there are enough), LATENCY's OpenMP team one core per thread; NO
 * pins nothing. What each thread's mask is after pinning is read back by
 * that thread with sched_getaffinity, inside the run, and reported by the
 * device's debug property CPU_PINNED_THREADS (plugins/cpu/bind.h). */
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "runnel/runnel.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

#define MODEL "tests/cpu/conv_relu_transpose.onnx"

/* Compiles the test model on CPU with the properties, runs `requests`
 * requests at once `rounds` times; returns the compiled model (and core,
 * model to free). */
static rn_compiled_model *run_model(const rn_property *p, size_t n, int requests, rn_core **core,
                                    rn_model **model)
{
    OK(rn_core_create(core));
    OK(rn_core_read_model(*core, MODEL, model));
    rn_compiled_model *cm;
    OK(rn_core_compile_model(*core, *model, "CPU", p, n, &cm));
    rn_infer_request *r[4];
    for (int i = 0; i < requests; i++)
        OK(rn_compiled_model_create_infer_request(cm, &r[i]));
    for (int round = 0; round < 8; round++) {
        for (int i = 0; i < requests; i++)
            OK(rn_infer_request_start_async(r[i]));
        for (int i = 0; i < requests; i++)
            OK(rn_infer_request_wait(r[i]));
    }
    for (int i = 0; i < requests; i++)
        rn_infer_request_free(r[i]);
    return cm;
}

typedef struct pinned {
    int n_cpus, first_cpu;
    bool worker;
} pinned;

/* CPU_PINNED_THREADS parsed: "worker:CPU:N team:CPU:N ...". */
static int pinned_threads(rn_core *core, pinned *out, int max)
{
    static char buf[8192];
    OK(rn_core_get_property(core, "CPU", "CPU_PINNED_THREADS", buf, sizeof buf));
    int n = 0;
    for (char *tok = strtok(buf, " "); tok != NULL; tok = strtok(NULL, " ")) {
        char kind[16];
        cr_assert_lt(n, max);
        cr_assert_eq(sscanf(tok, "%15[a-z]:%d:%d", kind, &out[n].first_cpu, &out[n].n_cpus), 3,
                     "entry '%s'", tok);
        out[n].worker = strcmp(kind, "worker") == 0;
        n++;
    }
    return n;
}

static void free_all(rn_compiled_model *cm, rn_model *model, rn_core *core)
{
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

static bool allowed(int cpu)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    return cpu >= 0 && CPU_ISSET(cpu, &set);
}

static int allowed_count(void)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    return CPU_COUNT(&set);
}

Test(cpu_bind, property_values_are_checked_and_read_back)
{
    rn_core *core;
    OK(rn_core_create(&core));
    char buf[32];
    OK(rn_core_get_property(core, "CPU", "CPU_BIND_THREAD", buf, sizeof buf));
    cr_assert_str_eq(buf, "NO");
    const char *values[] = {"YES", "NUMA", "NO"};
    for (int i = 0; i < 3; i++) {
        rn_property p = {"CPU_BIND_THREAD", values[i]};
        OK(rn_core_set_property(core, "CPU", &p, 1));
        OK(rn_core_get_property(core, "CPU", "CPU_BIND_THREAD", buf, sizeof buf));
        cr_assert_str_eq(buf, values[i]);
    }
    rn_property pin = {"ENABLE_CPU_PINNING", "YES"};
    OK(rn_core_set_property(core, "CPU", &pin, 1));
    OK(rn_core_get_property(core, "CPU", "CPU_BIND_THREAD", buf, sizeof buf));
    cr_assert_str_eq(buf, "YES");
    rn_property bad = {"CPU_BIND_THREAD", "HYBRID_SOMETIMES"};
    cr_assert_eq(rn_core_set_property(core, "CPU", &bad, 1), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "HYBRID_SOMETIMES") != NULL, "%s", rn_last_error());
    OK(rn_core_get_property(core, "CPU", "CPU_BIND_THREAD", buf, sizeof buf));
    cr_assert_str_eq(buf, "YES", "a refused value changed the property");
    rn_core_free(core);

    /* On a compiled model, read back as compiled. */
    rn_model *model;
    rn_property p[] = {{"CPU_BIND_THREAD", "NUMA"}, {"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cm = run_model(p, 2, 1, &core, &model);
    OK(rn_compiled_model_get_property(cm, "CPU_BIND_THREAD", buf, sizeof buf));
    cr_assert_str_eq(buf, "NUMA");
    free_all(cm, model, core);
}

Test(cpu_bind, throughput_streams_pin_their_worker_to_one_core)
{
    rn_core *core;
    rn_model *model;
    rn_property p[] = {{"CPU_BIND_THREAD", "YES"},
                       {"PERFORMANCE_HINT", "THROUGHPUT"},
                       {"NUM_STREAMS", "2"},
                       {"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cm = run_model(p, 4, 2, &core, &model);
    pinned r[8];
    int n = pinned_threads(core, r, 8);
    cr_assert(n >= 1 && n <= 2, "%d threads pinned by 2 single-core streams", n);
    for (int i = 0; i < n; i++) {
        cr_assert(r[i].worker);
        cr_assert_eq(r[i].n_cpus, 1, "worker %d's mask holds %d cores", i, r[i].n_cpus);
        cr_assert(allowed(r[i].first_cpu), "core %d is outside the process's mask", r[i].first_cpu);
    }
    if (n == 2 && allowed_count() >= 2)
        cr_assert_neq(r[0].first_cpu, r[1].first_cpu, "both streams on core %d", r[0].first_cpu);
    free_all(cm, model, core);
}

Test(cpu_bind, latency_team_gets_one_core_per_thread)
{
    rn_core *core;
    rn_model *model;
    rn_property p[] = {{"CPU_BIND_THREAD", "YES"},
                       {"PERFORMANCE_HINT", "LATENCY"},
                       {"INFERENCE_PRECISION_HINT", "f32"}};
    int before = allowed_count();
    rn_compiled_model *cm = run_model(p, 3, 1, &core, &model);
    /* A sync request too: the stream's worker runs it, not the caller. */
    rn_infer_request *req;
    OK(rn_compiled_model_create_infer_request(cm, &req));
    OK(rn_infer_request_infer(req));
    rn_infer_request_free(req);
    cr_assert_eq(allowed_count(), before, "the caller's thread was pinned");
    pinned r[64];
    int n = pinned_threads(core, r, 64);
    cr_assert_geq(n, 1);
    int workers = 0;
    cpu_set_t seen;
    CPU_ZERO(&seen);
    for (int i = 0; i < n; i++) {
        workers += r[i].worker;
        cr_assert_eq(r[i].n_cpus, 1, "thread %d's mask holds %d cores", i, r[i].n_cpus);
        cr_assert(allowed(r[i].first_cpu));
        cr_assert(!CPU_ISSET(r[i].first_cpu, &seen), "two threads on core %d", r[i].first_cpu);
        CPU_SET(r[i].first_cpu, &seen);
    }
    cr_assert_eq(workers, 1, "one stream, one worker");
    cr_assert_leq(n, allowed_count(), "more threads pinned than cores");
    free_all(cm, model, core);
}

Test(cpu_bind, no_pins_nothing)
{
    rn_core *core;
    rn_model *model;
    rn_property p[] = {{"CPU_BIND_THREAD", "NO"}, {"INFERENCE_PRECISION_HINT", "f32"}};
    rn_compiled_model *cm = run_model(p, 2, 2, &core, &model);
    pinned r[4];
    cr_assert_eq(pinned_threads(core, r, 4), 0);
    free_all(cm, model, core);
}
