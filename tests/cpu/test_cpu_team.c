/* Which primitives of a LATENCY run get the stream's OpenMP team and which
 * run on its worker alone (plugins/cpu/team.c): one rule by the work, for
 * a node's primitives, the plan's layout conversions (reorders) and a gemm
 * convolution's split epilogue alike. A team's fork and join costs more
 * than a small primitive gains from a second thread (bench/LOG.md, "Team
 * size by the work for reorders and epilogues"), so ShuffleNet's small
 * conversions and epilogues run on one thread, while its first
 * convolutions and its 1x136x28x28 conversions keep the team. The
 * runtime is linked statically to read team.c's census of the copy the
 * Core runs. Needs teams: not under ThreadSanitizer, not on one CPU (said
 * by the skip). */
#include <criterion/criterion.h>

#include "plugins/cpu/team.h"
#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* The census of one inference of the light model under LATENCY, after a
 * first one (which may convert weights): sync (in this thread, which
 * compiled it) or started async (on the stream's worker). */
static cpu_team_census one_run(const char *name, bool async)
{
    char path[512];
    cpu_testing_compiled c = {0};
    cpu_testing_compile_latency(cpu_testing_light(name, path, sizeof path), &c);
    c.rq = cpu_testing_infer(c.cm);
    cpu_team_census before = cpu_team_census_read();
    if (async) {
        OK(rn_infer_request_start_async(c.rq));
        OK(rn_infer_request_wait(c.rq));
    } else {
        OK(rn_infer_request_infer(c.rq));
    }
    cpu_team_census after = cpu_team_census_read();
    cpu_testing_free(&c);
    for (int k = 0; k < 3; k++) {
        after.alone[k] -= before.alone[k];
        after.team[k] -= before.team[k];
    }
    return after;
}

static cpu_team_census one_inference(const char *name)
{
    return one_run(name, false);
}

/* Where ShuffleNet has more than one run of `kind`, some run alone; one
 * (a large one, on the team) or none leaves nothing to check. */
static void expect_small_alone(const cpu_team_census *c, cpu_team_kind kind, const char *what)
{
    long long all = c->alone[kind] + c->team[kind];
    if (all > 1)
        cr_expect_gt(c->alone[kind], 0, "ShuffleNet's %ss: %lld on one thread, %lld on the team",
                     what, c->alone[kind], c->team[kind]);
    else
        cr_log_info("ShuffleNet has %lld %s(s): none small to run alone", all, what);
}

Test(cpu_team, small_conversions_and_epilogues_run_on_the_worker_alone, .timeout = 120)
{
    cpu_testing_skip_without_teams();
    cpu_team_census c = one_inference("shufflenet");
    cr_log_info("ShuffleNet, one inference: primitives %lld alone / %lld on the team, conversions "
                "%lld / %lld, epilogues %lld / %lld",
                c.alone[CPU_TEAM_PRIMITIVE], c.team[CPU_TEAM_PRIMITIVE], c.alone[CPU_TEAM_REORDER],
                c.team[CPU_TEAM_REORDER], c.alone[CPU_TEAM_EPILOGUE], c.team[CPU_TEAM_EPILOGUE]);
    /* Small conversions: 2.6's on AVX2 (its Concats' blocked parts); on
     * AVX-512 in f32 ShuffleNet converts once (1x136x28x28, on the team),
     * its channels-last Concats being the device's own copy (nn.c). */
    expect_small_alone(&c, CPU_TEAM_REORDER, "layout conversion");
    /* Split epilogues: oneDNN 2.6's gemm grouped convolutions' (32, most
     * small); 3.x's brgemm ones keep their post-ops, leaving the first
     * convolution's one (large: on the team), so none to run alone. */
    expect_small_alone(&c, CPU_TEAM_EPILOGUE, "split epilogue");
    cr_expect_gt(c.alone[CPU_TEAM_PRIMITIVE], 0, "ShuffleNet's small nodes on one thread");
    cr_expect_gt(c.team[CPU_TEAM_PRIMITIVE], 0,
                 "ShuffleNet's first convolutions (over 2^20 multiply-adds) on the team");
}

Test(cpu_team, large_conversions_keep_the_team, .timeout = 120)
{
    cpu_testing_skip_without_teams();
    cpu_team_census c = one_inference("shufflenet");
    cr_expect_gt(c.team[CPU_TEAM_REORDER], 0,
                 "ShuffleNet's 1x136x28x28 conversions (106624 elements, over 2^16): %lld on "
                 "one thread, %lld on the team",
                 c.alone[CPU_TEAM_REORDER], c.team[CPU_TEAM_REORDER]);
}

/* The same on the stream's worker (start_async): a run's conversions take
 * the compiled model's team, not the worker thread's own configuration,
 * which never had the compiling thread's (one thread: SqueezeNet's bf16
 * input conversion then took 48 us async against 25 sync on a Zen 5). */
Test(cpu_team, large_conversions_keep_the_team_on_the_stream_worker, .timeout = 120)
{
    cpu_testing_skip_without_teams();
    cpu_team_census c = one_run("shufflenet", true);
    cr_expect_gt(c.team[CPU_TEAM_REORDER], 0,
                 "ShuffleNet's 1x136x28x28 conversions started async: %lld on one thread, %lld "
                 "on the team",
                 c.alone[CPU_TEAM_REORDER], c.team[CPU_TEAM_REORDER]);
}
