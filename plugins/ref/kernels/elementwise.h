/* What the REF elementwise kernels share (private to plugins/ref): element-type
 * X-macros for type-generic kernels, the binary row pattern, and helpers.
 *
 * Each type list REF_TYPES_*(X, A) calls X(A, sfx, RN_TYPE, S, CLS, LOAD, STORE) per element type:
 *   A      passed through, typically the op being generated;
 *   sfx    suffix for generated names (f32, i64, ...);
 *   S      the storage type in a buffer;
 *   CLS    F (floating), I (signed integer), U (unsigned integer), B (bool),
 *          so that an op can paste a per-class expression (OP_##CLS);
 *   LOAD   LOAD(s) turns a stored element into its compute value: double for
 *          every floating type (f16/bf16 widen exactly), S for integers, 0/1
 *          for bool;
 *   STORE  STORE(v) turns a compute value (of any arithmetic type) into S:
 *          floating types round to nearest even once (f16/bf16 via a
 *          round-to-odd f32, which avoids double rounding), integers from a
 *          double truncate toward zero (NaN gives 0, out of range saturates
 *          to the 64-bit range, then wraps like numpy), integers from an
 *          integer wrap modulo 2^bits, bool is v != 0.
 * Floating ops compute in double: for + - * / and sqrt that rounds to the same
 * f32 as computing in f32, and for the rest it is at least as accurate, which
 * is what a reference device is for.
 */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_ELEMENTWISE_H
#define RUNNEL_PLUGINS_REF_KERNELS_ELEMENTWISE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "plugins/api/kernel.h"

/* Rounds d to f32 with round-to-odd: truncate toward zero, then set the last
 * bit when inexact. Rounding that again to a format with at least two fewer
 * significand bits (f16, bf16) gives the correctly rounded result of d. */
static inline float ref_f64_to_f32_odd(double d)
{
    float f = (float)d;
    if ((double)f == d || d != d)
        return f;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (fabs((double)f) > fabs(d))
        bits -= 1; /* f was rounded away from zero: step its magnitude back */
    bits |= 1;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t ref_f64_to_f16(double d)
{
    return plugin_f32_to_f16(ref_f64_to_f32_odd(d));
}

static inline uint16_t ref_f64_to_bf16(double d)
{
    return plugin_f32_to_bf16(ref_f64_to_f32_odd(d));
}

/* Float to integer as numpy does on x86 for in-range values (truncate, then
 * wrap to the target width); NaN is 0 and out-of-range values saturate
 * instead of being undefined behaviour. */
static inline int64_t ref_f64_to_i64(double d)
{
    if (d != d)
        return 0;
    if (d >= 9223372036854775808.0)
        return INT64_MAX;
    if (d <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)d;
}

static inline uint64_t ref_f64_to_u64(double d)
{
    if (d != d)
        return 0;
    if (d >= 18446744073709551616.0)
        return UINT64_MAX;
    if (d >= 0)
        return (uint64_t)d;
    return (uint64_t)ref_f64_to_i64(d);
}

#define REF_LD_NATIVE(s) (s)
#define REF_LD_DOUBLE(s) ((double)(s))
#define REF_LD_F16(s)    ((double)plugin_f16_to_f32(s))
#define REF_LD_BF16(s)   ((double)plugin_bf16_to_f32(s))
#define REF_LD_BOOL(s)   ((uint8_t)((s) != 0))

#define REF_ST_F32(v)  ((float)(v))
#define REF_ST_F64(v)  ((double)(v))
#define REF_ST_F16(v)  ref_f64_to_f16((double)(v))
#define REF_ST_BF16(v) ref_f64_to_bf16((double)(v))
#define REF_ST_BOOL(v) ((uint8_t)((v) != 0))
/* From a double: truncating conversion; from an integer: modular. */
#define REF_ST_INT_(S, v)                                                                          \
    _Generic((v), float : (S)ref_f64_to_i64(v), double : (S)ref_f64_to_i64(v), default : (S)(v))
#define REF_ST_UINT_(S, v)                                                                         \
    _Generic((v), float : (S)ref_f64_to_u64(v), double : (S)ref_f64_to_u64(v), default : (S)(v))
#define REF_ST_I8(v)  REF_ST_INT_(int8_t, v)
#define REF_ST_I16(v) REF_ST_INT_(int16_t, v)
#define REF_ST_I32(v) REF_ST_INT_(int32_t, v)
#define REF_ST_I64(v) REF_ST_INT_(int64_t, v)
#define REF_ST_U8(v)  REF_ST_UINT_(uint8_t, v)
#define REF_ST_U16(v) REF_ST_UINT_(uint16_t, v)
#define REF_ST_U32(v) REF_ST_UINT_(uint32_t, v)
#define REF_ST_U64(v) REF_ST_UINT_(uint64_t, v)

#define REF_TYPES_FLOAT(X, A)                                                                      \
    X(A, f32, RN_F32, float, F, REF_LD_DOUBLE, REF_ST_F32)                                         \
    X(A, f64, RN_F64, double, F, REF_LD_DOUBLE, REF_ST_F64)                                        \
    X(A, f16, RN_F16, uint16_t, F, REF_LD_F16, REF_ST_F16)                                         \
    X(A, bf16, RN_BF16, uint16_t, F, REF_LD_BF16, REF_ST_BF16)

#define REF_TYPES_SINT(X, A)                                                                       \
    X(A, i8, RN_I8, int8_t, I, REF_LD_NATIVE, REF_ST_I8)                                           \
    X(A, i16, RN_I16, int16_t, I, REF_LD_NATIVE, REF_ST_I16)                                       \
    X(A, i32, RN_I32, int32_t, I, REF_LD_NATIVE, REF_ST_I32)                                       \
    X(A, i64, RN_I64, int64_t, I, REF_LD_NATIVE, REF_ST_I64)

#define REF_TYPES_UINT(X, A)                                                                       \
    X(A, u8, RN_U8, uint8_t, U, REF_LD_NATIVE, REF_ST_U8)                                          \
    X(A, u16, RN_U16, uint16_t, U, REF_LD_NATIVE, REF_ST_U16)                                      \
    X(A, u32, RN_U32, uint32_t, U, REF_LD_NATIVE, REF_ST_U32)                                      \
    X(A, u64, RN_U64, uint64_t, U, REF_LD_NATIVE, REF_ST_U64)

#define REF_TYPES_BOOL(X, A) X(A, bool, RN_BOOL, uint8_t, B, REF_LD_BOOL, REF_ST_BOOL)

#define REF_TYPES_INT(X, A)     REF_TYPES_SINT(X, A) REF_TYPES_UINT(X, A)
#define REF_TYPES_SIGNED(X, A)  REF_TYPES_FLOAT(X, A) REF_TYPES_SINT(X, A)
#define REF_TYPES_NUMERIC(X, A) REF_TYPES_FLOAT(X, A) REF_TYPES_INT(X, A)
#define REF_TYPES_ALL(X, A)     REF_TYPES_NUMERIC(X, A) REF_TYPES_BOOL(X, A)

/* Element type numbers are below this (BF16 is 16): size of per-type tables. */
#define REF_NTYPES 17

/* ---- what every elementwise kernel shares ---- */

/* Bytes per element as kernels see buffers: a char* for STRING. */
static inline size_t ref_element_size(rn_element_type type)
{
    return type == RN_STRING ? sizeof(char *) : rn_element_type_size(type);
}

/* "input 0 type bf16" in a thread-local buffer, for supports()' *why. */
const char *ref_why_type(int input, rn_element_type type);

/* A row of a binary op: o[i] = f(a[i * sa], b[i * sb]) for i < n, sa and sb
 * 0 or 1 (see broadcast.h). o may alias a when sa is 1 or n is 1. */
typedef void (*ref_binary_row_fn)(const void *a, int64_t sa, const void *b, int64_t sb, void *o,
                                  int64_t n);

/* Defines `static void name(...)`, a ref_binary_row_fn over storage types
 * SA, SB -> SO computing STO(EXPR) from x = LDA(a[..]) and y = LDB(b[..]),
 * with one loop per stride combination so that each vectorises. */
#define REF_BINARY_ROW(name, SA, LDA, SB, LDB, SO, STO, EXPR)                                      \
    static void name(const void *av, int64_t sa, const void *bv, int64_t sb, void *ov, int64_t n)  \
    {                                                                                              \
        const SA *a = av;                                                                          \
        const SB *b = bv;                                                                          \
        SO *o = ov;                                                                                \
        if (sa && sb) {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                      \
                __typeof__(LDA(a[0])) x = LDA(a[i]);                                               \
                __typeof__(LDB(b[0])) y = LDB(b[i]);                                               \
                (void)x, (void)y;                                                                  \
                o[i] = STO(EXPR);                                                                  \
            }                                                                                      \
        } else if (sa) {                                                                           \
            __typeof__(LDB(b[0])) y = LDB(b[0]);                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                __typeof__(LDA(a[0])) x = LDA(a[i]);                                               \
                (void)x, (void)y;                                                                  \
                o[i] = STO(EXPR);                                                                  \
            }                                                                                      \
        } else if (sb) {                                                                           \
            __typeof__(LDA(a[0])) x = LDA(a[0]);                                                   \
            for (int64_t i = 0; i < n; i++) {                                                      \
                __typeof__(LDB(b[0])) y = LDB(b[i]);                                               \
                (void)x, (void)y;                                                                  \
                o[i] = STO(EXPR);                                                                  \
            }                                                                                      \
        } else if (n > 0) {                                                                        \
            __typeof__(LDA(a[0])) x = LDA(a[0]);                                                   \
            __typeof__(LDB(b[0])) y = LDB(b[0]);                                                   \
            (void)x, (void)y;                                                                      \
            SO v = STO(EXPR);                                                                      \
            for (int64_t i = 0; i < n; i++)                                                        \
                o[i] = v;                                                                          \
        }                                                                                          \
    }

/* Runs fn over out = f(a, b) with numpy broadcasting (and the opset < 7
 * broadcast/axis form of args->node). a and b are of the types fn expects;
 * out must hold the broadcast shape. Errors name the node. (binary.c) */
rn_status ref_binary_apply(const plugin_kernel_args *args, const graph_tensor *a,
                           const graph_tensor *b, graph_tensor *out, ref_binary_row_fn fn);

/* Reports operands whose shapes do not broadcast to out's (RN_SHAPE_MISMATCH,
 * naming the node and every shape). */
rn_status ref_broadcast_error(const graph_node *node, int n, const graph_tensor *const *operands,
                              const graph_tensor *out);

/* Converts n elements from src (type st) to dst (type dt) with Cast's
 * semantics (see the top of this file). Returns false when the pair is not
 * handled (strings). (cast.c) */
bool ref_convert(rn_element_type st, const void *src, rn_element_type dt, void *dst, int64_t n);

/* Checks that an elementwise kernel's inputs are present with data and its
 * output was allocated; the error names the node. */
rn_status ref_check_args(const plugin_kernel_args *args, int n_required);

/* Defines the kernel value `name` for op_type with the family's functions. */
#define REF_KERNEL(name, op, supports_fn, run_fn)                                                  \
    const plugin_kernel name = {                                                                   \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "ref",                                                                        \
        .supports = supports_fn,                                                                   \
        .run = run_fn,                                                                             \
    };

/* As REF_KERNEL, for elementwise kernels that may write their output over
 * input 0 (the plan runs them in place when nobody else reads it) and that
 * resolve what they do once, at compile time (prepare_fn). */
#define REF_KERNEL_INPLACE(name, op, supports_fn, prepare_fn, run_fn)                              \
    const plugin_kernel name = {                                                                   \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "ref",                                                                        \
        .supports = supports_fn,                                                                   \
        .prepare = prepare_fn,                                                                     \
        .release = free,                                                                           \
        .run = run_fn,                                                                             \
        .flags = RN_KERNEL_INPLACE,                                                                \
    };

#endif /* RUNNEL_PLUGINS_REF_KERNELS_ELEMENTWISE_H */
