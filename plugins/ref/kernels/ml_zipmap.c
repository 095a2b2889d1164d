/* REF ZipMap (ai.onnx.ml), as ONNX Runtime computes it: X [N, C] (a 1-D X
 * is one row) becomes a sequence of N maps, row r mapping class label c
 * (classlabels_strings or classlabels_int64s, in order) to X[r, c]. Each map
 * owns a copy of the labels as its keys and of the row as its values. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/ml.h"

static bool zipmap_supports(const graph_node *node, const char **why)
{
    if (node->inputs[0] == NULL || node->inputs[0]->type != RN_F32) {
        *why = "X must be f32";
        return false;
    }
    return true;
}

/* The keys of one map: a 1-D tensor of the n labels (copies). */
static rn_status make_keys(const graph_node *node, const graph_attr *labels, bool strings,
                           graph_tensor *keys)
{
    size_t n = (size_t)labels->count;
    *keys = (graph_tensor){.type = strings ? RN_STRING : RN_I64, .rank = 1, .dims = {(int64_t)n}};
    keys->nbytes = n * (strings ? sizeof(char *) : sizeof(int64_t));
    if ((keys->data = calloc(1, keys->nbytes ? keys->nbytes : 1)) == NULL)
        return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    if (!strings) {
        memcpy(keys->data, labels->ints, keys->nbytes);
        return RN_OK;
    }
    for (size_t i = 0; i < n; i++)
        if ((((char **)keys->data)[i] = strdup(labels->strings[i])) == NULL)
            return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    return RN_OK;
}

/* Map r of the sequence: the labels as keys, row r of X as values. */
static rn_status make_map(const graph_node *node, const graph_attr *labels, bool strings,
                          const float *row, graph_tensor *map)
{
    size_t n = (size_t)labels->count;
    *map = (graph_tensor){.kind = GRAPH_KIND_MAP, .type = RN_F32};
    if ((map->items = calloc(2, sizeof *map->items)) == NULL)
        return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    map->n_items = 2;
    rn_status st = make_keys(node, labels, strings, &map->items[0]);
    if (st != RN_OK)
        return st;
    graph_tensor *v = &map->items[1];
    *v = (graph_tensor){.type = RN_F32, .rank = 1, .dims = {(int64_t)n}, .nbytes = n * 4};
    if ((v->data = malloc(n ? n * 4 : 1)) == NULL)
        return ref_contrib_error(node, RN_OUT_OF_MEMORY, "out of memory");
    memcpy(v->data, row, n * 4);
    return RN_OK;
}

static rn_status zipmap_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_attr *labels = graph_node_attr(node, "classlabels_strings");
    bool strings = labels != NULL && labels->count > 0;
    if (!strings)
        labels = graph_node_attr(node, "classlabels_int64s");
    if (labels == NULL || labels->count == 0)
        return ref_contrib_error(node, RN_INVALID_ARG,
                                 "no class labels (classlabels_strings or classlabels_int64s)");
    const graph_tensor *x = &args->inputs[0];
    int64_t rows, cols;
    rn_status st = ref_ml_rows(node, x, &rows, &cols);
    if (st != RN_OK)
        return st;
    if (cols != labels->count)
        return ref_contrib_error(node, RN_SHAPE_MISMATCH, "X has %lld columns for %d labels",
                                 (long long)cols, labels->count);
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE_MAP, .type = RN_F32};
    for (int64_t r = 0; r < rows && st == RN_OK; r++) {
        graph_tensor map;
        st = make_map(node, labels, strings, (const float *)x->data + r * cols, &map);
        if (st == RN_OK)
            st = graph_sequence_append(&seq, &map);
        if (st != RN_OK)
            graph_tensor_release(&map);
    }
    if (st == RN_OK)
        st = args->move_output(args, 0, &seq);
    graph_tensor_release(&seq);
    return st;
}

const plugin_kernel ref_kernel_ml_zipmap = {
    .domain = "ai.onnx.ml",
    .op_type = "ZipMap",
    .impl_type = "ref",
    .supports = zipmap_supports,
    .run = zipmap_run,
    .values = true,
};
