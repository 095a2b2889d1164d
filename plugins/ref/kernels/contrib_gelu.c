/* REF Gelu, FastGelu, BiasGelu, QuickGelu and BiasAdd (com.microsoft), in
 * f32 as ONNX Runtime's CPU kernels:
 *   Gelu(x)         = 0.5 x (1 + erf(x / sqrt 2))
 *   BiasGelu(a, b)  = Gelu(a + b)
 *   FastGelu(x, b)  = 0.5 y (1 + tanh(sqrt(2 / pi) (y + 0.044715 y^3))), y = x + b
 *   QuickGelu(x)    = x sigmoid(alpha x), alpha 1.702 by default
 *   BiasAdd(x, b, s) = x + b + s
 * where a bias b is 1-D and runs along the last dim. */
#include <math.h>
#include <string.h>

#include "plugins/ref/kernels/contrib.h"

enum { GELU, FAST_GELU, BIAS_GELU, QUICK_GELU, BIAS_ADD };

static int op_of(const graph_node *node)
{
    static const char *const names[] = {"Gelu", "FastGelu", "BiasGelu", "QuickGelu", "BiasAdd"};
    for (int i = 0; i < 5; i++)
        if (strcmp(node->op_type, names[i]) == 0)
            return i;
    return GELU;
}

static bool gelu_supports(const graph_node *node, const char **why)
{
    int op = op_of(node);
    int required = op == BIAS_GELU ? 2 : op == BIAS_ADD ? 3 : 1;
    return ref_contrib_supports_f32(node, required, 0x7u, why);
}

/* A bias along the last dim of x: 1-D of x's last dim, or NULL. */
static rn_status bias_of(const plugin_kernel_args *args, int i, const graph_tensor *x,
                         const float **out)
{
    const graph_tensor *b = ref_contrib_input(args, i);
    *out = NULL;
    if (b == NULL)
        return RN_OK;
    int64_t c = x->rank > 0 ? x->dims[x->rank - 1] : 1;
    if (b->rank != 1 || b->dims[0] != c)
        return ref_contrib_error(args->node, RN_SHAPE_MISMATCH,
                                 "input %d must be 1-D of the last dim of X (%lld)", i,
                                 (long long)c);
    *out = b->data;
    return RN_OK;
}

static rn_status gelu_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    int op = op_of(node);
    const graph_tensor *x = ref_contrib_input(args, 0);
    graph_tensor *y;
    rn_status st = ref_contrib_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    if (x == NULL || y == NULL)
        return ref_contrib_error(node, RN_INVALID_ARG, "input X or output Y is absent");
    const float *bias = NULL, *skip = NULL;
    if (op != GELU && op != QUICK_GELU && (st = bias_of(args, 1, x, &bias)) != RN_OK)
        return st;
    size_t n = graph_tensor_count(x), c = x->rank > 0 ? (size_t)x->dims[x->rank - 1] : 1;
    if (op == BIAS_ADD) {
        const graph_tensor *s = ref_contrib_input(args, 2);
        if (s == NULL || graph_tensor_count(s) != n)
            return ref_contrib_error(node, RN_SHAPE_MISMATCH, "skip must have X's shape");
        skip = s->data;
    }
    float alpha = graph_node_attr_float(node, "alpha", 1.702f);
    const float *xd = x->data;
    float *yd = y->data;
    for (size_t i = 0; i < n; i++) {
        float v = xd[i] + (bias != NULL ? bias[c ? i % c : 0] : 0.0f);
        switch (op) {
        case GELU:
        case BIAS_GELU:
            yd[i] = 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
            break;
        case FAST_GELU:
            yd[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
            break;
        case QUICK_GELU:
            yd[i] = v / (1.0f + expf(-alpha * v));
            break;
        default:
            yd[i] = v + skip[i];
            break;
        }
    }
    return RN_OK;
}

#define GELU_KERNEL(sym, op)                                                                       \
    const plugin_kernel sym = {                                                                    \
        .domain = "com.microsoft",                                                                 \
        .op_type = op,                                                                             \
        .impl_type = "ref",                                                                        \
        .supports = gelu_supports,                                                                 \
        .run = gelu_run,                                                                           \
    }

GELU_KERNEL(ref_kernel_ms_gelu, "Gelu");
GELU_KERNEL(ref_kernel_ms_fast_gelu, "FastGelu");
GELU_KERNEL(ref_kernel_ms_bias_gelu, "BiasGelu");
GELU_KERNEL(ref_kernel_ms_quick_gelu, "QuickGelu");
GELU_KERNEL(ref_kernel_ms_bias_add, "BiasAdd");
