/* The plan tests' shared harness (see plan_harness.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/run.h"
#include "plugins/ref/ref.h"
#include "tests/plan/plan_harness.h"
#include "tests/ref/node_case.h"

plugin_kernel_registry *ph_registry(const plugin_kernel *const *first)
{
    plugin_kernel_registry *reg;
    cr_assert_eq(plugin_kernel_registry_create(&reg), RN_OK, "%s", rn_last_error());
    if (first != NULL)
        cr_assert_eq(plugin_kernel_registry_add_list(reg, first), RN_OK, "%s", rn_last_error());
    cr_assert_eq(ref_register_kernels(reg), RN_OK, "%s", rn_last_error());
    return reg;
}

rn_status ph_try_build(graph *g, const plugin_kernel_registry *reg,
                       const rn_partition_ops *partitions, plugin_plan **out)
{
    cr_assert_eq(graph_sort(g), RN_OK, "%s", rn_last_error());
    plugin_plan_options o = {
        .n_streams = 1,
        .threads_per_stream = 2,
        .partitions = partitions,
    };
    return plugin_plan_build(g, reg, &o, out);
}

plugin_plan *ph_build(graph *g, const plugin_kernel_registry *reg,
                      const rn_partition_ops *partitions)
{
    plugin_plan *plan = NULL;
    cr_assert_eq(ph_try_build(g, reg, partitions, &plan), RN_OK, "compile: %s", rn_last_error());
    return plan;
}

void ph_run(plugin_plan *plan, const graph_tensor *inputs, int n_inputs, bool async, int runs,
            ph_outputs *out)
{
    plugin_request *req;
    cr_assert_eq(plugin_request_create(plan, NULL, &req), RN_OK, "%s", rn_last_error());
    for (int i = 0; i < n_inputs; i++)
        cr_assert_eq(plugin_request_set_input(req, (size_t)i, &inputs[i]), RN_OK, "input %d: %s", i,
                     rn_last_error());
    for (int k = 0; k < runs; k++) {
        if (async) {
            cr_assert_eq(plugin_request_start_async(req), RN_OK, "start_async: %s",
                         rn_last_error());
            cr_assert_eq(plugin_run_op_wait(req), RN_OK, "async run %d: %s", k, rn_last_error());
        } else {
            cr_assert_eq(plugin_request_infer(req), RN_OK, "run %d: %s", k, rn_last_error());
        }
    }
    const graph *g = plugin_plan_graph(plan);
    cr_assert_leq(g->n_outputs, PH_MAX_OUTPUTS);
    memset(out, 0, sizeof *out);
    out->n = g->n_outputs;
    for (int o = 0; o < g->n_outputs; o++) {
        graph_tensor t;
        cr_assert_eq(plugin_request_get_output(req, (size_t)o, &t), RN_OK, "output %d: %s", o,
                     rn_last_error());
        cr_assert_eq(graph_tensor_copy(&out->t[o], &t), RN_OK, "%s", rn_last_error());
    }
    plugin_request_free(req);
}

void ph_outputs_free(ph_outputs *o)
{
    for (int i = 0; i < o->n; i++)
        graph_tensor_release(&o->t[i]);
    o->n = 0;
}

static void expect_same_outputs(const ph_outputs *got, const ph_outputs *want, double rel_tol,
                                const char *how)
{
    cr_assert_eq(got->n, want->n, "%s: %d outputs, REF has %d", how, got->n, want->n);
    for (int o = 0; o < want->n; o++) {
        const graph_tensor *a = &got->t[o], *b = &want->t[o];
        cr_assert_eq(a->type, b->type, "%s: output %d type", how, o);
        cr_assert_eq(a->rank, b->rank, "%s: output %d rank %d, REF's %d", how, o, a->rank, b->rank);
        for (int d = 0; d < a->rank; d++)
            cr_assert_eq(a->dims[d], b->dims[d], "%s: output %d dim %d", how, o, d);
        cr_assert_eq(a->nbytes, b->nbytes, "%s: output %d bytes", how, o);
        if (a->type == RN_F32) {
            const float *x = a->data, *y = b->data;
            for (size_t i = 0; i < graph_tensor_count(a); i++)
                cr_assert(rel_tol == 0 ? memcmp(&x[i], &y[i], sizeof x[i]) == 0
                                       : fabs((double)x[i] - y[i]) <= rel_tol * (1 + fabs(y[i])),
                          "%s: output %d element %zu is %.9g, REF's %.9g", how, o, i, x[i], y[i]);
        } else {
            cr_assert(memcmp(a->data, b->data, a->nbytes) == 0, "%s: output %d differs from REF's",
                      how, o);
        }
    }
}

void ph_expect_like_ref(graph *g, plugin_plan *plan, const graph_tensor *inputs, int n_inputs,
                        double rel_tol)
{
    plugin_kernel_registry *ref = ph_registry(NULL);
    plugin_plan *ref_plan = ph_build(g, ref, NULL);
    plugin_plan_stats stats;
    plugin_plan_get_stats(ref_plan, &stats);
    cr_assert_eq(stats.conversions, 0, "plain REF converted layouts %d times", stats.conversions);
    ph_outputs want, got;
    ph_run(ref_plan, inputs, n_inputs, false, 1, &want);
    /* Two runs each: the second reuses the request's arena as it is. */
    ph_run(plan, inputs, n_inputs, false, 2, &got);
    expect_same_outputs(&got, &want, rel_tol, "sync");
    ph_outputs_free(&got);
    ph_run(plan, inputs, n_inputs, true, 2, &got);
    expect_same_outputs(&got, &want, rel_tol, "async");
    ph_outputs_free(&got);
    ph_outputs_free(&want);
    plugin_plan_free(ref_plan);
    plugin_kernel_registry_free(ref);
}

void ph_expect_like_ref_and_free(graph *g, plugin_plan *plan, plugin_kernel_registry *reg, int rank,
                                 const int64_t *dims, float phase, double rel_tol)
{
    graph_tensor in = {.type = RN_F32, .rank = rank};
    memcpy(in.dims, dims, sizeof(int64_t) * (size_t)rank);
    size_t count = graph_tensor_count(&in);
    float *data = malloc(count * sizeof *data);
    cr_assert_not_null(data);
    ph_fill(data, count, phase);
    in.data = data;
    in.nbytes = count * sizeof *data;
    ph_expect_like_ref(g, plan, &in, 1, rel_tol);
    free(data);
    plugin_plan_free(plan);
    graph_free(g);
    plugin_kernel_registry_free(reg);
}

const rn_runtime_node *ph_rows(plugin_plan *plan, size_t *n)
{
    const rn_runtime_node *rows;
    cr_assert_eq(plugin_plan_runtime_model(plan, &rows, n), RN_OK, "%s", rn_last_error());
    return rows;
}

int ph_count_rows(plugin_plan *plan, const char *type)
{
    size_t n;
    const rn_runtime_node *rows = ph_rows(plan, &n);
    int count = 0;
    for (size_t i = 0; i < n; i++)
        count += strcmp(rows[i].layer_type, type) == 0;
    return count;
}

const rn_runtime_node *ph_row(plugin_plan *plan, const char *name)
{
    size_t n;
    const rn_runtime_node *rows = ph_rows(plan, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            return &rows[i];
    cr_assert_fail("the runtime model has no row '%s'", name);
    return NULL;
}

long long ph_property(const plugin_plan *plan, const char *key)
{
    char buf[64];
    cr_assert_eq(plugin_plan_get_property(plan, key, buf, sizeof buf), RN_OK, "property %s", key);
    char *end;
    long long v = strtoll(buf, &end, 10);
    cr_assert(end != buf && *end == '\0', "property %s is '%s', not a number", key, buf);
    return v;
}

graph_value *ph_node(graph *g, const char *name, const char *op, int n_in, graph_value *a,
                     graph_value *b)
{
    graph_value *in[2] = {a, b};
    graph_value *y = pc_value(g, name);
    pc_node(g, name, op, n_in, in, 1, &y);
    return y;
}

void ph_fill(float *x, size_t n, float phase)
{
    for (size_t i = 0; i < n; i++)
        x[i] = 3.0f * sinf(0.37f * (float)i + phase);
}
