/* REF BatchNormalization.
 *
 * Inference: y = (x - mean) / sqrt(var + epsilon) * scale + B per channel,
 * folded into y = x * a + b. Opset 7's spatial=0 gives every element of a
 * sample (C x D1 x ...) its own parameters. From opset 14, training_mode=1
 * normalises with the batch's own mean and (population) variance and writes
 * running_mean / running_var = input * momentum + batch * (1 - momentum), as
 * ONNX defines it. The training outputs of opsets 7-9 (mean, var,
 * saved_mean, saved_var) are not produced: such nodes are unsupported. */
#include <math.h>
#include <stdlib.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool batchnorm_training(const graph_node *node)
{
    return node->opset >= 14 && graph_node_attr_int(node, "training_mode", 0) == 1;
}

static bool batchnorm_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 5, why))
        return false;
    for (int i = 0; i < node->n_inputs; i++) {
        if (node->inputs[i] == NULL || !ref_nn_is_float(node->inputs[i]->type)) {
            *why = "an input is missing or not f32, f64, f16 or bf16";
            return false;
        }
    }
    if (node->opset < 14) {
        for (int o = 1; o < node->n_outputs; o++) {
            if (node->outputs[o] != NULL) {
                *why = "training outputs (mean, var, saved_mean, saved_var) before opset 14";
                return false;
            }
        }
    }
    return true;
}

static rn_status batchnorm_run(plugin_kernel_args *args)
{
    rn_status args_st = ref_nn_args_ok(args, 5);
    if (args_st != RN_OK)
        return args_st;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if (x->rank < 2 || args->n_inputs < 5)
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): input rank %d; at least 2 needed",
                            node->name, node->op_type, x->rank);
    bool spatial = graph_node_attr_int(node, "spatial", 1) != 0;
    bool training = batchnorm_training(node);
    double eps = graph_node_attr_float_or_default(node, "epsilon");
    double momentum = graph_node_attr_float_or_default(node, "momentum");
    int64_t batch = x->dims[0], channels = x->dims[1];
    int64_t inner = ref_nn_span(x->dims, 2, x->rank);
    int64_t n_params = spatial ? channels : channels * inner;
    /* Parameters: scale, B, mean, var. */
    double *p[4] = {NULL, NULL, NULL, NULL};
    double *a = ref_tmp_alloc((size_t)(n_params > 0 ? n_params : 1) * 2 * sizeof(double));
    rn_status st = a ? RN_OK : ref_nn_oom(node);
    for (int i = 0; st == RN_OK && i < 4; i++) {
        const graph_tensor *t = &args->inputs[1 + i];
        if ((int64_t)graph_tensor_count(t) != n_params)
            st = rn_set_error(
                RN_SHAPE_MISMATCH, "node '%s' (%s): input %d holds %zu values; expected %lld",
                node->name, node->op_type, 1 + i, graph_tensor_count(t), (long long)n_params);
        else if (!(p[i] = ref_nn_to_f64(t->type, t->data, (size_t)n_params)))
            st = ref_nn_oom(node);
    }
    double *xv = NULL;
    if (st == RN_OK && (x->type != RN_F32 || y->type != RN_F32 || training)) {
        xv = ref_nn_to_f64(x->type, x->data, graph_tensor_count(x));
        if (!xv)
            st = ref_nn_oom(node);
    }
    if (st != RN_OK)
        goto done;
    double *b = a + n_params;
    double *mean = p[2], *var = p[3];
    double *batch_mean = NULL, *batch_var = NULL;
    if (training) {
        /* Per-channel batch statistics (spatial is always 1 from opset 9). */
        batch_mean = ref_tmp_calloc((size_t)(channels > 0 ? channels : 1) * 2, sizeof(double));
        if (!batch_mean) {
            st = ref_nn_oom(node);
            goto done;
        }
        batch_var = batch_mean + channels;
        double cnt = (double)(batch * inner);
        for (int64_t c = 0; c < channels; c++) {
            double s = 0.0, s2 = 0.0;
            for (int64_t n = 0; n < batch; n++)
                for (int64_t i = 0; i < inner; i++)
                    s += xv[(n * channels + c) * inner + i];
            double mu = cnt > 0 ? s / cnt : 0.0;
            for (int64_t n = 0; n < batch; n++) {
                for (int64_t i = 0; i < inner; i++) {
                    double d = xv[(n * channels + c) * inner + i] - mu;
                    s2 += d * d;
                }
            }
            batch_mean[c] = mu;
            batch_var[c] = cnt > 0 ? s2 / cnt : 0.0;
        }
        mean = batch_mean;
        var = batch_var;
    }
    for (int64_t i = 0; i < n_params; i++) {
        a[i] = p[0][i] / sqrt(var[i] + eps);
        b[i] = p[1][i] - mean[i] * a[i];
    }
    int64_t plane = spatial ? inner : 1; /* elements sharing one parameter */
    int64_t per_sample = channels * inner;
    if (xv == NULL) {
        const float *xs = x->data;
        float *ys = y->data;
        for (int64_t n = 0; n < batch; n++) {
            for (int64_t q = 0; q < n_params; q++) {
                int64_t off = n * per_sample + q * plane;
                ref_nn_scale_shift_f32(plane, xs + off, (float)a[q], (float)b[q], ys + off);
            }
        }
    } else {
        for (int64_t n = 0; n < batch; n++) {
            for (int64_t q = 0; q < n_params; q++) {
                double *v = xv + n * per_sample + q * plane;
                for (int64_t i = 0; i < plane; i++)
                    v[i] = v[i] * a[q] + b[q];
            }
        }
        ref_nn_from_f64(y->type, y->data, xv, graph_tensor_count(x));
    }
    /* running_mean / running_var (opset 14+): updated in training, else the inputs. */
    for (int o = 1; o < 3 && o < args->n_outputs; o++) {
        graph_tensor *out = &args->outputs[o];
        if (out->data == NULL)
            continue;
        if ((int64_t)graph_tensor_count(out) != n_params) {
            st = rn_set_error(RN_SHAPE_MISMATCH,
                              "node '%s' (%s): output %d holds %zu values; "
                              "expected %lld",
                              node->name, node->op_type, o, graph_tensor_count(out),
                              (long long)n_params);
            break;
        }
        const double *running = p[o + 1];
        const double *current = o == 1 ? batch_mean : batch_var;
        for (int64_t i = 0; i < n_params; i++) {
            double v =
                training ? running[i] * momentum + current[i] * (1.0 - momentum) : running[i];
            ref_nn_set(out->type, out->data, (size_t)i, v);
        }
    }
    ref_tmp_free(batch_mean);
done:
    for (int i = 0; i < 4; i++)
        ref_tmp_free(p[i]);
    ref_tmp_free(a);
    ref_tmp_free(xv);
    return st;
}

const plugin_kernel ref_kernel_batchnorm = {
    .domain = "",
    .op_type = "BatchNormalization",
    .impl_type = "ref",
    .supports = batchnorm_supports,
    .run = batchnorm_run,
};
