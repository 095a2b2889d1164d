/* REF MeanVarianceNormalization: Y = (X - mean) / (sqrt(var) + 1e-9), with
 * mean and population variance taken over `axes` (default [0, 2, 3]), as
 * the op's ONNX function defines it (note: epsilon is added to the standard
 * deviation, not to the variance). */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool mvn_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 1, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type)) {
        *why = "input X is not f32, f64, f16 or bf16";
        return false;
    }
    return true;
}

static rn_status mvn_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 1, false);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank;
    static const int64_t default_axes[] = {0, 2, 3};
    const int64_t *axes = default_axes;
    int n_axes = graph_node_attr_ints(node, "axes", &axes);
    if (n_axes < 0) {
        axes = default_axes;
        n_axes = 3;
    }
    bool reduced[RN_MAX_RANK] = {false};
    for (int i = 0; i < n_axes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || reduced[a])
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): axis %lld is out of range or repeated for rank "
                                "%d",
                                node->name, node->op_type, (long long)axes[i], r);
        reduced[a] = true;
    }
    /* Each output element belongs to the group named by its kept coordinates;
     * groups are numbered row-major over the kept dims. */
    size_t count = graph_tensor_count(x);
    int64_t n_groups = 1, group_size = 1;
    for (int d = 0; d < r; d++) {
        if (reduced[d])
            group_size *= x->dims[d];
        else
            n_groups *= x->dims[d];
    }
    double *v = ref_nn_to_f64(x->type, x->data, count);
    double *stats = ref_tmp_calloc((size_t)(n_groups > 0 ? n_groups : 1) * 2, sizeof(double));
    int64_t *group = ref_tmp_alloc((count ? count : 1) * sizeof(int64_t));
    if (!v || !stats || !group) {
        ref_tmp_free(v);
        ref_tmp_free(stats);
        ref_tmp_free(group);
        return ref_nn_oom(node);
    }
    int64_t idx[RN_MAX_RANK] = {0};
    for (size_t i = 0; i < count; i++) {
        int64_t g = 0;
        for (int d = 0; d < r; d++)
            if (!reduced[d])
                g = g * x->dims[d] + idx[d];
        group[i] = g;
        stats[2 * g] += v[i];
        for (int d = r - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[d])
                break;
            idx[d] = 0;
        }
    }
    for (int64_t g = 0; g < n_groups; g++)
        stats[2 * g] /= (double)(group_size > 0 ? group_size : 1);
    for (size_t i = 0; i < count; i++) {
        double dv = v[i] - stats[2 * group[i]];
        stats[2 * group[i] + 1] += dv * dv;
    }
    for (int64_t g = 0; g < n_groups; g++)
        stats[2 * g + 1] = sqrt(stats[2 * g + 1] / (double)(group_size > 0 ? group_size : 1));
    for (size_t i = 0; i < count; i++)
        v[i] = (v[i] - stats[2 * group[i]]) / (stats[2 * group[i] + 1] + 1e-9);
    ref_nn_from_f64(y->type, y->data, v, count);
    ref_tmp_free(v);
    ref_tmp_free(stats);
    ref_tmp_free(group);
    return RN_OK;
}

const plugin_kernel ref_kernel_mvn = {
    .domain = "",
    .op_type = "MeanVarianceNormalization",
    .impl_type = "ref",
    .supports = mvn_supports,
    .run = mvn_run,
};
