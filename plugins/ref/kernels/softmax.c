/* REF Softmax and LogSoftmax.
 *
 * Before opset 13 the input is coerced to 2-D at `axis` (default 1) and each
 * row of the flattened trailing dims is normalised; from opset 13 only the
 * one `axis` (default -1) is. Both are an (outer, n, inner) walk: coerced,
 * inner is 1 and n spans every trailing dim. The maximum is subtracted
 * before exponentiating, in double, so large inputs do not overflow. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool softmax_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 1, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type)) {
        *why = "input type is not f32, f64, f16 or bf16";
        return false;
    }
    return true;
}

static rn_status softmax_common(plugin_kernel_args *args, bool log_form)
{
    rn_status args_st = ref_nn_args_ok(args, 1);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank;
    int64_t axis = graph_node_attr_int(node, "axis", node->opset < 13 ? 1 : -1);
    if (r < 1 || axis < -r || axis >= r)
        return rn_set_error(RN_INVALID_ARG, "node '%s' (%s): axis %lld is out of range for rank %d",
                            node->name, node->op_type, (long long)axis, r);
    int ax = (int)(axis < 0 ? axis + r : axis);
    int64_t outer = ref_nn_span(x->dims, 0, ax), n, inner;
    if (node->opset < 13) {
        n = ref_nn_span(x->dims, ax, r);
        inner = 1;
    } else {
        n = x->dims[ax];
        inner = ref_nn_span(x->dims, ax + 1, r);
    }
    size_t count = graph_tensor_count(x);
    double *v = ref_nn_to_f64(x->type, x->data, count);
    if (!v)
        return ref_nn_oom(node);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            double *row = v + o * n * inner + in;
            double mx = -INFINITY, sum = 0.0;
            for (int64_t i = 0; i < n; i++)
                mx = row[i * inner] > mx ? row[i * inner] : mx;
            for (int64_t i = 0; i < n; i++)
                sum += exp(row[i * inner] - mx);
            double log_sum = log(sum);
            for (int64_t i = 0; i < n; i++) {
                double z = row[i * inner] - mx;
                row[i * inner] = log_form ? z - log_sum : exp(z) / sum;
            }
        }
    }
    ref_nn_from_f64(y->type, y->data, v, count);
    ref_tmp_free(v);
    return RN_OK;
}

static rn_status softmax_run(plugin_kernel_args *args)
{
    return softmax_common(args, false);
}

static rn_status logsoftmax_run(plugin_kernel_args *args)
{
    return softmax_common(args, true);
}

const plugin_kernel ref_kernel_softmax = {
    .domain = "",
    .op_type = "Softmax",
    .impl_type = "ref",
    .supports = softmax_supports,
    .run = softmax_run,
};

const plugin_kernel ref_kernel_logsoftmax = {
    .domain = "",
    .op_type = "LogSoftmax",
    .impl_type = "ref",
    .supports = softmax_supports,
    .run = logsoftmax_run,
};
