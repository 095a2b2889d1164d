/* HETERO's requests as task DAGs: the trace of a split model shows the
 * transfers between devices as DAG nodes of their own, and two requests in
 * flight overlapping across the devices (one on REF while the other is on
 * SLOWDEV). Runs requests concurrently: CI also runs it under TSan. */
#include <criterion/criterion.h>

#include "tests/hetero/models.h"

#define N      256
#define ROUNDS 3

typedef struct trace_event {
    char name[128];
    int pid;
    long request;
    double ts, dur;
} trace_event;

/* Reads the complete ("X") events of a trace written by
 * rn_compiled_model_write_trace. */
static int read_events(const char *path, trace_event *ev, int cap)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f) != NULL && n < cap) {
        if (strstr(line, "\"ph\":\"X\"") == NULL)
            continue;
        trace_event *e = &ev[n];
        const char *name = strstr(line, "\"name\":\"");
        cr_assert_not_null(name);
        name += 8;
        size_t len = strcspn(name, "\"");
        snprintf(e->name, sizeof e->name, "%.*s", (int)len, name);
        cr_assert_eq(sscanf(strstr(line, "\"pid\":"),
                            "\"pid\":%d,\"tid\":%ld,\"ts\":%lf,\"dur\":%lf", &e->pid, &e->request,
                            &e->ts, &e->dur),
                     4, "%s", line);
        n++;
    }
    fclose(f);
    return n;
}

static bool overlap(const trace_event *a, const trace_event *b)
{
    return a->ts < b->ts + b->dur && b->ts < a->ts + a->dur;
}

Test(hetero_overlap, transfers_are_dag_nodes_and_requests_overlap_across_devices, .timeout = 120)
{
    rn_core *core = slowdev_core("Neg", 2000);
    rn_model *model = model_chain3(core, N);
    rn_compiled_model *c;
    rn_property p[] = {{"ENABLE_TRACE", "YES"}};
    cr_assert_eq(rn_core_compile_model(core, model, "HETERO:SLOWDEV,REF", p, 1, &c), RN_OK, "%s",
                 rn_last_error());
    const rn_pipeline_stage *stages;
    size_t n_stages;
    cr_assert_eq(rn_compiled_model_pipeline(c, &stages, &n_stages), RN_OK);
    cr_expect_str_eq(stages[0].stage, "preprocess");
    cr_expect_str_eq(stages[n_stages - 1].stage, "callback");
    rn_infer_request *r[2];
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rn_compiled_model_create_infer_request(c, &r[i]), RN_OK);
        rn_tensor *x;
        rn_infer_request_get_input_tensor(r[i], 0, &x);
        float *xd = rn_tensor_data(x);
        for (int k = 0; k < N; k++)
            xd[k] = (float)(k - N / 2) * (i + 1);
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < 2; i++)
            cr_assert_eq(rn_infer_request_start_async(r[i]), RN_OK, "%s", rn_last_error());
        for (int i = 0; i < 2; i++)
            cr_assert_eq(rn_infer_request_wait(r[i]), RN_OK, "%s", rn_last_error());
    }
    /* y = |-relu(x)| = relu(x). */
    for (int i = 0; i < 2; i++) {
        rn_tensor *y;
        cr_assert_eq(rn_infer_request_get_output_tensor(r[i], 0, &y), RN_OK);
        const float *yd = rn_tensor_data(y);
        for (int k = 0; k < N; k++) {
            float x = (float)(k - N / 2) * (i + 1);
            cr_assert_float_eq(yd[k], x > 0 ? x : 0.0f, 1e-6, "request %d element %d", i, k);
        }
    }
    char path[512];
    const char *tmp = getenv("TEST_TMPDIR");
    snprintf(path, sizeof path, "%s/hetero_trace.json", tmp != NULL ? tmp : "/tmp");
    cr_assert_eq(rn_compiled_model_write_trace(c, path), RN_OK, "%s", rn_last_error());
    static trace_event ev[256];
    int n = read_events(path, ev, 256);
    /* Per run: three parts and two transfers, every one a node. */
    int parts = 0, transfers = 0;
    for (int i = 0; i < n; i++) {
        parts += strncmp(ev[i].name, "part", 4) == 0;
        transfers += strncmp(ev[i].name, "transfer", 8) == 0;
    }
    cr_expect_eq(parts, 2 * ROUNDS * 3);
    cr_expect_eq(transfers, 2 * ROUNDS * 2);
    /* One request on REF (device lane 1) while the other is on SLOWDEV
     * (lane 0). */
    bool overlapped = false;
    for (int i = 0; i < n && !overlapped; i++)
        for (int j = 0; j < n && !overlapped; j++)
            overlapped = ev[i].pid == 1 && ev[j].pid == 0 && ev[i].request != ev[j].request &&
                         overlap(&ev[i], &ev[j]);
    cr_expect(overlapped, "no request ran on REF while another was on SLOWDEV");
    for (int i = 0; i < 2; i++)
        rn_infer_request_free(r[i]);
    rn_compiled_model_free(c);
    rn_model_free(model);
    rn_core_free(core);
}
