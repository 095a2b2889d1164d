/* Partitions in the compiled plan (plugins/api/plan_spec.c): a device
 * claims connected groups of nodes and runs each as one kernel.
 *
 * The test device claims every Add, Relu and Mul of static f32 tensors
 * whose inputs all have the output's shape, grouping claimed nodes that
 * feed each other (connected components). Its partition kernel is a small
 * interpreter over the group's nodes with scratch buffers made at compile
 * time; it reads the group's inputs and writes its outputs by the names
 * the plan hands to compile, so a mix-up of order shows in the outputs,
 * which are compared with the same graph on plain REF. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tests/plan/plan_harness.h"
#include "tests/ref/node_case.h"

/* ---- claiming ---- */

static bool claimable(const rn_node *node)
{
    const char *op = rn_node_op_type(node);
    if (strcmp(op, "Add") != 0 && strcmp(op, "Relu") != 0 && strcmp(op, "Mul") != 0)
        return false;
    rn_partial_shape out = rn_node_output_shape(node, 0);
    if (rn_node_output_type(node, 0) != RN_F32 || out.rank < 0 || rn_node_output_count(node) != 1)
        return false;
    for (int d = 0; d < out.rank; d++)
        if (out.dims[d] < 0)
            return false;
    for (int k = 0; k < rn_node_input_count(node); k++) {
        rn_partial_shape in = rn_node_input_shape(node, k);
        if (rn_node_input_type(node, k) != RN_F32 || in.rank != out.rank ||
            memcmp(in.dims, out.dims, sizeof(int64_t) * (size_t)out.rank) != 0)
            return false;
    }
    return true;
}

static int find(int *parent, int i)
{
    while (parent[i] != i)
        i = parent[i] = parent[parent[i]];
    return i;
}

typedef struct claim_stats {
    int claims, compiles;
} claim_stats;

/* Claimed nodes that read one another's outputs share a group. */
static rn_status claim(void *ctx, const rn_node *const *nodes, int n_nodes, int *group)
{
    ((claim_stats *)ctx)->claims++;
    int *parent = malloc(sizeof(int) * (size_t)(n_nodes + 1));
    cr_assert_not_null(parent);
    for (int i = 0; i < n_nodes; i++)
        parent[i] = i;
    for (int i = 0; i < n_nodes; i++) {
        if (!claimable(nodes[i]))
            continue;
        for (int k = 0; k < rn_node_input_count(nodes[i]); k++)
            for (int j = 0; j < i; j++)
                if (claimable(nodes[j]) &&
                    strcmp(rn_node_output_name(nodes[j], 0), rn_node_input_name(nodes[i], k)) == 0)
                    parent[find(parent, i)] = find(parent, j);
    }
    /* Group ids: the index of each component's root. */
    for (int i = 0; i < n_nodes; i++)
        group[i] = claimable(nodes[i]) ? find(parent, i) : -1;
    free(parent);
    return RN_OK;
}

/* ---- the partition kernel ---- */

typedef struct part_value {
    char *name;
    int input;  /* index among the group's inputs, or -1 */
    int output; /* index among the group's outputs, or -1 */
    float *scratch;
} part_value;

typedef struct part_state {
    int n_nodes;
    const rn_node **nodes;
    int n_values;
    part_value *values;
    size_t count; /* elements of every tensor of the group */
} part_state;

static void part_release(void *state)
{
    part_state *s = state;
    for (int v = 0; v < s->n_values; v++) {
        free(s->values[v].name);
        free(s->values[v].scratch);
    }
    free(s->values);
    free(s->nodes);
    free(s);
}

static int value_index(const part_state *s, const char *name)
{
    for (int v = 0; v < s->n_values; v++)
        if (strcmp(s->values[v].name, name) == 0)
            return v;
    return -1;
}

static void add_value(part_state *s, const char *name, int input, int output)
{
    int v = value_index(s, name);
    if (v < 0) {
        v = s->n_values++;
        s->values[v] = (part_value){.name = strdup(name), .input = -1, .output = -1};
    }
    if (input >= 0)
        s->values[v].input = input;
    if (output >= 0)
        s->values[v].output = output;
}

static float *value_data(const part_state *s, const rn_kernel_args *args, int v)
{
    const part_value *pv = &s->values[v];
    if (pv->input >= 0)
        return args->inputs[pv->input].data;
    if (pv->output >= 0)
        return args->outputs[pv->output].data;
    return pv->scratch;
}

static rn_status part_run(rn_kernel_args *args)
{
    const part_state *s = args->state;
    for (int i = 0; i < s->n_nodes; i++) {
        const rn_node *node = s->nodes[i];
        const char *op = rn_node_op_type(node);
        const float *a = value_data(s, args, value_index(s, rn_node_input_name(node, 0)));
        const float *b = rn_node_input_count(node) > 1
                             ? value_data(s, args, value_index(s, rn_node_input_name(node, 1)))
                             : a;
        float *y = value_data(s, args, value_index(s, rn_node_output_name(node, 0)));
        for (size_t e = 0; e < s->count; e++)
            y[e] = op[0] == 'A' ? a[e] + b[e] : op[0] == 'M' ? a[e] * b[e] : a[e] > 0 ? a[e] : 0;
    }
    return RN_OK;
}

static bool part_supports(const rn_node *node, const char **why)
{
    (void)node;
    *why = "partitions only";
    return false;
}

static const rn_kernel part_kernel = {
    .op_type = "Partition",
    .impl_type = "test_partition",
    .supports = part_supports,
    .run = part_run,
    .release = part_release,
};

static rn_status compile(void *ctx, const rn_node *const *nodes, int n_nodes,
                         const char *const *input_names, int n_inputs,
                         const char *const *output_names, int n_outputs, const rn_kernel **kernel,
                         void **state)
{
    ((claim_stats *)ctx)->compiles++;
    part_state *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    s->n_nodes = n_nodes;
    s->nodes = malloc(sizeof *s->nodes * (size_t)n_nodes);
    s->values = calloc((size_t)(3 * n_nodes + n_inputs + n_outputs), sizeof *s->values);
    cr_assert(s->nodes != NULL && s->values != NULL);
    rn_partial_shape shape = rn_node_output_shape(nodes[0], 0);
    s->count = 1;
    for (int d = 0; d < shape.rank; d++)
        s->count *= (size_t)shape.dims[d];
    for (int k = 0; k < n_inputs; k++)
        add_value(s, input_names[k], k, -1);
    for (int k = 0; k < n_outputs; k++)
        add_value(s, output_names[k], -1, k);
    for (int i = 0; i < n_nodes; i++) {
        s->nodes[i] = nodes[i];
        add_value(s, rn_node_output_name(nodes[i], 0), -1, -1);
    }
    /* Values made and read only inside the group live in scratch. */
    for (int v = 0; v < s->n_values; v++)
        if (s->values[v].input < 0 && s->values[v].output < 0)
            s->values[v].scratch = calloc(s->count, sizeof(float));
    /* Every input a node reads is either the group's or made inside it. */
    for (int i = 0; i < n_nodes; i++)
        for (int k = 0; k < rn_node_input_count(nodes[i]); k++)
            if (value_index(s, rn_node_input_name(nodes[i], k)) < 0) {
                part_release(s);
                return rn_set_error(RN_INTERNAL,
                                    "partition: node '%s' reads '%s', which the "
                                    "plan did not hand to the group",
                                    rn_node_name(nodes[i]), rn_node_input_name(nodes[i], k));
            }
    *kernel = &part_kernel;
    *state = s;
    return RN_OK;
}

/* ---- graphs ---- */

static const int64_t dims[3] = {2, 3, 4};
#define COUNT 24

/* add = input + weight; relu; mul = relu * input; soft = Softmax(mul)
 * (REF); results soft and relu (read inside the group and outside). */
static graph *chain_graph(void)
{
    static float weight[COUNT];
    ph_fill(weight, COUNT, 2.0f);
    graph *g = pc_graph("chain", NULL, 13);
    graph_value *x = pc_input(g, "input", GRAPH_KIND_TENSOR, RN_F32, 3, dims);
    graph_value *w = pc_constant(g, "weight", RN_F32, 3, dims, weight);
    graph_value *r = ph_node(g, "relu", "Relu", 1, ph_node(g, "add", "Add", 2, x, w), NULL);
    graph_value *s = ph_node(g, "soft", "Softmax", 1, ph_node(g, "mul", "Mul", 2, r, x), NULL);
    cr_assert_eq(graph_add_output(g, s), RN_OK);
    cr_assert_eq(graph_add_output(g, r), RN_OK);
    return g;
}

/* ---- tests ---- */

Test(partitions, claimed_chain_runs_as_one_partition)
{
    claim_stats stats = {0};
    rn_partition_ops ops = {RN_KERNEL_ABI_VERSION, claim, compile, &stats};
    plugin_kernel_registry *reg = ph_registry(NULL);
    graph *g = chain_graph();
    plugin_plan *plan = ph_build(g, reg, &ops);
    cr_expect_eq(stats.compiles, 1, "%d groups compiled, expected 1", stats.compiles);
    size_t n;
    const rn_runtime_node *rows = ph_rows(plan, &n);
    cr_assert_eq(n, 2, "%zu runtime model rows, expected the partition and Softmax", n);
    cr_assert_eq(ph_count_rows(plan, "Partition"), 1);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].layer_type, "Partition") != 0)
            continue;
        cr_expect_str_eq(rows[i].original_names, "add,relu,mul");
        cr_expect_str_eq(rows[i].impl_type, "test_partition");
        cr_expect_eq(rows[i].execution_order, 0, "the partition runs before Softmax");
    }
    cr_expect_str_eq(ph_row(plan, "soft")->impl_type, "ref");
    ph_expect_like_ref_and_free(g, plan, reg, 3, dims, 0.0f, 0);
}

/* Two chains joined only through a node the device leaves to REF. */
Test(partitions, groups_apart_are_partitions_apart)
{
    claim_stats stats = {0};
    rn_partition_ops ops = {RN_KERNEL_ABI_VERSION, claim, compile, &stats};
    plugin_kernel_registry *reg = ph_registry(NULL);
    graph *g = pc_graph("two", NULL, 13);
    graph_value *x = pc_input(g, "input", GRAPH_KIND_TENSOR, RN_F32, 3, dims);
    graph_value *r = ph_node(g, "relu", "Relu", 1, ph_node(g, "add", "Add", 2, x, x), NULL);
    graph_value *s = ph_node(g, "soft", "Softmax", 1, r, NULL);
    graph_value *y = ph_node(g, "relu2", "Relu", 1, ph_node(g, "mul", "Mul", 2, s, s), NULL);
    cr_assert_eq(graph_add_output(g, y), RN_OK);
    plugin_plan *plan = ph_build(g, reg, &ops);
    cr_expect_eq(stats.compiles, 2);
    cr_assert_eq(ph_count_rows(plan, "Partition"), 2);
    size_t n;
    const rn_runtime_node *rows = ph_rows(plan, &n);
    cr_assert_eq(n, 3, "%zu rows, expected partition, Softmax, partition", n);
    cr_expect_str_eq(rows[0].original_names, "add,relu");
    cr_expect_str_eq(rows[1].layer_type, "Softmax");
    cr_expect_str_eq(rows[2].original_names, "mul,relu2");
    ph_expect_like_ref_and_free(g, plan, reg, 3, dims, 1.0f, 0);
}

/* add feeds mul directly and through soft (REF): a group {add, mul} is
 * left and re-entered, and the plan must refuse it. */
Test(partitions, non_convex_claim_is_refused)
{
    claim_stats stats = {0};
    rn_partition_ops ops = {RN_KERNEL_ABI_VERSION, claim, compile, &stats};
    plugin_kernel_registry *reg = ph_registry(NULL);
    graph *g = pc_graph("nonconvex", NULL, 13);
    graph_value *x = pc_input(g, "input", GRAPH_KIND_TENSOR, RN_F32, 3, dims);
    graph_value *a = ph_node(g, "add", "Add", 2, x, x);
    graph_value *y = ph_node(g, "mul", "Mul", 2, a, ph_node(g, "soft", "Softmax", 1, a, NULL));
    cr_assert_eq(graph_add_output(g, y), RN_OK);
    plugin_plan *plan = NULL;
    rn_status st = ph_try_build(g, reg, &ops, &plan);
    cr_assert_eq(st, RN_UNSUPPORTED, "status %s, expected UNSUPPORTED", rn_status_name(st));
    cr_assert_null(plan);
    cr_expect(strstr(rn_last_error(), "convex") != NULL && strstr(rn_last_error(), "add") != NULL,
              "message: %s", rn_last_error());
    cr_expect_eq(stats.compiles, 0, "a refused group was compiled");
    graph_free(g);
    plugin_kernel_registry_free(reg);
}
