/* REF Range: element i is start + i * delta, computed in double for the
 * floating types (f16 and bf16 too: opset 27's stash_type only says that
 * their compute type is at least f32) and in wrapping int64 for the integer
 * types, then narrowed to the output's type. */
#include "plugins/ref/kernels/movement.h"

static bool supports_range(const graph_node *node, const char **why)
{
    rn_element_type t = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    if (t != RN_UNDEFINED && t != RN_F32 && t != RN_F64 && t != RN_F16 && t != RN_BF16 &&
        t != RN_I16 && t != RN_I32 && t != RN_I64) {
        *why = "type other than f32, f64, f16, bf16, i16, i32, i64";
        return false;
    }
    return true;
}

static rn_status run_range(plugin_kernel_args *args)
{
    const graph_tensor *start = &args->inputs[0], *delta = &args->inputs[2];
    graph_tensor *y;
    REF_MV_TRY(ref_mv_output(args, 0, &y));
    size_t n = graph_tensor_count(y);
    switch (y->type) {
    case RN_F32:
    case RN_F64:
    case RN_F16:
    case RN_BF16: {
        double s = ref_mv_load_double(start->type, start->data, 0);
        double d = ref_mv_load_double(delta->type, delta->data, 0);
        for (size_t i = 0; i < n; i++)
            ref_mv_store_double(y->type, y->data, i, s + (double)i * d);
        return RN_OK;
    }
    case RN_I16:
    case RN_I32:
    case RN_I64: {
        /* Unsigned arithmetic wraps instead of overflowing. */
        uint64_t s = (uint64_t)ref_mv_int_at(start, 0), d = (uint64_t)ref_mv_int_at(delta, 0);
        for (size_t i = 0; i < n; i++) {
            uint64_t v = s + (uint64_t)i * d;
            if (y->type == RN_I16)
                ((int16_t *)y->data)[i] = (int16_t)v;
            else if (y->type == RN_I32)
                ((int32_t *)y->data)[i] = (int32_t)v;
            else
                ((int64_t *)y->data)[i] = (int64_t)v;
        }
        return RN_OK;
    }
    default:
        return rn_set_error(RN_TYPE_MISMATCH, REF_MV_NODE_FMT "type %s is not supported",
                            REF_MV_NODE_ARGS(args->node), rn_element_type_name(y->type));
    }
}

const plugin_kernel ref_kernel_range = {
    .domain = "",
    .op_type = "Range",
    .impl_type = "ref",
    .supports = supports_range,
    .run = run_range,
};
