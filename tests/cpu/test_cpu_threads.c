/* Which threads the CPU device's OpenMP teams live on (docs/cpu.md, "Threads
 * and streams"). libgomp spins in a team's barriers only while the process
 * has no more OpenMP threads than cores (it counts every master thread's
 * pool); past that every fork and join of every team in the process goes
 * through futex waits, which made async requests under LATENCY (the stream
 * worker's team) 1.3-3.8x slower than sync ones (the caller's team), issue
 * 30. So:
 *   - compiling leaves no OpenMP thread behind on the compiling (user's)
 *     thread: weight conversions run on one thread there, and a pool that
 *     creating a primitive forked is released;
 *   - an async run under LATENCY runs its primitives on the stream worker's
 *     team only (its threads are named rn-s0t1, ...), and starts no thread
 *     for the caller;
 *   - a sync run uses the caller's thread and its team, never the worker's.
 * The threads are read from /proc/self/task: a thread named as the process
 * (other than the test's own) is a libgomp pool thread of the caller. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* SqueezeNet's compile converts weights (reorders); ShuffleNet's also
 * creates primitives that fork a team while being created (and, since the
 * team sizing by work, split epilogues and conversions of either team
 * size); Inception-v2's has branches, Concat and BatchNormalization, and
 * is the model of issue 30's quiet async/sync report (bench/latency). */
static const char *const models[] = {
    ".cache/onnx-1.22.0/light/light_squeezenet.onnx",
    ".cache/onnx-1.22.0/light/light_shufflenet.onnx",
    ".cache/onnx-1.22.0/light/light_inception_v2.onnx",
};

typedef cpu_testing_census census;

static census take_census(void)
{
    return cpu_testing_take_census();
}

/* The OpenMP team of LATENCY's one stream: INFERENCE_NUM_THREADS. */
static int team_size(const cpu_testing_compiled *c)
{
    char streams[32], threads[32];
    OK(rn_compiled_model_get_property(c->cm, "NUM_STREAMS", streams, sizeof streams));
    OK(rn_compiled_model_get_property(c->cm, "INFERENCE_NUM_THREADS", threads, sizeof threads));
    cr_assert_eq(atoi(streams), 1, "LATENCY has one stream, got %s", streams);
    return atoi(threads);
}

/* Compiles the model under LATENCY (no OpenMP thread may appear), then runs
 * `async_runs` async requests (only the stream worker's team may appear). */
static void check_compile_then_async(const char *model, int async_runs)
{
    census before = take_census();
    cpu_testing_compiled c = {0};
    cpu_testing_compile_latency(model, &c);
    census after = take_census();
    cr_expect_eq(after.caller_team, before.caller_team,
                 "%s: compiling left %d OpenMP thread(s) on the compiling thread", model,
                 after.caller_team - before.caller_team);
    cr_expect_eq(after.worker_team, 0, "%s: compiling started the stream worker's team", model);
    if (async_runs > 0) {
        OK(rn_compiled_model_create_infer_request(c.cm, &c.rq));
        for (int i = 0; i < async_runs; i++) {
            OK(rn_infer_request_start_async(c.rq));
            OK(rn_infer_request_wait(c.rq));
        }
        after = take_census();
        cr_expect_eq(after.caller_team, before.caller_team,
                     "%s: async runs left %d OpenMP thread(s) on the caller's thread", model,
                     after.caller_team - before.caller_team);
        cr_expect_eq(after.worker_team, team_size(&c) - 1,
                     "%s: the stream worker's team has %d thread(s) besides the worker, "
                     "INFERENCE_NUM_THREADS is %d",
                     model, after.worker_team, team_size(&c));
    }
    cpu_testing_free(&c);
}

Test(cpu_threads, compiling_leaves_no_openmp_thread_on_the_caller)
{
    cpu_testing_skip_without_teams();
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        check_compile_then_async(models[m], 0);
}

Test(cpu_threads, async_latency_runs_on_the_stream_workers_team_only)
{
    cpu_testing_skip_without_teams();
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        check_compile_then_async(models[m], 4);
}

Test(cpu_threads, sync_runs_on_the_callers_team_only)
{
    cpu_testing_skip_without_teams();
    census before = take_census();
    cpu_testing_compiled c = {0};
    cpu_testing_compile_latency(models[0], &c);
    OK(rn_compiled_model_create_infer_request(c.cm, &c.rq));
    for (int i = 0; i < 4; i++)
        OK(rn_infer_request_infer(c.rq));
    census after = take_census();
    cr_expect_eq(after.worker_team, 0, "a sync run started the stream worker's team");
    cr_expect_eq(after.caller_team - before.caller_team, team_size(&c) - 1,
                 "the caller's team has %d thread(s) besides the caller, INFERENCE_NUM_THREADS "
                 "is %d",
                 after.caller_team - before.caller_team, team_size(&c));
    cpu_testing_free(&c);
}
