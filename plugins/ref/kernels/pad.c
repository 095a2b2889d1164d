/* REF Pad: constant, reflect, edge and wrap modes, with negative pads
 * cropping. Each output axis gets a table mapping its positions to input
 * positions (-1: the constant); the walk over the output then copies one
 * element per position. Pads come from input 1 (opset >= 11) or the `pads`
 * (`paddings` in opset 1) attribute, axes from input 3 (opset 18), the
 * constant from input 2 or the `value` attribute (before opset 11). */
#include <stdlib.h>

#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/tmp.h"

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

static bool parse_mode(const char *s, pad_mode *mode)
{
    static const char *const names[] = {"constant", "reflect", "edge", "wrap"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *mode = (pad_mode)i;
            return true;
        }
    return false;
}

static bool supports_pad(const graph_node *node, const char **why)
{
    pad_mode mode;
    if (!parse_mode(graph_node_attr_string(node, "mode", "constant"), &mode)) {
        *why = "mode other than constant, reflect, edge, wrap";
        return false;
    }
    return ref_mv_supports_types(node, 1u | 1u << 2, why);
}

/* Input position for output position o on an axis of extent dim padded by
 * `begin` in front, or -1 for the constant. */
static int64_t source_pos(pad_mode mode, int64_t o, int64_t begin, int64_t dim)
{
    int64_t i = o - begin;
    if (i >= 0 && i < dim)
        return i;
    switch (mode) {
    case PAD_CONSTANT:
        return -1;
    case PAD_EDGE:
        return i < 0 ? 0 : dim - 1;
    case PAD_WRAP:
        return ((i % dim) + dim) % dim;
    case PAD_REFLECT:
    default: {
        if (dim == 1)
            return 0;
        int64_t period = 2 * (dim - 1);
        i = ((i % period) + period) % period;
        return i < dim ? i : period - i;
    }
    }
}

/* Writes the padding constant as one element of `type` into value[]. */
static rn_status constant_value(const plugin_kernel_args *args, rn_element_type type,
                                unsigned char *value)
{
    size_t esize = rn_element_type_size(type);
    memset(value, 0, esize);
    const graph_tensor *cv = ref_mv_opt_input(args, 2);
    if (cv) {
        if (cv->type != type || graph_tensor_count(cv) != 1)
            return rn_set_error(RN_TYPE_MISMATCH,
                                REF_MV_NODE_FMT "constant_value must be one %s element",
                                REF_MV_NODE_ARGS(args->node), rn_element_type_name(type));
        memcpy(value, cv->data, esize);
        return RN_OK;
    }
    ref_mv_store_double(type, value, 0, graph_node_attr_float(args->node, "value", 0.0f));
    return RN_OK;
}

static rn_status run_pad(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    pad_mode mode = PAD_CONSTANT;
    parse_mode(graph_node_attr_string(node, "mode", "constant"), &mode);
    ref_mv_list pads = ref_mv_get_list(args, 1, node->opset < 2 ? "paddings" : "pads");
    ref_mv_list axes = ref_mv_get_list(args, 3, "axes");
    int n_axes = axes.n >= 0 ? axes.n : x->rank;
    if (pads.n != 2 * n_axes || n_axes > x->rank || y->rank != x->rank)
        return rn_set_error(RN_INVALID_ARG,
                            REF_MV_NODE_FMT "%d pads for %d axes of a rank-%d input",
                            REF_MV_NODE_ARGS(node), pads.n, n_axes, x->rank);
    int64_t begin[RN_MAX_RANK] = {0};
    for (int i = 0; i < n_axes; i++) {
        int64_t a = axes.n >= 0 ? ref_mv_list_at(&axes, i) : i;
        a = a < 0 ? a + x->rank : a;
        if (a < 0 || a >= x->rank)
            return rn_set_error(RN_INVALID_ARG, REF_MV_NODE_FMT "axis %lld out of range",
                                REF_MV_NODE_ARGS(node), (long long)ref_mv_list_at(&axes, i));
        begin[a] = ref_mv_list_at(&pads, i);
    }
    size_t count = graph_tensor_count(y), esize = rn_element_type_size(x->type);
    if (count == 0)
        return RN_OK;
    if (mode != PAD_CONSTANT && graph_tensor_count(x) == 0)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            REF_MV_NODE_FMT "cannot pad an empty input in mode '%s'",
                            REF_MV_NODE_ARGS(node), graph_node_attr_string(node, "mode", ""));
    unsigned char value[16];
    REF_MV_TRY(constant_value(args, x->type, value));

    /* One table per axis, all in one allocation. */
    size_t total = 0;
    for (int d = 0; d < y->rank; d++)
        total += (size_t)y->dims[d];
    int64_t *table = ref_tmp_alloc((total ? total : 1) * sizeof *table), *map[RN_MAX_RANK];
    if (!table)
        return rn_set_error(RN_OUT_OF_MEMORY, REF_MV_NODE_FMT "out of memory",
                            REF_MV_NODE_ARGS(node));
    int64_t strides[RN_MAX_RANK];
    plugin_strides(x->rank, x->dims, strides);
    size_t at = 0;
    for (int d = 0; d < y->rank; at += (size_t)y->dims[d], d++) {
        map[d] = table + at;
        for (int64_t o = 0; o < y->dims[d]; o++) {
            int64_t p = source_pos(mode, o, begin[d], x->dims[d]);
            map[d][o] = p < 0 ? -1 : p * strides[d];
        }
    }
    int64_t pos[RN_MAX_RANK] = {0};
    char *dst = y->data;
    for (size_t i = 0; i < count; i++, dst += esize) {
        int64_t off = 0;
        for (int d = 0; d < y->rank && off >= 0; d++)
            off = map[d][pos[d]] < 0 ? -1 : off + map[d][pos[d]];
        memcpy(dst, off < 0 ? (const char *)value : (const char *)x->data + (size_t)off * esize,
               esize);
        for (int d = y->rank - 1; d >= 0 && ++pos[d] == y->dims[d]; d--)
            pos[d] = 0;
    }
    ref_tmp_free(table);
    return RN_OK;
}

const plugin_kernel ref_kernel_pad = {
    .domain = "",
    .op_type = "Pad",
    .impl_type = "ref",
    .supports = supports_pad,
    .run = run_pad,
};
