/* Criterion's main, except that a binary in which no test ran fails.
 *
 * Criterion 2.4 exits 0 when it finds no test at all (a file whose tests
 * were compiled out, a target that lists the wrong source), which would
 * pass in CI without checking anything. A test that ran and skipped, saying
 * why, still counts as run. Linked into every test binary through
 * //third_party/criterion. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>

static size_t tests_run;

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
    tests_run = stats->nb_tests; /* skipped ones included */
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
