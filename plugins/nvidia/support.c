/* Which nodes NVIDIA runs: the ops of the light CNNs and of a transformer
 * encoder, in f32 (computed in f32, f16 or bf16). Dynamic dims are accepted by
 * nv_supports_op (query_model; a run's plan is specialised for its shapes
 * before it is lowered) and refused by nv_supports (the lowering). Everything
 * else is refused with the reason, so that HETERO and query_model can place
 * it elsewhere. */
#include <string.h>

#include "plugins/nvidia/nvidia.h"

const char *const nv_supported_ops[][2] = {
    {"", "Conv"},
    {"runnel", "FusedConv"},
    {"runnel", "ScaledDotProductAttention"},
    {"", "Gemm"},
    {"runnel", "FusedGemm"},
    {"", "MatMul"},
    {"", "MaxPool"},
    {"", "AveragePool"},
    {"", "GlobalAveragePool"},
    {"", "GlobalMaxPool"},
    {"", "LRN"},
    {"", "Softmax"},
    {"", "Relu"},
    {"", "Sigmoid"},
    {"", "Tanh"},
    {"", "LeakyRelu"},
    {"", "Clip"},
    {"", "Erf"},
    {"", "Sqrt"},
    {"", "Exp"},
    {"", "Neg"},
    {"", "Abs"},
    {"", "Reciprocal"},
    {"", "Gelu"},
    {"", "Identity"},
    {"", "Dropout"},
    {"", "Add"},
    {"", "Sub"},
    {"", "Mul"},
    {"", "Div"},
    {"", "Pow"},
    {"", "Max"},
    {"", "Min"},
    {"", "Sum"},
    {"", "Concat"},
    {"", "Transpose"},
    {"", "Reshape"},
    {"", "Flatten"},
    {"", "Squeeze"},
    {"", "Unsqueeze"},
    {"", "LayerNormalization"},
    {"", "Gather"},
    {"", "ReduceMean"},
    {"", "BatchNormalization"},
    {"runnel", "FusedBatchNormalization"},
    {NULL, NULL},
};

static bool is(const rn_node *n, const char *domain, const char *op)
{
    const char *d = rn_node_domain(n);
    bool dom = strcmp(d, domain) == 0 || (domain[0] == '\0' && strcmp(d, "ai.onnx") == 0);
    return dom && strcmp(rn_node_op_type(n), op) == 0;
}

/* Every present input and output has a known rank, and with `fixed` a
 * static shape; floats are f32. */
static bool check_ports(const rn_node *n, bool fixed, const char **why)
{
    for (int i = 0; i < rn_node_input_count(n); i++) {
        if (rn_node_input_name(n, i)[0] == '\0')
            continue;
        rn_partial_shape s = rn_node_input_shape(n, i);
        if (s.rank < 0 || (fixed && !plugin_shape_is_static(s))) {
            *why = s.rank < 0 ? "an input of unknown rank"
                              : "a dynamic shape reached the lowering (a run's plan is "
                                "specialised for its input shapes first)";
            return false;
        }
        rn_element_type t = rn_node_input_type(n, i);
        if (t == RN_F64 || t == RN_BF16 || t == RN_F16 || t == RN_STRING) {
            *why = "only f32 models run on NVIDIA (f16 or bf16 is chosen with "
                   "INFERENCE_PRECISION_HINT)";
            return false;
        }
    }
    for (int i = 0; i < rn_node_output_count(n); i++) {
        if (rn_node_output_name(n, i)[0] == '\0')
            continue;
        rn_partial_shape s = rn_node_output_shape(n, i);
        if (s.rank < 0 || (fixed && !plugin_shape_is_static(s))) {
            *why = s.rank < 0 ? "an output of unknown rank (a data-dependent shape)"
                              : "a dynamic output shape reached the lowering";
            return false;
        }
    }
    return true;
}

static bool need(bool ok, const char *reason, const char **why)
{
    if (!ok)
        *why = reason;
    return ok;
}

static bool one_output(const rn_node *n)
{
    for (int i = 1; i < rn_node_output_count(n); i++)
        if (rn_node_output_name(n, i)[0] != '\0')
            return false;
    return true;
}

static bool f32_io(const rn_node *n, int inputs)
{
    for (int i = 0; i < inputs && i < rn_node_input_count(n); i++)
        if (rn_node_input_name(n, i)[0] != '\0' && rn_node_input_type(n, i) != RN_F32)
            return false;
    return rn_node_output_type(n, 0) == RN_F32;
}

static bool activation_ok(const char *a)
{
    const char *ok[] = {"", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "Gelu", "GeluTanh"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcmp(a, ok[i]) == 0)
            return true;
    return false;
}

/* Whether the node's window has explicit pads (auto_pad NOTSET or VALID,
 * as parsed once by rn_node_window). */
static bool explicit_pads(const rn_node *n)
{
    rn_window w;
    bool parsed = rn_node_window(n, 2, NULL, false, &w) == RN_OK;
    rn_clear_error();
    return parsed && (w.auto_pad == RN_AUTO_PAD_NOTSET || w.auto_pad == RN_AUTO_PAD_VALID);
}

static bool conv_ok(const rn_node *n, const char **why)
{
    if (!need(rn_node_input_shape(n, 0).rank == 4, "only 2D convolutions (NCHW) run on NVIDIA",
              why) ||
        !need(f32_io(n, 4), "f32 tensors only", why) ||
        !need(rn_node_input_constant(n, 1) != NULL, "the weights must be a constant", why))
        return false;
    if (!need(explicit_pads(n),
              "auto_pad SAME_UPPER / SAME_LOWER is not supported (explicit pads are)", why))
        return false;
    if (rn_node_input_count(n) > 2 && rn_node_input_name(n, 2)[0] != '\0' &&
        !need(rn_node_input_constant(n, 2) != NULL, "the bias must be a constant", why))
        return false;
    if (is(n, "runnel", "FusedConv"))
        return need(activation_ok(rn_node_attr_string(n, "activation", "")),
                    "this fused activation is not supported", why);
    return true;
}

static bool gemm_ok(const rn_node *n, const char **why)
{
    if (!need(f32_io(n, 3), "f32 tensors only", why) ||
        !need(rn_node_input_shape(n, 0).rank == 2 && rn_node_input_shape(n, 1).rank == 2,
              "Gemm needs 2D A and B", why))
        return false;
    if (rn_node_input_count(n) > 2 && rn_node_input_name(n, 2)[0] != '\0') {
        rn_partial_shape c = rn_node_input_shape(n, 2);
        if (!need(c.rank <= 2, "Gemm's C must broadcast to [M, N]", why))
            return false;
    }
    if (is(n, "runnel", "FusedGemm"))
        return need(activation_ok(rn_node_attr_string(n, "activation", "")),
                    "this fused activation is not supported", why);
    return true;
}

static bool matmul_ok(const rn_node *n, const char **why)
{
    rn_partial_shape a = rn_node_input_shape(n, 0), b = rn_node_input_shape(n, 1);
    if (!need(f32_io(n, 2), "f32 tensors only", why) ||
        !need(a.rank >= 2 && b.rank >= 2, "MatMul of 1-D operands is not supported", why))
        return false;
    int64_t ba = 1, bb = 1;
    for (int d = 0; d < a.rank - 2; d++)
        ba *= a.dims[d];
    for (int d = 0; d < b.rank - 2; d++)
        bb *= b.dims[d];
    rn_partial_shape y = rn_node_output_shape(n, 0);
    int64_t by = 1;
    for (int d = 0; d < y.rank - 2; d++)
        by *= y.dims[d];
    if (!plugin_shape_is_static(a) || !plugin_shape_is_static(b) || !plugin_shape_is_static(y))
        return true; /* checked again on the shapes of a run */
    return need((ba == by || ba == 1) && (bb == by || bb == 1),
                "MatMul broadcasting other than a shared batch or a batch of one is not "
                "supported",
                why);
}

static bool pool_ok(const rn_node *n, const char **why)
{
    if (!need(rn_node_input_shape(n, 0).rank == 4, "only 2D pooling (NCHW) runs on NVIDIA", why) ||
        !need(f32_io(n, 1), "f32 tensors only", why) ||
        !need(one_output(n), "MaxPool's indices output is not supported", why))
        return false;
    if (is(n, "", "GlobalAveragePool") || is(n, "", "GlobalMaxPool"))
        return true;
    rn_window w;
    bool parsed = rn_node_window(n, 2, NULL, false, &w) == RN_OK;
    rn_clear_error();
    if (!need(explicit_pads(n),
              "auto_pad SAME_UPPER / SAME_LOWER is not supported (explicit pads are)", why) ||
        !need(!is(n, "", "MaxPool") || rn_node_attr_int_or_default(n, "storage_order") == 0,
              "storage_order 1 is not supported", why))
        return false;
    return need(parsed && w.dilation[0] == 1 && w.dilation[1] == 1,
                "dilated pooling is not supported", why);
}

static bool softmax_ok(const rn_node *n, const char **why)
{
    rn_partial_shape s = rn_node_input_shape(n, 0);
    int64_t axis = rn_node_attr_int(n, "axis", rn_node_opset(n) >= 13 ? -1 : 1);
    if (axis < 0)
        axis += s.rank;
    if (!need(f32_io(n, 1), "f32 tensors only", why))
        return false;
    /* Before opset 13 Softmax runs over the flattened dims from axis on. */
    return need(rn_node_opset(n) < 13 || axis == s.rank - 1,
                "Softmax over an axis other than the last is not supported", why);
}

static bool clip_ok(const rn_node *n, const char **why)
{
    for (int i = 1; i < rn_node_input_count(n); i++)
        if (rn_node_input_name(n, i)[0] != '\0' && rn_node_input_constant(n, i) == NULL)
            return need(false, "Clip's min and max must be constants", why);
    return need(f32_io(n, 1), "f32 tensors only", why);
}

static bool binary_ok(const rn_node *n, const char **why)
{
    if (!need(f32_io(n, rn_node_input_count(n)), "f32 tensors only", why))
        return false;
    rn_partial_shape y = rn_node_output_shape(n, 0);
    return need(y.rank <= 6, "broadcasting over more than 6 dims is not supported", why);
}

static bool layernorm_ok(const rn_node *n, const char **why)
{
    rn_partial_shape s = rn_node_input_shape(n, 0);
    int64_t axis = rn_node_attr_int(n, "axis", -1);
    if (axis < 0)
        axis += s.rank;
    return need(f32_io(n, 3), "f32 tensors only", why) &&
           need(axis == s.rank - 1, "LayerNormalization over more than the last axis", why) &&
           need(one_output(n), "LayerNormalization's mean and inverse deviation outputs", why) &&
           need(rn_node_input_shape(n, 1).rank == 1, "scale of one value per feature only", why);
}

static bool gather_ok(const rn_node *n, const char **why)
{
    rn_element_type t = rn_node_input_type(n, 1);
    rn_element_type d = rn_node_input_type(n, 0);
    return need(t == RN_I64 || t == RN_I32, "Gather's indices must be i64 or i32", why) &&
           need(d == RN_F32 || d == RN_I64 || d == RN_I32, "Gather of f32, i64 or i32 data only",
                why);
}

static bool reduce_mean_ok(const rn_node *n, const char **why)
{
    rn_partial_shape s = rn_node_input_shape(n, 0);
    const int64_t *axes;
    int na = rn_node_attr_ints(n, "axes", &axes);
    int64_t axis = na == 1 ? axes[0] : -100;
    if (na < 0 && rn_node_input_count(n) > 1) {
        const rn_kernel_tensor *c = rn_node_input_constant(n, 1);
        if (c != NULL && c->type == RN_I64 && c->nbytes == sizeof(int64_t))
            axis = *(const int64_t *)c->data;
    }
    if (axis < 0 && axis != -100)
        axis += s.rank;
    return need(f32_io(n, 1), "f32 tensors only", why) &&
           need(axis == s.rank - 1, "ReduceMean over the last axis only", why);
}

static bool batchnorm_ok(const rn_node *n, const char **why)
{
    for (int i = 1; i < 5; i++)
        if (!need(rn_node_input_constant(n, i) != NULL,
                  "BatchNormalization's parameters must be constants", why))
            return false;
    return need(one_output(n) && rn_node_attr_int(n, "training_mode", 0) == 0,
                "BatchNormalization in training mode is not supported", why) &&
           need(rn_node_input_shape(n, 0).rank >= 2, "BatchNormalization needs [N, C, ...]", why) &&
           need(f32_io(n, 1), "f32 tensors only", why);
}

/* Dropout's mask (all true at inference) is not computed: a node that
 * reads it fails the lowering, naming the value. */
static bool view_ok(const rn_node *n, const char **why)
{
    return need(rn_node_output_type(n, 0) != RN_STRING, "strings are not supported", why);
}

/* runnel's ScaledDotProductAttention (transforms/fuse_attention.c): Q, Kt,
 * V of rank 2 to 4 (BHSD) or the rank-4 head split (BSHD). Any head size
 * and count: what runnel's fused kernel does not take (heads of more than
 * 256 features, more than 65535 batch x heads) runs as cuBLAS's products
 * (program.c, choose_attention). */
static bool attention_ok(const rn_node *n, const char **why)
{
    rn_partial_shape q = rn_node_input_shape(n, 0);
    const char *layout = rn_node_attr_string(n, "qkv_layout", "BHSD");
    bool bshd = strcmp(layout, "BSHD") == 0;
    return need(f32_io(n, 4), "f32 tensors only", why) &&
           need(q.rank >= 2 && q.rank <= 4, "attention over Q of rank 2 to 4 only", why) &&
           need(strcmp(layout, "BHSD") == 0 || (bshd && q.rank == 4),
                "qkv_layout BHSD, or BSHD of rank-4 inputs", why) &&
           need(strcmp(rn_node_attr_string(n, "out_layout", "BHSD"), "BHSD") == 0,
                "out_layout BHSD only (the CPU's pipeline absorbs the head merge)", why);
}

bool nv_supports(const rn_node *node, const char **why)
{
    return nv_supports_op(node, why) && check_ports(node, true, why);
}

bool nv_supports_op(const rn_node *node, const char **why)
{
    const char *op = rn_node_op_type(node);
    bool known = false;
    for (int i = 0; nv_supported_ops[i][0] != NULL; i++)
        known |= is(node, nv_supported_ops[i][0], nv_supported_ops[i][1]);
    if (!known) {
        *why = "NVIDIA has no kernel for this op";
        return false;
    }
    if (!check_ports(node, false, why))
        return false;
    if (is(node, "", "Conv") || is(node, "runnel", "FusedConv"))
        return conv_ok(node, why);
    if (is(node, "", "Gemm") || is(node, "runnel", "FusedGemm"))
        return gemm_ok(node, why);
    if (is(node, "runnel", "ScaledDotProductAttention"))
        return attention_ok(node, why);
    if (strcmp(op, "MatMul") == 0)
        return matmul_ok(node, why);
    if (strstr(op, "Pool") != NULL)
        return pool_ok(node, why);
    if (strcmp(op, "LRN") == 0)
        return need(rn_node_input_shape(node, 0).rank == 4 && f32_io(node, 1),
                    "LRN of a 4-D f32 tensor only", why);
    if (strcmp(op, "Softmax") == 0)
        return softmax_ok(node, why);
    if (strcmp(op, "Clip") == 0)
        return clip_ok(node, why);
    if (strcmp(op, "Gelu") == 0)
        return need(f32_io(node, 1), "f32 tensors only", why);
    if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
        strcmp(op, "Div") == 0 || strcmp(op, "Pow") == 0 || strcmp(op, "Max") == 0 ||
        strcmp(op, "Min") == 0 || strcmp(op, "Sum") == 0)
        return binary_ok(node, why);
    if (strcmp(op, "Concat") == 0)
        return need(rn_node_output_type(node, 0) != RN_STRING, "strings are not supported", why);
    if (strcmp(op, "Transpose") == 0)
        return need(rn_node_input_shape(node, 0).rank <= 6, "Transpose of more than 6 dims", why);
    if (strcmp(op, "LayerNormalization") == 0)
        return layernorm_ok(node, why);
    if (strcmp(op, "Gather") == 0)
        return gather_ok(node, why);
    if (strcmp(op, "ReduceMean") == 0)
        return reduce_mean_ok(node, why);
    if (strcmp(op, "BatchNormalization") == 0)
        return batchnorm_ok(node, why);
    if (strcmp(op, "FusedBatchNormalization") == 0)
        return batchnorm_ok(node, why) &&
               need(activation_ok(rn_node_attr_string(node, "activation", "")),
                    "this fused activation is not supported", why);
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Squeeze") == 0 ||
        strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Identity") == 0 || strcmp(op, "Dropout") == 0)
        return view_ok(node, why);
    return need(f32_io(node, 1), "f32 tensors only", why); /* the unary activations */
}
