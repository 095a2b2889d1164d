/* REF pooling: MaxPool (with the optional Indices output), AveragePool,
 * GlobalAveragePool and GlobalMaxPool over 1 to 3 spatial dims.
 *
 * Each N x C plane is widened to double, pooled, and narrowed back, so one
 * loop serves f32, f64, f16, bf16 and MaxPool's i8 / u8. The output size
 * comes from shape inference (which applies ceil_mode); a window may then
 * reach past the padded input, and only positions inside the input are read.
 * Spatial dims are mapped to 3-D (D, H, W) by leading dims of size 1. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

typedef struct pool_geom {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int64_t in_n, out_n;
} pool_geom;

static bool pool_type_ok(rn_element_type t, bool allow_int8)
{
    return ref_nn_is_float(t) || (allow_int8 && (t == RN_I8 || t == RN_U8));
}

static bool pool_supports_common(const graph_node *node, bool allow_int8, bool window,
                                 const char **why)
{
    if (!ref_nn_node_ok(node, 1, why))
        return false;
    const graph_value *x = node->inputs[0];
    if (!pool_type_ok(x->type, allow_int8)) {
        *why = allow_int8 ? "input type is not f32, f64, f16, bf16, i8 or u8"
                          : "input type is not f32, f64, f16 or bf16";
        return false;
    }
    if (x->shape.rank >= 0 && (x->shape.rank < 3 || (window && x->shape.rank > 5))) {
        *why = window ? "input rank is not 3, 4 or 5 (1 to 3 spatial dims)"
                      : "input rank is below 3 (N x C x spatial dims)";
        return false;
    }
    if (window && x->shape.rank >= 0 && !ref_nn_window_attrs_ok(node, x->shape.rank - 2, why))
        return false;
    return true;
}

static bool maxpool_supports(const graph_node *node, const char **why)
{
    int64_t order = graph_node_attr_int(node, "storage_order", 0);
    if (order != 0 && order != 1) {
        *why = "storage_order is not 0 or 1";
        return false;
    }
    return pool_supports_common(node, true, true, why);
}

static bool avgpool_supports(const graph_node *node, const char **why)
{
    return pool_supports_common(node, false, true, why);
}

static bool global_pool_supports(const graph_node *node, const char **why)
{
    return pool_supports_common(node, false, false, why);
}

/* Widens n elements starting at element `off` into dst. */
static void pool_load(rn_element_type t, const void *data, size_t off, size_t n, double *dst)
{
    switch (t) {
    case RN_I8:
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const int8_t *)data)[off + i];
        break;
    case RN_U8:
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const uint8_t *)data)[off + i];
        break;
    case RN_F32:
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const float *)data)[off + i];
        break;
    default:
        for (size_t i = 0; i < n; i++)
            dst[i] = ref_nn_get(t, data, off + i);
        break;
    }
}

/* Narrows n doubles into elements [off, off + n). Integers are exact here
 * (MaxPool only copies input values). */
static void pool_store(rn_element_type t, void *data, size_t off, size_t n, const double *src)
{
    switch (t) {
    case RN_I8:
        for (size_t i = 0; i < n; i++)
            ((int8_t *)data)[off + i] = (int8_t)src[i];
        break;
    case RN_U8:
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)data)[off + i] = (uint8_t)src[i];
        break;
    case RN_F32:
        for (size_t i = 0; i < n; i++)
            ((float *)data)[off + i] = (float)src[i];
        break;
    default:
        for (size_t i = 0; i < n; i++)
            ref_nn_set(t, data, off + i, src[i]);
        break;
    }
}

static rn_status pool_geom_init(const plugin_kernel_args *args, pool_geom *g)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *y = &args->outputs[0];
    if (x->rank < 3 || x->rank > 5 || y->rank != x->rank || y->dims[0] != x->dims[0] ||
        y->dims[1] != x->dims[1])
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input rank %d / output rank %d; expected N x C x 1 "
                            "to 3 spatial dims in both",
                            node->name, node->op_type, x->rank, y->rank);
    ref_nn_window w;
    rn_status st = ref_nn_window_init(node, x, y, NULL, &w);
    if (st != RN_OK)
        return st;
    int lead = 3 - w.n;
    for (int i = 0; i < 3; i++) {
        int j = i - lead;
        g->in[i] = j >= 0 ? w.in[j] : 1;
        g->out[i] = j >= 0 ? w.out[j] : 1;
        g->k[i] = j >= 0 ? w.kernel[j] : 1;
        g->s[i] = j >= 0 ? w.stride[j] : 1;
        g->d[i] = j >= 0 ? w.dilation[j] : 1;
        g->pb[i] = j >= 0 ? w.pad_begin[j] : 0;
        g->pe[i] = j >= 0 ? w.pad_end[j] : 0;
    }
    g->in_n = g->in[0] * g->in[1] * g->in[2];
    g->out_n = g->out[0] * g->out[1] * g->out[2];
    return RN_OK;
}

/* Index of input position (id, ih, iw) within its plane: row-major, or
 * column-major over the real spatial dims when storage_order is 1. */
static int64_t pool_plane_index(const pool_geom *g, int n_spatial, bool col_major, int64_t id,
                                int64_t ih, int64_t iw)
{
    if (!col_major)
        return (id * g->in[1] + ih) * g->in[2] + iw;
    int64_t pos[3] = {id, ih, iw};
    int64_t idx = 0, scale = 1;
    for (int i = 3 - n_spatial; i < 3; i++) {
        idx += pos[i] * scale;
        scale *= g->in[i];
    }
    return idx;
}

typedef enum pool_kind { POOL_MAX, POOL_AVG } pool_kind;

/* Pools one plane x (in_n doubles) into y (out_n doubles). For MaxPool with
 * `indices`, writes each maximum's plane index (-1 for an empty window). */
static void pool_plane(const pool_geom *g, pool_kind kind, bool include_pad, int n_spatial,
                       bool col_major, const double *x, double *y, int64_t *indices)
{
    int64_t o = 0;
    for (int64_t od = 0; od < g->out[0]; od++) {
        for (int64_t oh = 0; oh < g->out[1]; oh++) {
            for (int64_t ow = 0; ow < g->out[2]; ow++, o++) {
                int64_t start[3] = {od * g->s[0] - g->pb[0], oh * g->s[1] - g->pb[1],
                                    ow * g->s[2] - g->pb[2]};
                double acc = 0.0;
                bool any = false;
                int64_t best = -1, count = 0, padded = 1;
                for (int i = 0; i < 3; i++) {
                    /* Window positions inside [-pb, in + pe): what count_include_pad counts. */
                    int64_t c = 0;
                    for (int64_t t = 0; t < g->k[i]; t++) {
                        int64_t p = start[i] + t * g->d[i];
                        if (p >= -g->pb[i] && p < g->in[i] + g->pe[i])
                            c++;
                    }
                    padded *= c;
                }
                for (int64_t td = 0; td < g->k[0]; td++) {
                    int64_t id = start[0] + td * g->d[0];
                    if (id < 0 || id >= g->in[0])
                        continue;
                    for (int64_t th = 0; th < g->k[1]; th++) {
                        int64_t ih = start[1] + th * g->d[1];
                        if (ih < 0 || ih >= g->in[1])
                            continue;
                        for (int64_t tw = 0; tw < g->k[2]; tw++) {
                            int64_t iw = start[2] + tw * g->d[2];
                            if (iw < 0 || iw >= g->in[2])
                                continue;
                            double v = x[(id * g->in[1] + ih) * g->in[2] + iw];
                            if (kind == POOL_AVG) {
                                acc += v;
                                count++;
                            } else if (!any || v > acc) {
                                acc = v;
                                best = pool_plane_index(g, n_spatial, col_major, id, ih, iw);
                            }
                            any = true;
                        }
                    }
                }
                if (kind == POOL_AVG) {
                    int64_t div = include_pad ? padded : count;
                    y[o] = div > 0 ? acc / (double)div : 0.0;
                } else {
                    y[o] = any ? acc : 0.0;
                    if (indices)
                        indices[o] = best;
                }
            }
        }
    }
}

static rn_status pool_run(plugin_kernel_args *args, pool_kind kind)
{
    rn_status args_st = ref_nn_args_ok(args, 1);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    pool_geom g = {0};
    rn_status st = pool_geom_init(args, &g);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    graph_tensor *ind = args->n_outputs > 1 && args->outputs[1].data ? &args->outputs[1] : NULL;
    bool include_pad = graph_node_attr_int(node, "count_include_pad", 0) != 0;
    bool col_major = graph_node_attr_int(node, "storage_order", 0) == 1;
    int n_spatial = x->rank - 2;
    int64_t planes = x->dims[0] * x->dims[1];
    double *xb = ref_tmp_alloc((size_t)(g.in_n > 0 ? g.in_n : 1) * sizeof(double));
    double *yb = ref_tmp_alloc((size_t)(g.out_n > 0 ? g.out_n : 1) * sizeof(double));
    if (!xb || !yb) {
        ref_tmp_free(xb);
        ref_tmp_free(yb);
        return ref_nn_oom(node);
    }
    for (int64_t p = 0; p < planes; p++) {
        pool_load(x->type, x->data, (size_t)(p * g.in_n), (size_t)g.in_n, xb);
        int64_t *ip = ind ? (int64_t *)ind->data + p * g.out_n : NULL;
        pool_plane(&g, kind, include_pad, n_spatial, col_major, xb, yb, ip);
        pool_store(y->type, y->data, (size_t)(p * g.out_n), (size_t)g.out_n, yb);
        /* Indices count over the whole input tensor; -1 stays for empty windows. */
        for (int64_t i = 0; ip && i < g.out_n; i++)
            if (ip[i] >= 0)
                ip[i] += p * g.in_n;
    }
    ref_tmp_free(xb);
    ref_tmp_free(yb);
    return RN_OK;
}

static rn_status maxpool_run(plugin_kernel_args *args)
{
    return pool_run(args, POOL_MAX);
}

static rn_status avgpool_run(plugin_kernel_args *args)
{
    return pool_run(args, POOL_AVG);
}

/* Global pools: one value per N x C plane. */
static rn_status global_pool_run(plugin_kernel_args *args, pool_kind kind)
{
    rn_status args_st = ref_nn_args_ok(args, 1);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if (x->rank < 2 || graph_tensor_count(y) != (size_t)(x->dims[0] * x->dims[1]))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output does not hold N x C values",
                            node->name, node->op_type);
    int64_t planes = x->dims[0] * x->dims[1];
    int64_t n = ref_nn_span(x->dims, 2, x->rank);
    double *xb = ref_tmp_alloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!xb)
        return ref_nn_oom(node);
    for (int64_t p = 0; p < planes; p++) {
        pool_load(x->type, x->data, (size_t)(p * n), (size_t)n, xb);
        double acc = kind == POOL_MAX ? (n > 0 ? xb[0] : 0.0) : 0.0;
        for (int64_t i = 0; i < n; i++) {
            if (kind == POOL_AVG)
                acc += xb[i];
            else if (xb[i] > acc || xb[i] != xb[i]) /* a NaN wins, as in numpy.max */
                acc = xb[i];
        }
        if (kind == POOL_AVG)
            acc = n > 0 ? acc / (double)n : 0.0;
        pool_store(y->type, y->data, (size_t)p, 1, &acc);
    }
    ref_tmp_free(xb);
    return RN_OK;
}

static rn_status global_avgpool_run(plugin_kernel_args *args)
{
    return global_pool_run(args, POOL_AVG);
}

static rn_status global_maxpool_run(plugin_kernel_args *args)
{
    return global_pool_run(args, POOL_MAX);
}

const plugin_kernel ref_kernel_maxpool = {
    .domain = "",
    .op_type = "MaxPool",
    .impl_type = "ref",
    .supports = maxpool_supports,
    .run = maxpool_run,
};

const plugin_kernel ref_kernel_averagepool = {
    .domain = "",
    .op_type = "AveragePool",
    .impl_type = "ref",
    .supports = avgpool_supports,
    .run = avgpool_run,
};

const plugin_kernel ref_kernel_global_averagepool = {
    .domain = "",
    .op_type = "GlobalAveragePool",
    .impl_type = "ref",
    .supports = global_pool_supports,
    .run = global_avgpool_run,
};

const plugin_kernel ref_kernel_global_maxpool = {
    .domain = "",
    .op_type = "GlobalMaxPool",
    .impl_type = "ref",
    .supports = global_pool_supports,
    .run = global_maxpool_run,
};
