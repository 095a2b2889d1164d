/* The REF elementwise kernels: unary math and activations, binary arithmetic,
 * comparisons, logic, bitwise ops, variadic Sum/Max/Min/Mean, Where, Clip,
 * Cast/CastLike and Identity, each defined in the kernels/ file named above
 * its group. */
#include "plugins/ref/ref.h"

/* binary.c */
extern const plugin_kernel ref_kernel_add, ref_kernel_sub, ref_kernel_mul, ref_kernel_div,
    ref_kernel_mod, ref_kernel_prelu, ref_kernel_pow;
/* unary.c */
extern const plugin_kernel ref_kernel_abs, ref_kernel_neg, ref_kernel_sign, ref_kernel_relu,
    ref_kernel_sqrt, ref_kernel_exp, ref_kernel_log, ref_kernel_reciprocal, ref_kernel_floor,
    ref_kernel_ceil, ref_kernel_round, ref_kernel_erf, ref_kernel_sin, ref_kernel_cos,
    ref_kernel_tan, ref_kernel_asin, ref_kernel_acos, ref_kernel_atan, ref_kernel_sinh,
    ref_kernel_cosh, ref_kernel_asinh, ref_kernel_acosh, ref_kernel_atanh, ref_kernel_tanh,
    ref_kernel_sigmoid, ref_kernel_softplus, ref_kernel_softsign, ref_kernel_leakyrelu,
    ref_kernel_elu, ref_kernel_selu, ref_kernel_celu, ref_kernel_thresholdedrelu,
    ref_kernel_hardsigmoid, ref_kernel_hardswish, ref_kernel_mish, ref_kernel_gelu,
    ref_kernel_shrink;
/* compare.c */
extern const plugin_kernel ref_kernel_equal, ref_kernel_less, ref_kernel_less_or_equal,
    ref_kernel_greater, ref_kernel_greater_or_equal, ref_kernel_isnan, ref_kernel_isinf;
/* logic.c */
extern const plugin_kernel ref_kernel_and, ref_kernel_or, ref_kernel_xor, ref_kernel_not;
/* bitwise.c */
extern const plugin_kernel ref_kernel_bitwise_and, ref_kernel_bitwise_or, ref_kernel_bitwise_xor,
    ref_kernel_bitwise_not, ref_kernel_bitshift;
/* variadic.c */
extern const plugin_kernel ref_kernel_sum, ref_kernel_max, ref_kernel_min, ref_kernel_mean;
/* where.c */
extern const plugin_kernel ref_kernel_where;
/* clip.c */
extern const plugin_kernel ref_kernel_clip;
/* cast.c */
extern const plugin_kernel ref_kernel_cast, ref_kernel_castlike;
/* identity.c */
extern const plugin_kernel ref_kernel_identity;

const plugin_kernel *const ref_kernels_elementwise[] = {
    /* binary.c */
    &ref_kernel_add,
    &ref_kernel_sub,
    &ref_kernel_mul,
    &ref_kernel_div,
    &ref_kernel_mod,
    &ref_kernel_prelu,
    &ref_kernel_pow,
    /* unary.c */
    &ref_kernel_abs,
    &ref_kernel_neg,
    &ref_kernel_sign,
    &ref_kernel_relu,
    &ref_kernel_sqrt,
    &ref_kernel_exp,
    &ref_kernel_log,
    &ref_kernel_reciprocal,
    &ref_kernel_floor,
    &ref_kernel_ceil,
    &ref_kernel_round,
    &ref_kernel_erf,
    &ref_kernel_sin,
    &ref_kernel_cos,
    &ref_kernel_tan,
    &ref_kernel_asin,
    &ref_kernel_acos,
    &ref_kernel_atan,
    &ref_kernel_sinh,
    &ref_kernel_cosh,
    &ref_kernel_asinh,
    &ref_kernel_acosh,
    &ref_kernel_atanh,
    &ref_kernel_tanh,
    &ref_kernel_sigmoid,
    &ref_kernel_softplus,
    &ref_kernel_softsign,
    &ref_kernel_leakyrelu,
    &ref_kernel_elu,
    &ref_kernel_selu,
    &ref_kernel_celu,
    &ref_kernel_thresholdedrelu,
    &ref_kernel_hardsigmoid,
    &ref_kernel_hardswish,
    &ref_kernel_mish,
    &ref_kernel_gelu,
    &ref_kernel_shrink,
    /* compare.c */
    &ref_kernel_equal,
    &ref_kernel_less,
    &ref_kernel_less_or_equal,
    &ref_kernel_greater,
    &ref_kernel_greater_or_equal,
    &ref_kernel_isnan,
    &ref_kernel_isinf,
    /* logic.c */
    &ref_kernel_and,
    &ref_kernel_or,
    &ref_kernel_xor,
    &ref_kernel_not,
    /* bitwise.c */
    &ref_kernel_bitwise_and,
    &ref_kernel_bitwise_or,
    &ref_kernel_bitwise_xor,
    &ref_kernel_bitwise_not,
    &ref_kernel_bitshift,
    /* variadic.c */
    &ref_kernel_sum,
    &ref_kernel_max,
    &ref_kernel_min,
    &ref_kernel_mean,
    /* where.c */
    &ref_kernel_where,
    /* clip.c */
    &ref_kernel_clip,
    /* cast.c */
    &ref_kernel_cast,
    &ref_kernel_castlike,
    /* identity.c */
    &ref_kernel_identity,
    NULL,
};
