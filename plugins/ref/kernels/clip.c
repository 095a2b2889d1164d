/* REF Clip: y = min(max(x, min), max). The bounds are optional scalar inputs
 * of x's type from opset 11, float attributes before; an omitted bound does
 * not clip. When min > max every element becomes max (the ONNX rule). NaN
 * stays NaN. Elements are moved, never recomputed, so no rounding occurs. */
#include <float.h>
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"

typedef void (*clip_fn)(const void *x, void *y, int64_t n, const void *lo, const void *hi);

#define DEF_CLIP(A, sfx, RN, S, CLS, LD, ST)                                                       \
    static void clip_##sfx(const void *xv, void *yv, int64_t n, const void *lov, const void *hiv)  \
    {                                                                                              \
        const S *x = xv;                                                                           \
        S *y = yv;                                                                                 \
        const S *lo = lov, *hi = hiv;                                                              \
        for (int64_t i = 0; i < n; i++) {                                                          \
            S v = x[i];                                                                            \
            if (lo != NULL && LD(v) < LD(*lo))                                                     \
                v = *lo;                                                                           \
            if (hi != NULL && LD(v) > LD(*hi))                                                     \
                v = *hi;                                                                           \
            y[i] = v;                                                                              \
        }                                                                                          \
    }
#define ENTRY_CLIP(A, sfx, RN, S, CLS, LD, ST) [RN] = clip_##sfx,
REF_TYPES_NUMERIC(DEF_CLIP, _)
static const clip_fn clip_fns[REF_NTYPES] = {REF_TYPES_NUMERIC(ENTRY_CLIP, _)};

static bool clip_supports(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if ((unsigned)t >= REF_NTYPES || clip_fns[t] == NULL) {
        *why = ref_why_type(0, t);
        return false;
    }
    for (int i = 1; i < node->n_inputs; i++) {
        if (node->inputs[i] != NULL && node->inputs[i]->type != t) {
            *why = ref_why_type(i, node->inputs[i]->type);
            return false;
        }
    }
    return true;
}

/* Points *bound at bound i (1 = min, 2 = max) converted into buf, or NULL when
 * the node does not give it. */
static rn_status get_bound(const plugin_kernel_args *args, int i, uint64_t *buf, const void **bound)
{
    const graph_node *node = args->node;
    rn_element_type t = args->inputs[0].type;
    *bound = NULL;
    if (node->opset < 11) {
        const char *name = i == 1 ? "min" : "max";
        const graph_attr *a = graph_node_attr(node, name);
        if (a != NULL) {
            float f = graph_node_attr_float(node, name, i == 1 ? -FLT_MAX : FLT_MAX);
            ref_convert(RN_F32, &f, t, buf, 1);
            *bound = buf;
        }
        return RN_OK;
    }
    if (i >= args->n_inputs || args->inputs[i].type == RN_UNDEFINED)
        return RN_OK;
    const graph_tensor *b = &args->inputs[i];
    if (b->type != t || graph_tensor_count(b) != 1 || b->data == NULL)
        return rn_set_error(
            RN_INVALID_ARG, "node '%s' (%s): input %d (%s) must be one %s element, got %zu of %s",
            node->name, node->op_type, i, i == 1 ? "min" : "max", rn_element_type_name(t),
            graph_tensor_count(b), rn_element_type_name(b->type));
    *bound = b->data;
    return RN_OK;
}

static rn_status clip_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if ((unsigned)x->type >= REF_NTYPES || clip_fns[x->type] == NULL || y->type != x->type ||
        graph_tensor_count(x) != graph_tensor_count(y))
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (%s): input type %s is not supported",
                            node->name, node->op_type, rn_element_type_name(x->type));
    uint64_t lo_buf = 0, hi_buf = 0;
    const void *lo, *hi;
    if ((st = get_bound(args, 1, &lo_buf, &lo)) != RN_OK ||
        (st = get_bound(args, 2, &hi_buf, &hi)) != RN_OK)
        return st;
    clip_fns[x->type](x->data, y->data, (int64_t)graph_tensor_count(x), lo, hi);
    return RN_OK;
}

REF_KERNEL(ref_kernel_clip, "Clip", clip_supports, clip_run)
