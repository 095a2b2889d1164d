/* The pieces bench is built from, tested directly: percentiles, bounded
 * sample sets, shape flags and the JSON writer. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tools/tool_util.h"
#include "tools/bench_json.h"
#include "tools/bench_shape.h"
#include "tools/bench_stats.h"

Test(bench_stats, percentiles_interpolate_between_ranks)
{
    const double v[] = {1, 2, 3, 4};
    cr_expect_float_eq(bench_percentile(v, 4, 50), 2.5, 1e-12);
    cr_expect_float_eq(bench_percentile(v, 4, 0), 1, 1e-12);
    cr_expect_float_eq(bench_percentile(v, 4, 100), 4, 1e-12);
    cr_expect_float_eq(bench_percentile(v, 4, 90), 3.7, 1e-12);
    const double odd[] = {10, 20, 30};
    cr_expect_float_eq(bench_percentile(odd, 3, 50), 20, 1e-12);
    cr_expect_eq(bench_percentile(odd, 0, 50), 0);
}

Test(bench_stats, latency_statistics_of_known_samples)
{
    bench_samples s;
    bench_samples_init(&s, 1000);
    /* Latencies 1..100 ms, added in reverse. */
    for (int i = 100; i >= 1; i--)
        cr_assert_eq(bench_samples_add(&s, (double)(100 - i), (double)i), 0);
    bench_latency l;
    cr_assert_eq(bench_latency_compute(&s, &l), 0);
    cr_expect_eq(l.count, 100);
    cr_expect_float_eq(l.min, 1, 1e-12);
    cr_expect_float_eq(l.max, 100, 1e-12);
    cr_expect_float_eq(l.average, 50.5, 1e-12);
    cr_expect_float_eq(l.median, 50.5, 1e-12);
    cr_expect_float_eq(l.p90, 90.1, 1e-9);
    cr_expect_float_eq(l.p99, 99.01, 1e-9);
    /* The last one started at 99 and took 1 ms. */
    cr_expect_float_eq(s.end_ms, 100, 1e-12);
    bench_samples_free(&s);
}

Test(bench_stats, a_full_set_keeps_every_other_sample_and_exact_totals)
{
    bench_samples s;
    bench_samples_init(&s, 8);
    for (int i = 0; i < 100; i++)
        bench_samples_add(&s, (double)i, (double)i);
    cr_expect_eq(s.count, 100);
    cr_expect_leq(s.n, 8);
    cr_expect_gt(s.stride, 1);
    /* The kept samples are exactly those whose index is a multiple of the
     * stride: spread evenly over the run. */
    for (size_t k = 0; k < s.n; k++)
        cr_expect_float_eq(s.items[k].start_ms, (double)(k * s.stride), 1e-12);
    bench_latency l;
    bench_latency_compute(&s, &l);
    cr_expect_eq(l.count, 100);
    cr_expect_float_eq(l.min, 0, 1e-12);
    cr_expect_float_eq(l.max, 99, 1e-12);
    cr_expect_float_eq(l.average, 49.5, 1e-12);
    bench_samples_free(&s);
}

Test(bench_stats, merging_requests_orders_samples_by_start)
{
    bench_samples parts[2], all;
    bench_samples_init(&parts[0], 100);
    bench_samples_init(&parts[1], 100);
    bench_samples_add(&parts[0], 0, 5);
    bench_samples_add(&parts[0], 10, 7);
    bench_samples_add(&parts[1], 4, 1);
    bench_samples_init(&all, 2); /* replaced by the merge */
    bench_samples_free(&all);
    cr_assert_eq(bench_samples_merge(parts, 2, &all), 0);
    cr_assert_eq(all.n, 3);
    cr_expect_eq(all.count, 3);
    cr_expect_float_eq(all.items[0].start_ms, 0, 1e-12);
    cr_expect_float_eq(all.items[1].start_ms, 4, 1e-12);
    cr_expect_float_eq(all.items[2].start_ms, 10, 1e-12);
    cr_expect_float_eq(all.end_ms, 17, 1e-12);
    cr_expect_float_eq(all.min_ms, 1, 1e-12);
    bench_samples_free(&parts[0]);
    bench_samples_free(&parts[1]);
    bench_samples_free(&all);
}

Test(bench_shape, parses_every_input_and_per_input_forms)
{
    bench_shape_list l;
    cr_assert_eq(bench_shape_parse("-shape", "[1,3,224,224]", &l), RN_OK, "%s", rn_last_error());
    cr_assert_eq(l.n, 1);
    const rn_partial_shape *s = bench_shape_find(&l, "anything");
    cr_assert_not_null(s);
    cr_expect_eq(s->rank, 4);
    cr_expect_eq(s->dims[3], 224);
    cr_assert_eq(bench_shape_parse("-shape", "gpu_0/data_0[1,?,-1],mask[],b[ 2 , 3 ]", &l), RN_OK,
                 "%s", rn_last_error());
    cr_assert_eq(l.n, 3);
    s = bench_shape_find(&l, "gpu_0/data_0");
    cr_expect_eq(s->rank, 3);
    cr_expect_eq(s->dims[1], RN_DIM_DYNAMIC);
    cr_expect_eq(s->dims[2], RN_DIM_DYNAMIC);
    cr_expect_eq(bench_shape_find(&l, "mask")->rank, 0);
    cr_expect_eq(bench_shape_find(&l, "b")->dims[1], 3);
    cr_expect_null(bench_shape_find(&l, "other"));
    const char *names[] = {"gpu_0/data_0", "mask"};
    cr_expect_str_eq(bench_shape_unknown_name(&l, names, 2), "b");
    char text[64];
    bench_shape_format(bench_shape_find(&l, "gpu_0/data_0"), text, sizeof text);
    cr_expect_str_eq(text, "[1,?,?]");
}

Test(bench_shape, malformed_shapes_name_the_flag_and_the_problem)
{
    const char *bad[][2] = {{"", "empty"},         {"x[1,2", "missing ']'"},
                            {"x[1,,2]", "empty"},  {"x[1..4]", "range"},
                            {"x[-3]", "bad dim"},  {"x[a]", "bad dim"},
                            {"x[1]y[2]", "','"},   {"x[1],x[2]", "twice"},
                            {"1,2,3", "expected"}, {"x[1,2,3,4,5,6,7,8,9]", "more than"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bench_shape_list l;
        cr_expect_eq(bench_shape_parse("-data_shape", bad[i][0], &l), RN_INVALID_ARG, "'%s'",
                     bad[i][0]);
        cr_expect_eq(l.n, 0);
        cr_expect(strstr(rn_last_error(), "-data_shape") != NULL, "%s", rn_last_error());
        cr_expect(strstr(rn_last_error(), bad[i][1]) != NULL, "'%s': %s", bad[i][0],
                  rn_last_error());
    }
}

Test(bench_json, writes_text_that_parses_back)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cr_assert_not_null(f);
    bench_json j;
    bench_json_init(&j, f);
    bench_json_begin_object(&j, NULL);
    bench_json_string(&j, "s", "quote \" backslash \\ newline \n tab \t </script> \x01");
    bench_json_number(&j, "n", 1.5);
    bench_json_number(&j, "nan", NAN);
    bench_json_int(&j, "i", -42);
    bench_json_bool(&j, "b", true);
    bench_json_null(&j, "z");
    bench_json_string(&j, "null_string", NULL);
    bench_json_begin_array(&j, "empty");
    bench_json_end_array(&j);
    bench_json_begin_array(&j, "a");
    bench_json_begin_object(&j, NULL);
    bench_json_end_object(&j);
    bench_json_int(&j, NULL, 7);
    bench_json_end_array(&j);
    bench_json_end_object(&j);
    fclose(f);
    char error[128];
    json_value *v = json_parse(text, error, sizeof error);
    cr_assert_not_null(v, "%s\n%s", error, text);
    cr_expect_str_eq(json_member(v, "s")->string,
                     "quote \" backslash \\ newline \n tab \t </script> \x01");
    cr_expect(strstr(text, "</script>") == NULL, "'</' must be escaped for HTML");
    cr_expect_float_eq(json_member(v, "n")->number, 1.5, 1e-12);
    cr_expect_eq(json_member(v, "nan")->type, JSON_NULL);
    cr_expect_float_eq(json_member(v, "i")->number, -42, 1e-12);
    cr_expect(json_member(v, "b")->boolean);
    cr_expect_eq(json_member(v, "z")->type, JSON_NULL);
    cr_expect_eq(json_member(v, "null_string")->type, JSON_NULL);
    cr_expect_eq(json_member(v, "empty")->n, 0);
    cr_expect_eq(json_member(v, "a")->n, 2);
    json_free(v);
    free(text);
}
