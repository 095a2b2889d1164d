/* Criterion's main, except that a binary in which no test ran fails.
 *
 * Criterion 2.4 exits 0 when it finds no test at all (a file whose tests
 * were compiled out, a target that lists the wrong source), which would
 * pass in CI without checking anything. A test that ran and skipped, saying
 * why, still counts as run. Linked into every test binary through
 * //third_party/criterion.
 *
 * It also prints what Criterion's own summary leaves out (scripts/test reads
 * both lines): each skipped test with its reason ("[SKIP] suite::test: why",
 * which Criterion prints only with --verbose), and one line
 * "[====] runnel: N passed, N failed, N skipped" where failed includes the
 * crashed tests once ("Synthesis: ... Failing" counts them already, and
 * "Crashing" again) and skipped is the count "Synthesis: Tested" leaves out. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>

static size_t tests_run;

ReportHook(POST_TEST)(struct criterion_test_stats *stats)
{
    if (stats->test_status == CR_STATUS_SKIPPED)
        fprintf(stderr, "[SKIP] %s::%s: %s\n", stats->test->category, stats->test->name,
                stats->message != NULL && stats->message[0] ? stats->message : "(no reason given)");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    tests_run = stats->nb_tests; /* skipped ones included */
    fprintf(stderr, "[====] runnel: %zu passed, %zu failed, %zu skipped\n", stats->tests_passed,
            stats->tests_failed, stats->tests_skipped);
}

/* Exported: BoxFort starts each test's worker through the executable's
 * `main` (looked up by name), which must be this one, not libcriterion's. */
__attribute__((visibility("default"))) int main(int argc, char *argv[])
{
    struct criterion_test_set *tests = criterion_initialize();
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) {
        result = !criterion_run_all_tests(tests);
        if (tests_run == 0) {
            fprintf(stderr, "%s: no test ran\n", argv[0]);
            result = 1;
        }
    }
    criterion_finalize(tests);
    return result;
}
