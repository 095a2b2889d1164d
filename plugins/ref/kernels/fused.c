/* runnel's fused ops on REF (the oracle for the fusions of
 * transforms/fuse_conv.c): FusedConv is Conv, plus the residual (input 3),
 * then the activation; FusedGemm and FusedBatchNormalization are Gemm and
 * BatchNormalization, then the activation. The
 * activation is named by its ONNX op with its parameters in
 * activation_params, and computed here in f32 as ONNX defines it. */
#include <math.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"

extern const plugin_kernel ref_kernel_conv;
extern const plugin_kernel ref_kernel_gemm;
extern const plugin_kernel ref_kernel_batchnorm;
extern const plugin_kernel ref_kernel_matmul;

/* p[0..n): the activation's parameters, completed with its op's defaults
 * (rn_activation_params); only Clip's bounds may be missing. */
static float activate(const char *op, const float *p, int n, float x)
{
#define P(i, d) (n > (i) ? p[i] : (d))
    if (strcmp(op, "Relu") == 0)
        return x > 0.0f ? x : 0.0f;
    if (strcmp(op, "LeakyRelu") == 0)
        return x >= 0.0f ? x : p[0] * x;
    if (strcmp(op, "Elu") == 0)
        return x >= 0.0f ? x : p[0] * (expf(x) - 1.0f);
    if (strcmp(op, "Sigmoid") == 0)
        return 1.0f / (1.0f + expf(-x));
    if (strcmp(op, "Tanh") == 0)
        return tanhf(x);
    if (strcmp(op, "HardSigmoid") == 0)
        return fmaxf(0.0f, fminf(1.0f, p[0] * x + p[1]));
    if (strcmp(op, "HardSwish") == 0)
        return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    if (strcmp(op, "Clip") == 0)
        return fminf(fmaxf(x, P(0, -INFINITY)), P(1, INFINITY));
    if (strcmp(op, "Gelu") == 0)
        return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2));
    if (strcmp(op, "GeluTanh") == 0)
        return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    if (strcmp(op, "Mish") == 0)
        return x * tanhf(log1pf(expf(x)));
#undef P
    return x;
}

static bool known(const char *op)
{
    static const char *const ops[] = {"Relu", "LeakyRelu",   "Elu",       "Sigmoid",
                                      "Tanh", "HardSigmoid", "HardSwish", "Clip",
                                      "Gelu", "GeluTanh",    "Mish"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

static bool epilogue_supports(const graph_node *node, const char **why)
{
    const char *act = graph_node_attr_string(node, "activation", NULL);
    if (act != NULL && !known(act)) {
        *why = "unknown activation";
        return false;
    }
    if (node->outputs[0] == NULL || node->outputs[0]->type != RN_F32) {
        *why = "f32 only";
        return false;
    }
    return true;
}

static bool fused_conv_supports(const graph_node *node, const char **why)
{
    return epilogue_supports(node, why) && ref_kernel_conv.supports(node, why);
}

static bool fused_bn_supports(const graph_node *node, const char **why)
{
    return epilogue_supports(node, why) && ref_kernel_batchnorm.supports(node, why);
}

static bool fused_matmul_supports(const graph_node *node, const char **why)
{
    return epilogue_supports(node, why) && ref_kernel_matmul.supports(node, why);
}

static bool fused_gemm_supports(const graph_node *node, const char **why)
{
    return epilogue_supports(node, why) && ref_kernel_gemm.supports(node, why);
}

/* The residual, then the activation, over the output. */
static void epilogue(const plugin_kernel_args *args, int sum)
{
    const graph_node *node = args->node;
    float *y = args->outputs[0].data;
    size_t count = graph_tensor_count(&args->outputs[0]);
    if (sum >= 0 && sum < args->n_inputs && args->inputs[sum].data != NULL) {
        const float *r = args->inputs[sum].data;
        for (size_t i = 0; i < count; i++)
            y[i] += r[i];
    }
    const char *act = graph_node_attr_string(node, "activation", NULL);
    if (act == NULL)
        return;
    const float *given = NULL;
    float p[4];
    int n = graph_node_attr_floats(node, "activation_params", &given);
    n = rn_activation_params(act, given, n < 0 ? 0 : n, p, 4);
    for (size_t i = 0; i < count; i++)
        y[i] = activate(act, p, n, y[i]);
}

static rn_status fused_conv_run(plugin_kernel_args *args)
{
    plugin_kernel_args conv = *args;
    conv.n_inputs = args->n_inputs < 3 ? args->n_inputs : 3;
    rn_status st = ref_kernel_conv.run(&conv);
    if (st == RN_OK)
        epilogue(args, 3);
    return st;
}

static rn_status fused_bn_run(plugin_kernel_args *args)
{
    rn_status st = ref_kernel_batchnorm.run(args);
    if (st == RN_OK)
        epilogue(args, -1);
    return st;
}

/* MatMul, the bias over the last axis, the residual (input 3), the
 * activation. */
static rn_status fused_matmul_run(plugin_kernel_args *args)
{
    plugin_kernel_args mm = *args;
    mm.n_inputs = 2;
    rn_status st = ref_kernel_matmul.run(&mm);
    if (st != RN_OK)
        return st;
    if (args->n_inputs > 2 && args->inputs[2].data != NULL) {
        float *y = args->outputs[0].data;
        const float *b = args->inputs[2].data;
        size_t n = (size_t)args->outputs[0].dims[args->outputs[0].rank - 1];
        size_t count = graph_tensor_count(&args->outputs[0]);
        for (size_t i = 0; i < count; i++)
            y[i] += b[i % n];
    }
    epilogue(args, 3);
    return RN_OK;
}

static rn_status fused_gemm_run(plugin_kernel_args *args)
{
    rn_status st = ref_kernel_gemm.run(args);
    if (st == RN_OK)
        epilogue(args, -1);
    return st;
}

const plugin_kernel ref_kernel_fused_conv = {
    .domain = "runnel",
    .op_type = "FusedConv",
    .impl_type = "ref",
    .supports = fused_conv_supports,
    .run = fused_conv_run,
};

const plugin_kernel ref_kernel_fused_gemm = {
    .domain = "runnel",
    .op_type = "FusedGemm",
    .impl_type = "ref",
    .supports = fused_gemm_supports,
    .run = fused_gemm_run,
};

const plugin_kernel ref_kernel_fused_batchnorm = {
    .domain = "runnel",
    .op_type = "FusedBatchNormalization",
    .impl_type = "ref",
    .supports = fused_bn_supports,
    .run = fused_bn_run,
};

const plugin_kernel ref_kernel_fused_matmul = {
    .domain = "runnel",
    .op_type = "FusedMatMul",
    .impl_type = "ref",
    .supports = fused_matmul_supports,
    .run = fused_matmul_run,
};
