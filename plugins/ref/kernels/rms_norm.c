/* REF RMSNormalization (opset 23): each row of the dims [axis, rank) is
 * divided by sqrt(mean(x^2) + epsilon), then multiplied by scale, which
 * broadcasts one-way (numpy style) to those dims. Computed in double, which
 * is at least as precise as any stash_type. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool rms_norm_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    if (node->n_inputs < 2 || node->inputs[1] == NULL) {
        *why = "input scale is missing";
        return false;
    }
    if (!ref_nn_is_float(node->inputs[0]->type) || !ref_nn_is_float(node->inputs[1]->type)) {
        *why = "X and scale must be f32, f64, f16 or bf16";
        return false;
    }
    if (!ref_nn_is_float((rn_element_type)graph_node_attr_int(node, "stash_type", 1))) {
        *why = "stash_type is not a float type";
        return false;
    }
    return true;
}

/* Expands scale (broadcast one-way to the nd trailing dims of x) into n
 * doubles. */
static rn_status rms_norm_scale(const graph_node *node, const graph_tensor *x, int axis,
                                const graph_tensor *p, int64_t n, double *dst)
{
    int nd = x->rank - axis;
    bool ok = p->rank <= nd;
    for (int d = 0; ok && d < p->rank; d++) {
        int64_t pd = p->dims[d], xd = x->dims[x->rank - p->rank + d];
        ok = pd == 1 || pd == xd;
    }
    if (!ok)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): scale of rank %d does not broadcast to the %d "
                            "normalized dims",
                            node->name, node->op_type, p->rank, nd);
    int64_t idx[RN_MAX_RANK] = {0}, stride[RN_MAX_RANK];
    int64_t s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        int pd = d - (nd - p->rank);
        int64_t dim = pd >= 0 ? p->dims[pd] : 1;
        stride[d] = dim == 1 ? 0 : s;
        s *= dim;
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
            off += idx[d] * stride[d];
        dst[j] = ref_nn_get(p->type, p->data, (size_t)off);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[axis + d])
                break;
            idx[d] = 0;
        }
    }
    return RN_OK;
}

static rn_status rms_norm_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0], *scale = &args->inputs[1];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank;
    int64_t axis = graph_node_attr_int(node, "axis", -1);
    double eps = graph_node_attr_float(node, "epsilon", 1e-5f);
    if (r < 1 || axis < -r || axis >= r)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): axis %lld is out of range for rank %d",
                            node->name, node->op_type, (long long)axis, r);
    int ax = (int)(axis < 0 ? axis + r : axis);
    int64_t outer = ref_nn_span(x->dims, 0, ax), n = ref_nn_span(x->dims, ax, r);
    size_t count = graph_tensor_count(x);
    double *v = ref_nn_to_f64(x->type, x->data, count);
    double *sc = ref_tmp_alloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    rn_status st = v && sc ? RN_OK : ref_nn_oom(node);
    if (st == RN_OK)
        st = rms_norm_scale(node, x, ax, scale, n, sc);
    for (int64_t o = 0; st == RN_OK && o < outer; o++) {
        double *row = v + o * n, s2 = 0.0;
        for (int64_t j = 0; j < n; j++)
            s2 += row[j] * row[j];
        double inv = 1.0 / sqrt((n > 0 ? s2 / (double)n : 0.0) + eps);
        for (int64_t j = 0; j < n; j++)
            row[j] = row[j] * inv * sc[j];
    }
    if (st == RN_OK)
        ref_nn_from_f64(y->type, y->data, v, count);
    ref_tmp_free(v);
    ref_tmp_free(sc);
    return st;
}

const plugin_kernel ref_kernel_rms_norm = {
    .domain = "",
    .op_type = "RMSNormalization",
    .impl_type = "ref",
    .supports = rms_norm_supports,
    .run = rms_norm_run,
};
