/* Tracing: every task becomes a Chrome trace-event, written as JSON. */
#include <stdio.h>
#include <unistd.h>

#include "tests/sched/sched_test_util.h"

static int named_task(const sched_task_ctx *ctx, void *arg)
{
    (void)ctx;
    (void)arg;
    test_spin_ns(1000);
    return SCHED_OK;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static size_t count_substr(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void trace_path(char *buf, size_t size)
{
    const char *dir = getenv("TEST_TMPDIR");
    snprintf(buf, size, "%s/sched_trace_%d.json", dir ? dir : "/tmp", (int)getpid());
}

Test(trace, writes_every_task_as_a_chrome_trace_event, .timeout = 30)
{
    sched_config c = test_config(2, 1, true);
    c.trace = true;
    sched *s = test_sched_create(&c);
    uint32_t cb;
    cr_assert_eq(sched_add_executor(s, "callback", 1, &cb), 0);

    sched_dag_builder *b;
    cr_assert_eq(sched_dag_builder_create(&b), 0);
    cr_assert_eq(sched_dag_add_node(b, "preprocess", named_task, NULL, 0, NULL), 0);
    cr_assert_eq(sched_dag_add_node(b, "conv \"1\"", named_task, NULL, 0, NULL), 0);
    cr_assert_eq(sched_dag_add_node(b, "callback", named_task, NULL, cb, NULL), 0);
    cr_assert_eq(sched_dag_add_edge(b, 0, 1), 0);
    cr_assert_eq(sched_dag_add_edge(b, 1, 2), 0);
    sched_dag *dag;
    cr_assert_eq(sched_dag_build(b, &dag), 0);
    sched_dag_builder_free(b);
    sched_instance *inst;
    cr_assert_eq(sched_instance_create(dag, NULL, &inst), 0);
    for (int r = 0; r < 4; r++) {
        cr_assert_eq(sched_instance_start(s, inst, r % 2, NULL, NULL), 0);
        cr_assert_eq(sched_instance_wait(inst), SCHED_OK);
    }
    cr_assert_eq(sched_submit(s, 1, named_task, NULL), 0);
    /* Let the one-off task finish. */
    uint64_t end = test_now_ns() + 5000000000ull;
    while (sched_trace_event_count(s) < 13 && test_now_ns() < end)
        test_sleep_us(100);
    cr_expect_eq(sched_trace_event_count(s), 13);

    char path[512];
    trace_path(path, sizeof(path));
    cr_assert_eq(sched_trace_write_json(s, path), 0);
    char *json = read_file(path);
    cr_expect_not_null(strstr(json, "\"traceEvents\":["));
    cr_expect_eq(count_substr(json, "\"ph\":\"X\""), 13);
    cr_expect_eq(count_substr(json, "\"name\":\"preprocess\""), 4);
    cr_expect_eq(count_substr(json, "\"name\":\"conv \\\"1\\\"\""), 4, "name not escaped");
    cr_expect_eq(count_substr(json, "\"name\":\"callback\",\"cat\""), 4);
    cr_expect_eq(count_substr(json, "\"name\":\"task\""), 1);
    char inst_arg[64];
    snprintf(inst_arg, sizeof(inst_arg), "\"instance\":%llu,",
             (unsigned long long)sched_instance_id(inst));
    cr_expect_eq(count_substr(json, inst_arg), 12);
    cr_expect_geq(count_substr(json, "\"process_name\""), 3, "streams and executor named");
    cr_expect_not_null(strstr(json, "executor callback"));
    /* The callback node ran on the executor's process (pid n_streams + id - 1 = 2). */
    cr_expect_eq(count_substr(json, "\"ph\":\"X\",\"pid\":2,"), 4);
    /* The instant ts count from, for lining up a program's own clock readings
     * (bench/latency --stamps): sched_trace_origin_ns, before every event. */
    char origin[80];
    snprintf(origin, sizeof(origin), "\"otherData\":{\"origin_ns\":%llu}",
             (unsigned long long)sched_trace_origin_ns(s));
    cr_expect_not_null(strstr(json, origin), "no %s in the trace", origin);
    cr_expect_lt(sched_trace_origin_ns(s), test_now_ns());
    /* Balanced brackets: a crude well-formedness check. */
    cr_expect_eq(count_substr(json, "{"), count_substr(json, "}"));
    cr_expect_eq(count_substr(json, "["), count_substr(json, "]"));
    free(json);
    remove(path);
    sched_instance_free(inst);
    sched_dag_free(dag);
    sched_destroy(s);
}

Test(trace, refuses_to_write_when_tracing_is_off, .timeout = 10)
{
    sched_config c = test_config(1, 1, true);
    sched *s = test_sched_create(&c);
    char path[512];
    trace_path(path, sizeof(path));
    cr_expect_eq(sched_trace_write_json(s, path), -EINVAL);
    cr_expect_eq(sched_trace_event_count(s), 0);
    sched_destroy(s);
}

Test(trace, reports_an_unwritable_path, .timeout = 10)
{
    sched_config c = test_config(1, 1, true);
    c.trace = true;
    sched *s = test_sched_create(&c);
    cr_expect_lt(sched_trace_write_json(s, "/nonexistent-dir/x/trace.json"), 0);
    sched_destroy(s);
}
