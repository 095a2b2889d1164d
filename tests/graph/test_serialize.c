/* Graph serialization, the export container, cache keys and cache files:
 * round trips of the libonnx-testdata models (structure and constants
 * compared byte for byte, and outputs on REF compared before and after), a
 * graph with subgraphs and every attribute type built with the graph API,
 * every header check, truncation at every offset, random corruption, bytes
 * written by hand from the layout in docs/export.md, and atomic cache
 * stores. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph/onnx/onnx_reader.h"
#include "graph/ops.h"
#include "graph/serialize.h"
#include "plugins/api/plan.h"
#include "plugins/ref/ref.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* ---- structural comparison ---- */

static bool is_local(const graph *g, const graph_value *v)
{
    return v->id >= 0 && v->id < g->n_values && g->values[v->id] == v;
}

static void assert_tensor_equal(const graph_tensor *a, const graph_tensor *b, const char *where)
{
    cr_assert_eq(a->type, b->type, "%s: type %d vs %d", where, a->type, b->type);
    cr_assert_eq(a->rank, b->rank, "%s: rank", where);
    for (int i = 0; i < a->rank; i++)
        cr_assert_eq(a->dims[i], b->dims[i], "%s: dim %d", where, i);
    cr_assert_eq(a->nbytes, b->nbytes, "%s: nbytes %zu vs %zu", where, a->nbytes, b->nbytes);
    if (a->type == RN_STRING) {
        size_t n = graph_tensor_count(a);
        for (size_t i = 0; i < n; i++)
            cr_assert_str_eq(((char **)a->data)[i], ((char **)b->data)[i], "%s: string %zu", where,
                             i);
    } else if (a->nbytes > 0) {
        cr_assert_eq(memcmp(a->data, b->data, a->nbytes), 0, "%s: data differs", where);
    }
}

static void assert_graph_equal(const graph *a, const graph *b);

/* Two references to values: both omitted, or the same name and the same
 * scope (local to the graph, or read from an enclosing one). */
static void assert_ref_equal(const graph *ga, const graph_value *a, const graph *gb,
                             const graph_value *b, const char *where)
{
    cr_assert_eq(a == NULL, b == NULL, "%s: omitted on one side only", where);
    if (a == NULL)
        return;
    cr_assert_str_eq(a->name, b->name, "%s", where);
    cr_assert_eq(is_local(ga, a), is_local(gb, b), "%s: '%s' changed scope", where, a->name);
    if (!is_local(gb, b))
        cr_assert_eq(graph_find_value(gb->parent, b->name, true), b,
                     "%s: outer '%s' does not resolve in the rebuilt enclosing graphs", where,
                     b->name);
}

static void assert_attr_equal(const graph_attr *a, const graph_attr *b, const char *where)
{
    cr_assert_str_eq(a->name, b->name, "%s", where);
    cr_assert_eq(a->type, b->type, "%s: attribute '%s' type", where, a->name);
    char w[1024];
    snprintf(w, sizeof w, "%s, attribute '%s'", where, a->name);
    switch (a->type) {
    case GRAPH_ATTR_FLOAT:
        cr_assert_eq(memcmp(&a->f, &b->f, sizeof a->f), 0, "%s", w);
        break;
    case GRAPH_ATTR_INT:
        cr_assert_eq(a->i, b->i, "%s", w);
        break;
    case GRAPH_ATTR_STRING:
        cr_assert_eq(a->s == NULL, b->s == NULL, "%s", w);
        if (a->s != NULL)
            cr_assert_str_eq(a->s, b->s, "%s", w);
        break;
    case GRAPH_ATTR_TENSOR:
        assert_tensor_equal(a->t, b->t, w);
        break;
    case GRAPH_ATTR_GRAPH:
        assert_graph_equal(a->g, b->g);
        break;
    default:
        cr_assert_eq(a->count, b->count, "%s: count", w);
        for (int k = 0; k < a->count; k++) {
            if (a->type == GRAPH_ATTR_FLOATS)
                cr_assert_eq(memcmp(&a->floats[k], &b->floats[k], sizeof(float)), 0, "%s", w);
            else if (a->type == GRAPH_ATTR_INTS)
                cr_assert_eq(a->ints[k], b->ints[k], "%s", w);
            else if (a->type == GRAPH_ATTR_STRINGS)
                cr_assert_str_eq(a->strings[k], b->strings[k], "%s", w);
            else if (a->type == GRAPH_ATTR_TENSORS)
                assert_tensor_equal(&a->tensors[k], &b->tensors[k], w);
            else if (a->type == GRAPH_ATTR_GRAPHS)
                assert_graph_equal(a->graphs[k], b->graphs[k]);
        }
    }
}

static void assert_graph_equal(const graph *a, const graph *b)
{
    char w[512];
    cr_assert_str_eq(a->name, b->name);
    cr_assert_eq(a->opset, b->opset, "graph '%s': opset", a->name);
    cr_assert_eq(a->ir_version, b->ir_version, "graph '%s': ir_version", a->name);
    cr_assert_eq(a->n_values, b->n_values, "graph '%s': %d vs %d values", a->name, a->n_values,
                 b->n_values);
    for (int i = 0; i < a->n_values; i++) {
        const graph_value *va = a->values[i], *vb = b->values[i];
        snprintf(w, sizeof w, "graph '%s', value '%s'", a->name, va->name);
        cr_assert_str_eq(va->name, vb->name, "%s", w);
        cr_assert_eq(vb->id, i, "%s: id", w);
        cr_assert_eq(va->type, vb->type, "%s: type", w);
        cr_assert_eq(va->shape.rank, vb->shape.rank, "%s: rank", w);
        for (int d = 0; d < va->shape.rank; d++)
            cr_assert_eq(va->shape.dims[d], vb->shape.dims[d], "%s: dim %d", w, d);
        cr_assert_eq(va->is_parameter, vb->is_parameter, "%s: is_parameter", w);
        cr_assert_eq(va->constant == NULL, vb->constant == NULL, "%s: constant", w);
        if (va->constant != NULL)
            assert_tensor_equal(va->constant, vb->constant, w);
        cr_assert_eq(va->producer == NULL, vb->producer == NULL, "%s: producer", w);
        if (va->producer != NULL) {
            cr_assert_str_eq(va->producer->name, vb->producer->name, "%s: producer", w);
            cr_assert_eq(va->producer_output, vb->producer_output, "%s: producer output", w);
        }
    }
    cr_assert_eq(a->n_nodes, b->n_nodes, "graph '%s': nodes", a->name);
    for (int i = 0; i < a->n_nodes; i++) {
        const graph_node *na = a->nodes[i], *nb = b->nodes[i];
        snprintf(w, sizeof w, "graph '%s', node '%s' (%s)", a->name, na->name, na->op_type);
        cr_assert_str_eq(na->name, nb->name, "%s", w);
        cr_assert_str_eq(na->domain, nb->domain, "%s", w);
        cr_assert_str_eq(na->op_type, nb->op_type, "%s", w);
        cr_assert_eq(na->opset, nb->opset, "%s: opset", w);
        cr_assert_eq(nb->id, i, "%s: id", w);
        cr_assert_eq(na->n_inputs, nb->n_inputs, "%s: inputs", w);
        for (int k = 0; k < na->n_inputs; k++)
            assert_ref_equal(a, na->inputs[k], b, nb->inputs[k], w);
        cr_assert_eq(na->n_outputs, nb->n_outputs, "%s: outputs", w);
        for (int k = 0; k < na->n_outputs; k++) {
            assert_ref_equal(a, na->outputs[k], b, nb->outputs[k], w);
            if (nb->outputs[k] != NULL)
                cr_assert_eq(nb->outputs[k]->producer, nb, "%s: producer of output %d", w, k);
        }
        cr_assert_eq(na->n_attrs, nb->n_attrs, "%s: attributes", w);
        for (int k = 0; k < na->n_attrs; k++) {
            assert_attr_equal(&na->attrs[k], &nb->attrs[k], w);
            if (nb->attrs[k].g != NULL)
                cr_assert_eq(nb->attrs[k].g->parent, b, "%s: subgraph parent", w);
            for (int s = 0; nb->attrs[k].graphs != NULL && s < nb->attrs[k].count; s++)
                cr_assert_eq(nb->attrs[k].graphs[s]->parent, b, "%s: subgraph parent", w);
        }
        cr_assert_eq(na->n_fused, nb->n_fused, "%s: fused names", w);
        for (int k = 0; k < na->n_fused; k++)
            cr_assert_str_eq(na->fused_names[k], nb->fused_names[k], "%s", w);
    }
    cr_assert_eq(a->n_inputs, b->n_inputs, "graph '%s': inputs", a->name);
    for (int i = 0; i < a->n_inputs; i++)
        assert_ref_equal(a, a->inputs[i], b, b->inputs[i], "graph input");
    cr_assert_eq(a->n_outputs, b->n_outputs, "graph '%s': outputs", a->name);
    for (int i = 0; i < a->n_outputs; i++)
        assert_ref_equal(a, a->outputs[i], b, b->outputs[i], "graph output");
}

/* Serializes g, reads it back, compares, and checks that encoding the copy
 * gives the same bytes. Returns the copy. */
static graph *round_trip(const graph *g)
{
    graph_buffer buf = {0};
    cr_assert_eq(graph_serialize(g, &buf), RN_OK, "serialize '%s': %s", g->name, rn_last_error());
    graph *back = NULL;
    cr_assert_eq(graph_deserialize(buf.data, buf.size, &back), RN_OK, "deserialize '%s': %s",
                 g->name, rn_last_error());
    assert_graph_equal(g, back);
    graph_buffer again = {0};
    cr_assert_eq(graph_serialize(back, &again), RN_OK);
    cr_assert_eq(again.size, buf.size);
    cr_assert_eq(memcmp(again.data, buf.data, buf.size), 0, "'%s': re-encoding differs", g->name);
    graph_buffer_release(&again);
    graph_buffer_release(&buf);
    return back;
}

/* ---- real models ---- */

static bool read_model(const char *dir, graph **g)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    return onnx_read_file(path, g) == RN_OK;
}

/* Every model of the ONNX backend tests the reader accepts survives a round
 * trip, through the bare encoding and through a blob. */
Test(serialize, every_readable_testdata_model_round_trips)
{
    static const char *const sets[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};
    int tried = 0, read = 0, with_subgraphs = 0;
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        char root[256];
        snprintf(root, sizeof root, "%s/%s", TESTDATA, sets[s]);
        DIR *d = opendir(root);
        cr_assert_not_null(d, "%s", root);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char dir[512];
            snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
            graph *g = NULL;
            tried++;
            if (!read_model(dir, &g))
                continue;
            read++;
            for (int i = 0; i < g->n_nodes; i++)
                for (int k = 0; k < g->nodes[i]->n_attrs; k++)
                    with_subgraphs += g->nodes[i]->attrs[k].g != NULL;
            graph_free(round_trip(g));

            graph_blob_header h = {.device = "REF", .arch = "generic"};
            graph_buffer blob = {0};
            cr_assert_eq(graph_blob_write(&h, g, &blob), RN_OK, "%s: %s", dir, rn_last_error());
            graph *back = NULL;
            graph_blob_expect ex = {.device = "REF", .arch = "generic"};
            cr_assert_eq(graph_blob_read(blob.data, blob.size, &ex, NULL, &back), RN_OK, "%s: %s",
                         dir, rn_last_error());
            assert_graph_equal(g, back);
            graph_free(back);
            graph_buffer_release(&blob);
            graph_free(g);
        }
        closedir(d);
    }
    cr_log_info("%d of %d models read and round-tripped (%d subgraph attributes)", read, tried,
                with_subgraphs);
    cr_assert_gt(tried, 900);
    cr_assert_gt(read, tried / 2, "only %d of %d models were readable", read, tried);
}

/* Runs g on REF with test_data_set_0's inputs into outs (owned copies) and
 * returns the number of outputs; -1 when REF cannot compile the model. */
static int run_on_ref(const graph *g, const char *dir, graph_tensor *outs, int max_outs)
{
    plugin_kernel_registry *reg = NULL;
    cr_assert_eq(plugin_kernel_registry_create(&reg), RN_OK);
    cr_assert_eq(ref_register_kernels(reg), RN_OK);
    plugin_plan *plan = NULL;
    plugin_plan_options opts = {0};
    rn_status st = plugin_plan_build(g, reg, &opts, &plan);
    if (st == RN_UNSUPPORTED) {
        plugin_kernel_registry_free(reg);
        return -1;
    }
    cr_assert_eq(st, RN_OK, "%s: %s", dir, rn_last_error());
    plugin_request *req = NULL;
    cr_assert_eq(plugin_request_create(plan, NULL, &req), RN_OK);
    graph_tensor ins[16] = {0};
    cr_assert_leq(g->n_inputs, 16);
    for (int i = 0; i < g->n_inputs; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/test_data_set_0/input_%d.pb", dir, i);
        cr_assert_eq(onnx_read_tensor_file(p, &ins[i]), RN_OK, "%s", rn_last_error());
        cr_assert_eq(plugin_request_set_input(req, (size_t)i, &ins[i]), RN_OK);
    }
    cr_assert_eq(plugin_request_infer(req), RN_OK, "%s: %s", dir, rn_last_error());
    int n = plugin_plan_graph(plan)->n_outputs;
    cr_assert_leq(n, max_outs);
    for (int o = 0; o < n; o++) {
        graph_tensor t;
        cr_assert_eq(plugin_request_get_output(req, (size_t)o, &t), RN_OK);
        cr_assert_eq(graph_tensor_copy(&outs[o], &t), RN_OK);
    }
    plugin_request_free(req);
    for (int i = 0; i < g->n_inputs; i++)
        graph_tensor_release(&ins[i]);
    plugin_plan_free(plan);
    plugin_kernel_registry_free(reg);
    return n;
}

/* A model and its copy from a blob compute the same outputs on REF, bit for
 * bit. The models cover weights, recurrent ops and control flow with
 * outer-scope reads. Every one must read and run on REF (each did when the
 * list was written): a model that no longer does fails, naming it. */
Test(serialize, imported_models_compute_the_same_on_ref)
{
    static const char *const models[] = {
        "pytorch-converted/test_Conv2d",
        "pytorch-converted/test_Linear",
        "pytorch-converted/test_BatchNorm2d_eval",
        "pytorch-converted/test_Conv3d_dilated_strided",
        "pytorch-converted/test_Embedding",
        "node/test_gemm_default_matrix_bias",
        "node/test_qlinearmatmul_3D",
        "node/test_tfidfvectorizer_tf_uniandbigrams_skip5",
        "node/test_strnormalizer_export_monday_casesensintive_upper",
        "node/test_cast_FLOAT_to_STRING",
        "node/test_unique_sorted_with_axis_3d",
        "node/test_resize_upsample_scales_linear",
        "node/test_lstm_defaults",
        "node/test_if",
        "node/test_loop11",
        "node/test_scan9_sum",
        "node/test_range_float_type_positive_delta_expanded",
    };
    int ran = 0;
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", TESTDATA, models[m]);
        char path[600];
        snprintf(path, sizeof path, "%s/model.onnx", dir);
        graph *g = NULL;
        rn_status st = onnx_read_file(path, &g);
        cr_assert_eq(st, RN_OK, "%s: %s", dir, rn_last_error());
        graph_blob_header h = {.device = "REF", .arch = "generic"};
        graph_buffer blob = {0};
        cr_assert_eq(graph_blob_write(&h, g, &blob), RN_OK, "%s", rn_last_error());
        graph *back = NULL;
        cr_assert_eq(graph_blob_read(blob.data, blob.size, NULL, NULL, &back), RN_OK, "%s",
                     rn_last_error());
        graph_buffer_release(&blob);

        graph_tensor want[8] = {0}, got[8] = {0};
        int n = run_on_ref(g, dir, want, 8);
        cr_assert_gt(n, 0, "%s on REF: %s", models[m], rn_last_error());
        cr_assert_eq(run_on_ref(back, dir, got, 8), n, "%s", models[m]);
        ran++;
        for (int o = 0; o < n; o++) {
            char w[600];
            snprintf(w, sizeof w, "%s output %d", models[m], o);
            assert_tensor_equal(&want[o], &got[o], w);
            graph_tensor_release(&want[o]);
            graph_tensor_release(&got[o]);
        }
        graph_free(back);
        graph_free(g);
    }
    cr_assert_eq(ran, (int)(sizeof models / sizeof *models), "only %d models ran on REF", ran);
}

/* ---- a graph built with the graph API ---- */

static graph_value *value(graph *g, const char *name, rn_element_type type, int rank,
                          const int64_t *dims)
{
    graph_value *v = NULL;
    cr_assert_eq(graph_add_value(g, name, &v), RN_OK, "%s", rn_last_error());
    v->type = type;
    v->shape.rank = rank;
    for (int i = 0; i < rank; i++)
        v->shape.dims[i] = dims[i];
    return v;
}

static graph_tensor f32_tensor(int rank, const int64_t *dims, const float *data)
{
    graph_tensor t = {.type = RN_F32, .rank = rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    t.nbytes = graph_tensor_count(&t) * sizeof(float);
    t.data = malloc(t.nbytes ? t.nbytes : 1);
    if (t.nbytes)
        memcpy(t.data, data, t.nbytes);
    return t;
}

static graph_tensor string_tensor(int n, const char *const *s)
{
    graph_tensor t = {.type = RN_STRING, .rank = 1, .dims = {n}};
    t.nbytes = (size_t)n * sizeof(char *);
    char **d = calloc((size_t)n + 1, sizeof *d);
    for (int i = 0; i < n; i++)
        d[i] = strdup(s[i]);
    t.data = d;
    return t;
}

static graph_node *node(graph *g, const char *name, const char *op, int n_in, graph_value **ins,
                        int n_out, graph_value **outs)
{
    graph_node *n = NULL;
    cr_assert_eq(graph_add_node(g, name, "", op, 13, n_in, ins, n_out, outs, &n), RN_OK, "%s",
                 rn_last_error());
    return n;
}

static void add_attr(graph_node *n, graph_attr a)
{
    cr_assert_eq(graph_node_add_attr(n, &a), RN_OK, "%s", rn_last_error());
}

static char *xdup(const char *s)
{
    char *d = strdup(s);
    cr_assert_not_null(d);
    return d;
}

/* Control-flow ops are not in the op table yet, and subgraph attributes are
 * generic, so the graphs here hang their subgraphs on Identity nodes. */

/* A subgraph `name` of a node in `parent`: y = Add(x, c) where x and c live
 * in `outer` (an enclosing graph), through a nested subgraph one level down
 * when `nest` is set, so outer references cross more than one scope. */
static graph *branch(const char *name, graph *parent, graph *outer, bool nest)
{
    graph *b = NULL;
    cr_assert_eq(graph_create(name, &b), RN_OK);
    b->parent = parent;
    b->opset = 13;
    int64_t two = 2;
    char vn[64];
    snprintf(vn, sizeof vn, "%s_y", name);
    graph_value *y = value(b, vn, RN_F32, 1, &two);
    graph_value *x = graph_find_value(outer, "x", false), *c = graph_find_value(outer, "c", false);
    cr_assert(x != NULL && c != NULL);
    char nn[64];
    snprintf(nn, sizeof nn, "%s_add", name);
    if (!nest) {
        graph_value *ins[2] = {x, c};
        node(b, nn, "Add", 2, ins, 1, &y);
    } else {
        graph_value *cond = graph_find_value(outer, "cond", false);
        graph_node *n = node(b, nn, "Identity", 1, &cond, 1, &y);
        char sub[64];
        snprintf(sub, sizeof sub, "%s_then", name);
        add_attr(n, (graph_attr){.name = xdup("then_branch"),
                                 .type = GRAPH_ATTR_GRAPH,
                                 .g = branch(sub, b, outer, false)});
        snprintf(sub, sizeof sub, "%s_else", name);
        add_attr(n, (graph_attr){.name = xdup("else_branch"),
                                 .type = GRAPH_ATTR_GRAPH,
                                 .g = branch(sub, b, outer, false)});
    }
    cr_assert_eq(graph_add_output(b, y), RN_OK);
    return b;
}

/* cond, x -> "if" (branches reading x and c from the outer scope, one through
 * a nested subgraph) -> r; x -> Identity (every attribute type, several fused names)
 * -> id; plus a STRING constant and an empty constant. */
static graph *api_graph(void)
{
    graph *g = NULL;
    cr_assert_eq(graph_create("api", &g), RN_OK);
    g->opset = 13;
    g->ir_version = 8;
    int64_t two = 2, zero = 0;
    graph_value *cond = value(g, "cond", RN_BOOL, 0, NULL);
    graph_value *x = value(g, "x", RN_F32, 1, &two);
    graph_value *dyn = value(g, "dyn", RN_F32, 2, (int64_t[]){RN_DIM_DYNAMIC, 3});
    graph_value *unk = value(g, "unknown_rank", RN_UNDEFINED, -1, NULL);
    (void)unk;
    graph_value *c = value(g, "c", RN_F32, 1, &two);
    c->constant = malloc(sizeof *c->constant);
    *c->constant = f32_tensor(1, &two, (float[]){1.5f, -0.0f});
    graph_value *words = value(g, "words", RN_STRING, 1, (int64_t[]){3});
    words->constant = malloc(sizeof *words->constant);
    *words->constant = string_tensor(3, (const char *[]){"hello", "", "wörld"});
    graph_value *empty = value(g, "empty", RN_F32, 1, &zero);
    empty->constant = malloc(sizeof *empty->constant);
    *empty->constant = f32_tensor(1, &zero, NULL);
    graph_value *r = value(g, "r", RN_F32, 1, &two);
    graph_value *id = value(g, "id", RN_F32, 1, &two);
    cr_assert_eq(graph_add_input(g, cond), RN_OK);
    cr_assert_eq(graph_add_input(g, x), RN_OK);
    cr_assert_eq(graph_add_input(g, dyn), RN_OK);

    graph_node *n_if = node(g, "if", "Identity", 1, &cond, 1, &r);
    add_attr(n_if, (graph_attr){.name = xdup("then_branch"),
                                .type = GRAPH_ATTR_GRAPH,
                                .g = branch("then", g, g, true)});
    add_attr(n_if, (graph_attr){.name = xdup("else_branch"),
                                .type = GRAPH_ATTR_GRAPH,
                                .g = branch("else", g, g, false)});

    graph_node *n_id = node(g, "identity", "Identity", 1, &x, 1, &id);
    cr_assert_eq(graph_node_add_fused_name(n_id, "conv_1"), RN_OK);
    cr_assert_eq(graph_node_add_fused_name(n_id, "relu_1"), RN_OK);
    add_attr(n_id, (graph_attr){.name = xdup("f"), .type = GRAPH_ATTR_FLOAT, .f = -3.25f});
    add_attr(n_id, (graph_attr){.name = xdup("i"), .type = GRAPH_ATTR_INT, .i = INT64_MIN});
    add_attr(n_id, (graph_attr){.name = xdup("s"), .type = GRAPH_ATTR_STRING, .s = xdup("NOTSET")});
    graph_tensor *t = malloc(sizeof *t);
    *t = string_tensor(2, (const char *[]){"a", "bc"});
    add_attr(n_id, (graph_attr){.name = xdup("t"), .type = GRAPH_ATTR_TENSOR, .t = t});
    float *fl = malloc(3 * sizeof *fl);
    fl[0] = 1.0f, fl[1] = 2.5f, fl[2] = -7.0f;
    add_attr(
        n_id,
        (graph_attr){.name = xdup("floats"), .type = GRAPH_ATTR_FLOATS, .count = 3, .floats = fl});
    int64_t *in = malloc(2 * sizeof *in);
    in[0] = INT64_MAX, in[1] = -1;
    add_attr(n_id,
             (graph_attr){.name = xdup("ints"), .type = GRAPH_ATTR_INTS, .count = 2, .ints = in});
    char **ss = calloc(2, sizeof *ss);
    ss[0] = xdup("x"), ss[1] = xdup("");
    add_attr(n_id,
             (graph_attr){
                 .name = xdup("strings"), .type = GRAPH_ATTR_STRINGS, .count = 2, .strings = ss});
    graph_tensor *ts = calloc(2, sizeof *ts);
    ts[0] = f32_tensor(0, NULL, (float[]){42.0f});
    ts[1] = f32_tensor(2, (int64_t[]){1, 2}, (float[]){3.0f, 4.0f});
    add_attr(n_id,
             (graph_attr){
                 .name = xdup("tensors"), .type = GRAPH_ATTR_TENSORS, .count = 2, .tensors = ts});
    graph **gs = calloc(2, sizeof *gs);
    gs[0] = branch("list0", g, g, false);
    gs[1] = branch("list1", g, g, true);
    add_attr(
        n_id,
        (graph_attr){.name = xdup("graphs"), .type = GRAPH_ATTR_GRAPHS, .count = 2, .graphs = gs});
    add_attr(n_id, (graph_attr){.name = xdup("no_list"), .type = GRAPH_ATTR_INTS});

    cr_assert_eq(graph_add_output(g, r), RN_OK);
    cr_assert_eq(graph_add_output(g, id), RN_OK);
    cr_assert_eq(graph_add_output(g, x), RN_OK); /* an input that is also a result */
    cr_assert_eq(graph_sort(g), RN_OK, "%s", rn_last_error());
    cr_assert_eq(graph_validate(g), RN_OK, "%s", rn_last_error());
    return g;
}

Test(serialize, graph_api_subgraphs_and_every_attribute_type_round_trip)
{
    graph *g = api_graph();
    graph *back = round_trip(g);
    /* Outer references point into the rebuilt graphs, not the original. */
    const graph_attr *then = graph_node_attr(back->nodes[0], "then_branch");
    cr_assert_not_null(then);
    const graph_node *inner_if = then->g->nodes[0];
    const graph *inner_then = graph_node_attr(inner_if, "then_branch")->g;
    cr_assert_eq(inner_then->parent, then->g);
    cr_assert_eq(inner_then->nodes[0]->inputs[0], graph_find_value(back, "x", false));
    cr_assert_eq(inner_then->nodes[0]->inputs[1], graph_find_value(back, "c", false));
    graph_free(back);
    graph_free(g);
}

Test(serialize, a_clone_encodes_to_the_same_bytes)
{
    graph *g = api_graph(), *c = NULL;
    cr_assert_eq(graph_clone(g, &c), RN_OK);
    graph_buffer a = {0}, b = {0};
    cr_assert_eq(graph_serialize(g, &a), RN_OK);
    cr_assert_eq(graph_serialize(c, &b), RN_OK);
    cr_assert_eq(a.size, b.size);
    cr_assert_eq(memcmp(a.data, b.data, a.size), 0);
    graph_buffer_release(&a);
    graph_buffer_release(&b);
    graph_free(c);
    graph_free(g);
}

Test(serialize, refuses_a_node_reading_a_value_of_no_enclosing_scope)
{
    graph *g = api_graph(), *stranger = NULL;
    cr_assert_eq(graph_create("stranger", &stranger), RN_OK);
    graph_value *alien = value(stranger, "alien", RN_F32, 0, NULL);
    graph_node *n = graph_find_value(g, "id", false)->producer;
    n->inputs[0] = alien;
    graph_buffer buf = {.data = (uint8_t *)"sentinel", .size = 7};
    cr_assert_eq(graph_serialize(g, &buf), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "'alien'") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "identity") != NULL, "%s", rn_last_error());
    cr_assert_eq(buf.size, 7, "the out buffer is written only on success");
    graph_free(g);
    graph_free(stranger);
}

/* Subgraphs nested past the limit are refused by the encoder. */
Test(serialize, refuses_subgraphs_nested_too_deep)
{
    graph *g = NULL;
    cr_assert_eq(graph_create("top", &g), RN_OK);
    graph *cur = g;
    for (int depth = 0; depth <= GRAPH_SERIAL_MAX_DEPTH; depth++) {
        char name[32];
        snprintf(name, sizeof name, "n%d", depth);
        graph_node *n = node(cur, name, "If", 0, NULL, 0, NULL);
        graph *sub = NULL;
        cr_assert_eq(graph_create(name, &sub), RN_OK);
        sub->parent = cur;
        add_attr(n, (graph_attr){.name = xdup("then_branch"), .type = GRAPH_ATTR_GRAPH, .g = sub});
        cur = sub;
    }
    graph_buffer buf = {0};
    cr_assert_eq(graph_serialize(g, &buf), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "deeper") != NULL, "%s", rn_last_error());
    graph_free(g);
}

/* ---- bytes written by hand from docs/export.md ---- */

typedef struct bytes {
    uint8_t data[16384];
    size_t n;
} bytes;

static void b_raw(bytes *b, const void *p, size_t n)
{
    cr_assert_leq(b->n + n, sizeof b->data);
    memcpy(b->data + b->n, p, n);
    b->n += n;
}

static void b_u8(bytes *b, uint8_t x)
{
    b_raw(b, &x, 1);
}

static void b_u32(bytes *b, uint32_t x)
{
    uint8_t le[4] = {x & 0xff, (x >> 8) & 0xff, (x >> 16) & 0xff, x >> 24};
    b_raw(b, le, 4);
}

static void b_u64(bytes *b, uint64_t x)
{
    b_u32(b, (uint32_t)x);
    b_u32(b, (uint32_t)(x >> 32));
}

static void b_str(bytes *b, const char *s)
{
    b_u32(b, (uint32_t)strlen(s));
    b_raw(b, s, strlen(s));
}

/* A value: name, element type, rank, dims, flags (1 input, 2 constant). */
static void b_value(bytes *b, const char *name, uint32_t type, int rank, const int64_t *dims,
                    uint8_t flags)
{
    b_str(b, name);
    b_u32(b, type);
    b_u32(b, (uint32_t)rank);
    for (int i = 0; i < rank; i++)
        b_u64(b, (uint64_t)dims[i]);
    b_u8(b, flags);
}

/* x (f32 [2], input) -> Relu -> y (result), with Relu's input reference `ref`. */
static void b_relu_graph(bytes *b, int32_t ref)
{
    b_raw(b, "RNGR", 4);
    b_u32(b, 1); /* encoding version */
    b_str(b, "g");
    b_u32(b, 13); /* opset */
    b_u32(b, 8);  /* ir_version */
    b_u32(b, 2);  /* values */
    int64_t two = 2;
    b_value(b, "x", RN_F32, 1, &two, 1);
    b_value(b, "y", RN_F32, 1, &two, 0);
    b_u32(b, 0); /* outer references */
    b_u32(b, 1); /* nodes */
    b_str(b, "relu");
    b_str(b, "");
    b_str(b, "Relu");
    b_u32(b, 13);
    b_u32(b, 1);
    b_u32(b, (uint32_t)ref);
    b_u32(b, 1);
    b_u32(b, 1); /* output: value 1 */
    b_u32(b, 0); /* attributes */
    b_u32(b, 1); /* fused names */
    b_str(b, "relu");
    b_u32(b, 1); /* inputs */
    b_u32(b, 0);
    b_u32(b, 1); /* outputs */
    b_u32(b, 1);
}

Test(serialize, reads_a_graph_written_by_hand_from_the_documented_layout)
{
    bytes b = {0};
    b_relu_graph(&b, 0);
    graph *g = NULL;
    cr_assert_eq(graph_deserialize(b.data, b.n, &g), RN_OK, "%s", rn_last_error());
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_str_eq(g->nodes[0]->op_type, "Relu");
    cr_assert_eq(g->nodes[0]->inputs[0], g->inputs[0]);
    cr_assert_eq(g->outputs[0]->producer, g->nodes[0]);
    graph_free(g);
}

Test(serialize, an_out_of_range_reference_names_the_node_and_the_offset)
{
    bytes b = {0};
    b_relu_graph(&b, 7);
    /* Offset of the reference: the encoding up to it, counted from the layout. */
    size_t at = 4 + 4 + (4 + 1) + 4 + 4 + 4 + 2 * (4 + 1 + 4 + 4 + 8 + 1) + 4 + 4 + (4 + 4) +
                (4 + 0) + (4 + 4) + 4 + 4;
    graph *g = NULL;
    cr_assert_eq(graph_deserialize(b.data, b.n, &g), RN_PARSE_ERROR);
    char want[64];
    snprintf(want, sizeof want, "at byte %zu", at);
    cr_assert(strstr(rn_last_error(), "'relu' (Relu)") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "value 7") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), want) != NULL, "%s (wanted %s)", rn_last_error(), want);
}

Test(serialize, a_length_beyond_the_end_is_an_error_not_an_allocation)
{
    bytes b = {0};
    b_raw(&b, "RNGR", 4);
    b_u32(&b, 1);
    b_u32(&b, 0xfffffff0u); /* graph name length */
    graph *g = NULL;
    cr_assert_eq(graph_deserialize(b.data, b.n, &g), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "truncated") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "graph name") != NULL, "%s", rn_last_error());

    b.n = 0;
    b_raw(&b, "RNGR", 4);
    b_u32(&b, 1);
    b_str(&b, "g");
    b_u32(&b, 13);
    b_u32(&b, 8);
    b_u32(&b, 0x7fffffffu); /* value count */
    cr_assert_eq(graph_deserialize(b.data, b.n, &g), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "value count") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "at byte 21") != NULL, "%s", rn_last_error());
}

Test(serialize, refuses_another_encoding_version_and_trailing_bytes)
{
    bytes b = {0};
    b_relu_graph(&b, 0);
    b.data[4] = 2;
    graph *g = NULL;
    cr_assert_eq(graph_deserialize(b.data, b.n, &g), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "version 2") != NULL, "%s", rn_last_error());
    b.data[4] = 1;
    b_u8(&b, 0);
    cr_assert_eq(graph_deserialize(b.data, b.n, &g), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "1 bytes follow") != NULL, "%s", rn_last_error());
}

/* A chain of If nodes whose then_branch nests `levels` deep. */
static void b_nested(bytes *b, int levels)
{
    b_str(b, "g");
    b_u32(b, 13);
    b_u32(b, 8);
    b_u32(b, 0); /* values */
    b_u32(b, 0); /* outer references */
    if (levels == 0) {
        b_u32(b, 0); /* nodes */
    } else {
        b_u32(b, 1);
        b_str(b, "n");
        b_str(b, "");
        b_str(b, "If");
        b_u32(b, 13);
        b_u32(b, 0);
        b_u32(b, 0);
        b_u32(b, 1); /* attributes */
        b_str(b, "then_branch");
        b_u32(b, GRAPH_ATTR_GRAPH);
        b_u8(b, 1);
        b_nested(b, levels - 1);
        b_u32(b, 0); /* fused names */
    }
    b_u32(b, 0); /* inputs */
    b_u32(b, 0); /* outputs */
}

Test(serialize, refuses_bytes_nesting_subgraphs_too_deep)
{
    static bytes b;
    b_raw(&b, "RNGR", 4);
    b_u32(&b, 1);
    b_nested(&b, GRAPH_SERIAL_MAX_DEPTH + 1);
    graph *g = NULL;
    cr_assert_eq(graph_deserialize(b.data, b.n, &g), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "deeper") != NULL, "%s", rn_last_error());
}

/* ---- the container ---- */

static const char *const prop_keys[] = {"INFERENCE_PRECISION_HINT", "NUM_STREAMS"};
static const char *const prop_values[] = {"f32", "2"};

static graph_buffer api_blob(const char *device, const char *arch)
{
    graph *g = api_graph();
    graph_blob_header h = {
        .device = device, .arch = arch, .n_props = 2, .keys = prop_keys, .values = prop_values};
    graph_buffer blob = {0};
    cr_assert_eq(graph_blob_write(&h, g, &blob), RN_OK, "%s", rn_last_error());
    graph_free(g);
    return blob;
}

/* Reads a blob expecting failure; checks nothing was written out. */
static rn_status read_fails(const graph_buffer *blob, size_t size, const graph_blob_expect *ex)
{
    graph_blob_header h = {.device = "untouched"};
    graph *g = (graph *)&h;
    rn_status st = graph_blob_read(blob->data, size, ex, &h, &g);
    cr_assert_neq(st, RN_OK, "a bad blob of %zu bytes was accepted", size);
    cr_assert_str_eq(h.device, "untouched");
    cr_assert_eq(g, (graph *)&h);
    return st;
}

Test(blob, round_trip_returns_header_and_properties)
{
    graph_buffer blob = api_blob("REF", "x86_64");
    cr_assert_eq(memcmp(blob.data, "RNNLBLOB", 8), 0);
    graph_blob_expect ex = {.device = "REF", .arch = "x86_64"};
    graph_blob_header h = {0};
    graph *g = NULL;
    cr_assert_eq(graph_blob_read(blob.data, blob.size, &ex, &h, &g), RN_OK, "%s", rn_last_error());
    cr_assert_eq(h.format_version, GRAPH_BLOB_FORMAT_VERSION);
    cr_assert_str_eq(h.device, "REF");
    cr_assert_str_eq(h.arch, "x86_64");
    cr_assert_eq(h.n_props, 2);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_str_eq(h.keys[i], prop_keys[i]);
        cr_assert_str_eq(h.values[i], prop_values[i]);
    }
    graph *orig = api_graph();
    assert_graph_equal(orig, g);
    graph_free(orig);
    graph_free(g);
    graph_blob_header_release(&h);
    /* Header only, and no expectations at all. */
    cr_assert_eq(graph_blob_read(blob.data, blob.size, NULL, &h, NULL), RN_OK);
    cr_assert_str_eq(h.device, "REF");
    graph_blob_header_release(&h);
    graph_buffer_release(&blob);
}

Test(blob, rejects_wrong_magic)
{
    graph_buffer blob = api_blob("REF", "x86_64");
    blob.data[0] = 'X';
    cr_assert_eq(read_fails(&blob, blob.size, NULL), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "not a runnel export blob") != NULL, "%s", rn_last_error());
    graph_buffer_release(&blob);
}

Test(blob, rejects_another_format_version)
{
    graph_buffer blob = api_blob("REF", "x86_64");
    blob.data[8] = 9; /* format version, little-endian u32 after the magic */
    /* Re-seal so that only the version is wrong. */
    uint64_t sum = graph_hash_bytes(blob.data, blob.size - 8, 0);
    memcpy(blob.data + blob.size - 8, &sum, 8);
    cr_assert_eq(read_fails(&blob, blob.size, NULL), RN_UNSUPPORTED);
    char want[64];
    snprintf(want, sizeof want, "format version 9, this build reads %u", GRAPH_BLOB_FORMAT_VERSION);
    cr_assert(strstr(rn_last_error(), want) != NULL, "%s", rn_last_error());
    graph_buffer_release(&blob);
}

Test(blob, rejects_another_device)
{
    graph_buffer blob = api_blob("CPU", "x86_64");
    graph_blob_expect ex = {.device = "REF", .arch = "x86_64"};
    cr_assert_eq(read_fails(&blob, blob.size, &ex), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "blob is for device CPU, not REF") != NULL, "%s",
              rn_last_error());
    graph_buffer_release(&blob);
}

Test(blob, rejects_another_architecture)
{
    graph_buffer blob = api_blob("REF", "sm_90");
    graph_blob_expect ex = {.device = "REF", .arch = "sm_80"};
    cr_assert_eq(read_fails(&blob, blob.size, &ex), RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "architecture 'sm_90', not 'sm_80'") != NULL, "%s",
              rn_last_error());
    graph_buffer_release(&blob);
}

Test(blob, rejects_a_checksum_mismatch)
{
    graph_buffer blob = api_blob("REF", "x86_64");
    blob.data[blob.size / 2] ^= 0x10;
    cr_assert_eq(read_fails(&blob, blob.size, NULL), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "checksum mismatch") != NULL, "%s", rn_last_error());
    graph_buffer_release(&blob);
}

Test(blob, truncation_at_every_offset_is_an_error)
{
    graph_buffer blob = api_blob("REF", "x86_64");
    graph_blob_expect checked = {0}, unchecked = {.skip_checksum = true};
    for (size_t n = 0; n < blob.size; n++) {
        read_fails(&blob, n, &checked);
        read_fails(&blob, n, &unchecked);
    }
    /* The bare encoding too. */
    graph *g = api_graph(), *back = NULL;
    graph_buffer enc = {0};
    cr_assert_eq(graph_serialize(g, &enc), RN_OK);
    for (size_t n = 0; n < enc.size; n++) {
        back = NULL;
        cr_assert_neq(graph_deserialize(enc.data, n, &back), RN_OK, "%zu bytes accepted", n);
        cr_assert_null(back);
    }
    graph_buffer_release(&enc);
    graph_free(g);
    graph_buffer_release(&blob);
}

/* With the checksum off, single-byte corruption anywhere either fails with a
 * status or yields a graph that is valid and encodes again; with it on, every
 * corruption past the version is a checksum mismatch. */
Test(blob, random_single_byte_corruption_is_caught_or_harmless)
{
    graph_buffer blob = api_blob("REF", "x86_64");
    uint8_t *copy = malloc(blob.size);
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int rejected = 0, accepted = 0;
    for (int iter = 0; iter < 4000; iter++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17; /* xorshift64 */
        size_t at = (size_t)(rng % blob.size);
        uint8_t flip = (uint8_t)((rng >> 32) % 255 + 1);
        memcpy(copy, blob.data, blob.size);
        copy[at] ^= flip;
        if (at >= 12) {
            graph_blob_expect strict = {0};
            graph_buffer c = {.data = copy, .size = blob.size};
            read_fails(&c, blob.size, &strict);
            cr_assert(strstr(rn_last_error(), "checksum mismatch") != NULL, "%s", rn_last_error());
        }
        graph_blob_expect ex = {.skip_checksum = true};
        graph *g = NULL;
        graph_blob_header h = {0};
        rn_status st = graph_blob_read(copy, blob.size, &ex, &h, &g);
        if (st != RN_OK) {
            rejected++;
            cr_assert_neq(rn_last_error()[0], '\0');
            continue;
        }
        accepted++;
        cr_assert_eq(graph_validate(g), RN_OK, "byte %zu ^ %u: %s", at, flip, rn_last_error());
        graph_buffer again = {0};
        cr_assert_eq(graph_serialize(g, &again), RN_OK, "byte %zu: %s", at, rn_last_error());
        graph_buffer_release(&again);
        graph_free(g);
        graph_blob_header_release(&h);
    }
    cr_log_info("corruption: %d rejected by the decoder, %d harmless", rejected, accepted);
    cr_assert_gt(rejected, 1000);
    free(copy);
    graph_buffer_release(&blob);
}

/* ---- hashing ---- */

Test(hash, xxh64_matches_published_vectors)
{
    /* Blobs and cache keys written by earlier builds stay readable only while
     * this is exactly XXH64. Values from the xxHash and python-xxhash
     * documentation and the test tables of cespare/xxhash (Go). */
    cr_assert_eq(graph_hash_bytes("", 0, 0), 0xef46db3751d8e999ull);
    cr_assert_eq(graph_hash_bytes("", 0, 1), 0xd5afba1336a3be4bull, "the seed");
    cr_assert_eq(graph_hash_bytes("a", 1, 0), 0xd24ec4f1a98c6e5bull);
    cr_assert_eq(graph_hash_bytes("abc", 3, 0), 0x44bc2cf5ad770999ull);
    cr_assert_eq(graph_hash_bytes("asdf", 4, 0), 0x415872f599cea71eull);
    const char *s = "Nobody inspects the spammish repetition";
    cr_assert_eq(graph_hash_bytes(s, strlen(s), 0), 0xfbcea83c8a378bf1ull);
    /* One whole 32-byte stripe and nothing after it. */
    s = "0123456789abcdef0123456789abcdef";
    cr_assert_eq(graph_hash_bytes(s, strlen(s), 0), 0x642a94958e71e6c5ull);
    /* 63 bytes: a stripe, then the 8-, 4- and 1-byte tails. */
    s = "Call me Ishmael. Some years ago--never mind how long precisely-";
    cr_assert_eq(graph_hash_bytes(s, strlen(s), 0), 0x02a2e85470d6fd96ull);
    /* 74 bytes: two stripes. */
    s = "The quick brown fox jumps over the lazy dog http://i.imgur.com/VHQXScB.gif";
    cr_assert_eq(graph_hash_bytes(s, strlen(s), 0), 0x93267f9820452eadull);
}

/* Appends a string field of the layout (u32 length, bytes) to buf at *n. */
static void append_str(uint8_t *buf, size_t *n, const char *s)
{
    uint32_t len = (uint32_t)strlen(s);
    memcpy(buf + *n, &len, 4);
    memcpy(buf + *n + 4, s, len);
    *n += 4 + len;
}

Test(hash, graph_hash_is_xxh64_of_the_documented_key_layout)
{
    /* graph_hash streams its input in small pieces; the one-shot XXH64 of the
     * same bytes, laid out by hand from docs/export.md, must agree. */
    graph *g = api_graph();
    graph_buffer enc = {0};
    cr_assert_eq(graph_serialize(g, &enc), RN_OK, "%s", rn_last_error());
    const char *k[] = {"INFERENCE_PRECISION_HINT", "A", "EXECUTION_MODE_HINT"};
    const char *v[] = {"f32", "1", "PERFORMANCE"};
    uint8_t *buf = malloc(enc.size + 512);
    cr_assert_not_null(buf);
    size_t n = 0;
    memcpy(buf, "RNNLHASH", 8);
    n = 8;
    append_str(buf, &n, "REF");
    append_str(buf, &n, "x86_64");
    uint64_t n_props = 3;
    memcpy(buf + n, &n_props, 8);
    n += 8;
    const int sorted[] = {1, 2, 0}; /* by key */
    for (int i = 0; i < 3; i++) {
        append_str(buf, &n, k[sorted[i]]);
        append_str(buf, &n, v[sorted[i]]);
    }
    memcpy(buf + n, enc.data, enc.size);
    n += enc.size;
    uint64_t key = 0;
    cr_assert_eq(graph_hash(g, 3, k, v, "REF", "x86_64", &key), RN_OK, "%s", rn_last_error());
    cr_assert_eq(key, graph_hash_bytes(buf, n, 0),
                 "key %016" PRIx64 ", XXH64 of the layout %016" PRIx64, key,
                 graph_hash_bytes(buf, n, 0));
    /* A NULL architecture counts as "". */
    n = 8;
    append_str(buf, &n, "CPU");
    append_str(buf, &n, "");
    n_props = 0;
    memcpy(buf + n, &n_props, 8);
    n += 8;
    memcpy(buf + n, enc.data, enc.size);
    n += enc.size;
    cr_assert_eq(graph_hash(g, 0, NULL, NULL, "CPU", NULL, &key), RN_OK, "%s", rn_last_error());
    cr_assert_eq(key, graph_hash_bytes(buf, n, 0));
    free(buf);
    graph_buffer_release(&enc);
    graph_free(g);
}

Test(hash, graph_hash_is_stable_and_sensitive)
{
    graph *g = api_graph(), *c = NULL;
    const char *k[] = {"A", "B"}, *v[] = {"1", "2"};
    const char *k_rev[] = {"B", "A"}, *v_rev[] = {"2", "1"};
    const char *v_other[] = {"1", "3"};
    uint64_t h0, h1, h2;
    cr_assert_eq(graph_hash(g, 2, k, v, "REF", "x86_64", &h0), RN_OK);
    cr_assert_eq(graph_hash(g, 2, k, v, "REF", "x86_64", &h1), RN_OK);
    cr_assert_eq(h0, h1);
    cr_assert_eq(graph_hash(g, 2, k_rev, v_rev, "REF", "x86_64", &h1), RN_OK);
    cr_assert_eq(h0, h1, "property order must not matter");
    cr_assert_eq(graph_clone(g, &c), RN_OK);
    cr_assert_eq(graph_hash(c, 2, k, v, "REF", "x86_64", &h1), RN_OK);
    cr_assert_eq(h0, h1, "a clone hashes the same");
    cr_assert_eq(graph_hash(g, 2, k, v_other, "REF", "x86_64", &h2), RN_OK);
    cr_assert_neq(h0, h2, "a property value");
    cr_assert_eq(graph_hash(g, 2, k, v, "CPU", "x86_64", &h2), RN_OK);
    cr_assert_neq(h0, h2, "the device");
    cr_assert_eq(graph_hash(g, 2, k, v, "REF", "arm64", &h2), RN_OK);
    cr_assert_neq(h0, h2, "the architecture");
    cr_assert_eq(graph_hash(g, 1, k, v, "REF", "x86_64", &h2), RN_OK);
    cr_assert_neq(h0, h2, "the property set");
    ((float *)graph_find_value(c, "c", false)->constant->data)[1] = 1e-30f;
    cr_assert_eq(graph_hash(c, 2, k, v, "REF", "x86_64", &h2), RN_OK);
    cr_assert_neq(h0, h2, "a weight");
    graph_free(c);
    graph_free(g);
}

/* ---- cache files ---- */

static void temp_dir(char *buf, size_t size)
{
    const char *base = getenv("TEST_TMPDIR");
    snprintf(buf, size, "%s/cacheXXXXXX", base != NULL ? base : "/tmp");
    cr_assert_not_null(mkdtemp(buf));
}

/* Names in dir other than . and .., written space-separated into out. */
static int list_dir(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    out[0] = '\0';
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        n++;
        strncat(out, e->d_name, size - strlen(out) - 2);
        strcat(out, " ");
    }
    closedir(d);
    return n;
}

Test(cache, path_names_the_key_in_hex)
{
    char p[64];
    cr_assert_eq(graph_cache_path("/c", 0x0123456789abcdefull, p, sizeof p), RN_OK);
    cr_assert_str_eq(p, "/c/0123456789abcdef.rnblob");
    cr_assert_eq(graph_cache_path("/c", 1, p, 10), RN_INVALID_ARG);
}

Test(cache, load_of_a_missing_entry_is_not_found)
{
    char dir[256];
    temp_dir(dir, sizeof dir);
    void *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(graph_cache_load(dir, 42, &bytes, &size), RN_NOT_FOUND);
    cr_assert_null(bytes);
}

Test(cache, store_then_load_round_trips_and_a_second_store_replaces)
{
    char dir[256], names[512];
    temp_dir(dir, sizeof dir);
    graph_buffer blob = api_blob("REF", "x86_64");
    cr_assert_eq(graph_cache_store(dir, 7, blob.data, blob.size), RN_OK, "%s", rn_last_error());
    void *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(graph_cache_load(dir, 7, &bytes, &size), RN_OK);
    cr_assert_eq(size, blob.size);
    cr_assert_eq(memcmp(bytes, blob.data, size), 0);
    graph *g = NULL;
    cr_assert_eq(graph_blob_read(bytes, size, NULL, NULL, &g), RN_OK);
    graph_free(g);
    free(bytes);

    cr_assert_eq(graph_cache_store(dir, 7, "short", 5), RN_OK);
    cr_assert_eq(graph_cache_load(dir, 7, &bytes, &size), RN_OK);
    cr_assert_eq(size, 5);
    cr_assert_eq(memcmp(bytes, "short", 5), 0);
    free(bytes);
    /* Exactly one file: the entry, no temporary left behind. */
    cr_assert_eq(list_dir(dir, names, sizeof names), 1, "%s", names);
    cr_assert_str_eq(names, "0000000000000007.rnblob ");
    graph_buffer_release(&blob);
}

Test(cache, creates_missing_folders)
{
    char dir[256], deep[400];
    temp_dir(dir, sizeof dir);
    snprintf(deep, sizeof deep, "%s/a/b/c", dir);
    cr_assert_eq(graph_cache_store(deep, 1, "x", 1), RN_OK, "%s", rn_last_error());
    void *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(graph_cache_load(deep, 1, &bytes, &size), RN_OK);
    free(bytes);
}

Test(cache, a_failed_store_reports_the_path_and_leaves_nothing)
{
    char dir[256], file[400], names[512];
    temp_dir(dir, sizeof dir);
    /* The entry's name is taken by a non-empty folder: rename must fail. */
    char entry[400], inside[500];
    cr_assert_eq(graph_cache_path(dir, 3, entry, sizeof entry), RN_OK);
    cr_assert_eq(mkdir(entry, 0700), 0);
    snprintf(inside, sizeof inside, "%s/keep", entry);
    FILE *f = fopen(inside, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(graph_cache_store(dir, 3, "abc", 3), RN_IO_ERROR);
    cr_assert(strstr(rn_last_error(), "rename") != NULL, "%s", rn_last_error());
    cr_assert_eq(list_dir(dir, names, sizeof names), 1, "a temporary file was left: %s", names);
    /* A cache folder that is a file. */
    snprintf(file, sizeof file, "%s/plain", dir);
    f = fopen(file, "w");
    cr_assert_not_null(f);
    fclose(f);
    cr_assert_eq(graph_cache_store(file, 1, "x", 1), RN_IO_ERROR);
    cr_assert(strstr(rn_last_error(), "plain") != NULL, "%s", rn_last_error());
}

/* A reader polling the entry while it is replaced again and again sees one
 * whole version or the other, never a mix or a part. */
Test(cache, readers_never_see_a_partial_entry)
{
    char dir[256];
    temp_dir(dir, sizeof dir);
    enum { SIZE = 1 << 20, STORES = 40 };
    uint8_t *a = malloc(SIZE), *b = malloc(SIZE);
    memset(a, 'a', SIZE);
    memset(b, 'b', SIZE);
    cr_assert_eq(graph_cache_store(dir, 9, a, SIZE), RN_OK);
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0) {
        for (;;) {
            void *bytes = NULL;
            size_t size = 0;
            if (graph_cache_load(dir, 9, &bytes, &size) != RN_OK)
                _exit(1);
            const uint8_t *p = bytes;
            if (size != SIZE || (p[0] != 'a' && p[0] != 'b'))
                _exit(2);
            for (size_t i = 0; i < SIZE; i++)
                if (p[i] != p[0])
                    _exit(3);
            free(bytes);
        }
    }
    for (int i = 0; i < STORES; i++)
        cr_assert_eq(graph_cache_store(dir, 9, i % 2 ? a : b, SIZE), RN_OK);
    int status = 0;
    kill(child, SIGTERM);
    waitpid(child, &status, 0);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
              "the reader saw a bad entry (exit %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    free(a);
    free(b);
}

/* The CACHE_DIR flow: a miss, a store, a hit; then a corrupt entry and one
 * for another device are refused by graph_blob_read, and the recompiled blob
 * stored over them is read back. */
Test(cache, a_bad_or_stale_entry_is_replaced)
{
    char dir[256];
    temp_dir(dir, sizeof dir);
    graph *g = api_graph();
    const char *k[] = {"INFERENCE_PRECISION_HINT"}, *v[] = {"f32"};
    uint64_t key;
    cr_assert_eq(graph_hash(g, 1, k, v, "REF", "x86_64", &key), RN_OK);
    void *bytes = NULL;
    size_t size = 0;
    cr_assert_eq(graph_cache_load(dir, key, &bytes, &size), RN_NOT_FOUND);
    graph_buffer good = api_blob("REF", "x86_64"), foreign = api_blob("CPU", "x86_64");
    graph_blob_expect ex = {.device = "REF", .arch = "x86_64"};

    graph_buffer corrupt = api_blob("REF", "x86_64");
    corrupt.size -= 100; /* a torn write from some other tool */
    const graph_buffer *bad[] = {&corrupt, &foreign};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(graph_cache_store(dir, key, bad[i]->data, bad[i]->size), RN_OK);
        cr_assert_eq(graph_cache_load(dir, key, &bytes, &size), RN_OK);
        graph *back = NULL;
        cr_assert_neq(graph_blob_read(bytes, size, &ex, NULL, &back), RN_OK);
        free(bytes);
        cr_assert_eq(graph_cache_store(dir, key, good.data, good.size), RN_OK);
        cr_assert_eq(graph_cache_load(dir, key, &bytes, &size), RN_OK);
        cr_assert_eq(graph_blob_read(bytes, size, &ex, NULL, &back), RN_OK, "%s", rn_last_error());
        assert_graph_equal(g, back);
        graph_free(back);
        free(bytes);
    }
    graph_buffer_release(&corrupt);
    graph_buffer_release(&foreign);
    graph_buffer_release(&good);
    graph_free(g);
}
