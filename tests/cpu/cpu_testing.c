/* What the CPU device's tests share (cpu_testing.h). */
#include "tests/cpu/cpu_testing.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

const char *cpu_testing_light(const char *name, char *buf, size_t size)
{
    const char *roots[] = {".cache/onnx-1.22.0/light", "../.cache/onnx-1.22.0/light"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(buf, size, "%s/light_%s.onnx", roots[i], name);
        if (access(buf, R_OK) == 0)
            return buf;
    }
    cr_skip_test("light_%s.onnx is missing: run scripts/setup", name);
    return NULL;
}

rn_infer_request *cpu_testing_infer(rn_compiled_model *cm)
{
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    rn_tensor *in;
    OK(rn_infer_request_get_input_tensor(r, 0, &in));
    float *x = rn_tensor_data(in);
    size_t n = rn_tensor_element_count(in);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 7919u) % 1000u) / 500.0f - 1.0f;
    OK(rn_infer_request_infer(r));
    return r;
}

float *cpu_testing_run_once(rn_compiled_model *cm, size_t *count)
{
    rn_infer_request *r = cpu_testing_infer(cm);
    rn_tensor *out;
    OK(rn_infer_request_get_output_tensor(r, 0, &out));
    *count = rn_tensor_element_count(out);
    float *copy = malloc(*count * sizeof *copy);
    cr_assert_not_null(copy);
    memcpy(copy, rn_tensor_data(out), *count * sizeof *copy);
    rn_infer_request_free(r);
    return copy;
}

void cpu_testing_compile_latency(const char *path, cpu_testing_compiled *c)
{
    OK(rn_core_create(&c->core));
    OK(rn_core_read_model(c->core, path, &c->model));
    rn_property p[] = {{"PERFORMANCE_HINT", "LATENCY"}};
    OK(rn_core_compile_model(c->core, c->model, "CPU", p, 1, &c->cm));
}

void cpu_testing_free(cpu_testing_compiled *c)
{
    rn_infer_request_free(c->rq);
    rn_compiled_model_free(c->cm);
    rn_model_free(c->model);
    rn_core_free(c->core);
}

void cpu_testing_skip_without_teams(void)
{
#if defined(__SANITIZE_THREAD__)
    cr_skip_test("no OpenMP teams under ThreadSanitizer (cpu_enter)");
#endif
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        cr_skip_test("one CPU: LATENCY's team is one thread");
}

static void read_line(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    if (fgets(buf, (int)size, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

cpu_testing_census cpu_testing_take_census(void)
{
    char self[32], comm[32], path[300];
    read_line("/proc/self/comm", self, sizeof self);
    long me = (long)syscall(SYS_gettid);
    cpu_testing_census c = {0};
    DIR *d = opendir("/proc/self/task");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || atol(e->d_name) == me)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        read_line(path, comm, sizeof comm);
        unsigned s, k;
        char tail;
        if (sscanf(comm, "rn-s%ut%u%c", &s, &k, &tail) == 2)
            c.worker_team++;
        else if (strcmp(comm, self) == 0)
            c.caller_team++;
    }
    closedir(d);
    return c;
}

int cpu_testing_onednn_major(rn_core *core)
{
    char name[256];
    rn_status st = rn_core_get_property(core, "CPU", "FULL_DEVICE_NAME", name, sizeof name);
    cr_assert_eq(st, RN_OK, "FULL_DEVICE_NAME: %s", rn_last_error());
    const char *v = strstr(name, "oneDNN ");
    cr_assert_not_null(v, "FULL_DEVICE_NAME names no oneDNN: %s", name);
    return atoi(v + strlen("oneDNN "));
}

int cpu_testing_winograd_nodes(rn_compiled_model *cm)
{
    const rn_runtime_node *nodes;
    size_t n;
    OK(rn_compiled_model_runtime_model(cm, &nodes, &n));
    int count = 0;
    for (size_t i = 0; i < n; i++)
        count += strstr(nodes[i].impl_type, "wino") != NULL;
    return count;
}
