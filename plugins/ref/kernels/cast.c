/* REF Cast and CastLike between every numeric type and bool (and strings,
 * see below), and ref_convert for the other elementwise kernels.
 *
 * Conversions (elementwise.h): to a floating type rounds to nearest even
 * exactly once (f64 -> f16 and f64 -> bf16 included); floating to integer
 * truncates toward zero, NaN gives 0 and out-of-range saturates to the 64-bit
 * range before wrapping to the target width; integer to integer wraps; to bool
 * is "not zero" (NaN is true).
 *
 * Float8 (float8.h): a float8 source widens exactly to double and converts on
 * from there; a float8 destination is rounded once from the source's exact
 * double value, saturating unless the opset-19 attribute `saturate` is 0.
 * Strings do not convert to or from float8.
 *
 * Strings: numbers format as numpy's str() of the value (shortest digits that
 * read back to the same value, "nan", "inf"), and strings parse with strtod
 * ("NaN", "INF", "+INF" included); a string that is not a number is an error.
 * String tensors are arrays of malloc'ed char*, owned by the tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/elementwise.h"
#include "plugins/ref/kernels/float8.h"

typedef void (*convert_fn)(const void *src, void *dst, int64_t n);

/* The destinations, a copy of REF_TYPES_ALL: the preprocessor does not expand
 * a macro inside its own expansion, so the nested loop over (source,
 * destination) pairs needs a second list. */
#define DST_TYPES(X, A)                                                                            \
    X(A, f32, RN_F32, float, F, REF_LD_DOUBLE, REF_ST_F32)                                         \
    X(A, f64, RN_F64, double, F, REF_LD_DOUBLE, REF_ST_F64)                                        \
    X(A, f16, RN_F16, uint16_t, F, REF_LD_F16, REF_ST_F16)                                         \
    X(A, bf16, RN_BF16, uint16_t, F, REF_LD_BF16, REF_ST_BF16)                                     \
    X(A, i8, RN_I8, int8_t, I, REF_LD_NATIVE, REF_ST_I8)                                           \
    X(A, i16, RN_I16, int16_t, I, REF_LD_NATIVE, REF_ST_I16)                                       \
    X(A, i32, RN_I32, int32_t, I, REF_LD_NATIVE, REF_ST_I32)                                       \
    X(A, i64, RN_I64, int64_t, I, REF_LD_NATIVE, REF_ST_I64)                                       \
    X(A, u8, RN_U8, uint8_t, U, REF_LD_NATIVE, REF_ST_U8)                                          \
    X(A, u16, RN_U16, uint16_t, U, REF_LD_NATIVE, REF_ST_U16)                                      \
    X(A, u32, RN_U32, uint32_t, U, REF_LD_NATIVE, REF_ST_U32)                                      \
    X(A, u64, RN_U64, uint64_t, U, REF_LD_NATIVE, REF_ST_U64)                                      \
    X(A, bool, RN_BOOL, uint8_t, B, REF_LD_BOOL, REF_ST_BOOL)

/* A is the source as (sfx, RN, S, LD); DEF_PAIR unpacks it. */
#define DEF_PAIR_(ssfx, SRN, SS, SLD, dsfx, DS, DST)                                               \
    static void convert_##ssfx##_##dsfx(const void *src, void *dst, int64_t n)                     \
    {                                                                                              \
        const SS *s = src;                                                                         \
        DS *d = dst;                                                                               \
        for (int64_t i = 0; i < n; i++)                                                            \
            d[i] = DST(SLD(s[i]));                                                                 \
    }
#define CALL_(m, args)                               m args
#define UNPACK_(...)                                 __VA_ARGS__
#define DEF_PAIR(A, dsfx, DRN, DS, DCLS, DLD, DST)   CALL_(DEF_PAIR_, (UNPACK_ A, dsfx, DS, DST))
#define ENTRY_PAIR_(ssfx, SRN, SS, SLD, dsfx, DRN)   [SRN][DRN] = convert_##ssfx##_##dsfx,
#define ENTRY_PAIR(A, dsfx, DRN, DS, DCLS, DLD, DST) CALL_(ENTRY_PAIR_, (UNPACK_ A, dsfx, DRN))

#define SOURCE(A, sfx, RN, S, CLS, LD, ST)         DST_TYPES(DEF_PAIR, (sfx, RN, S, LD))
#define SOURCE_ENTRIES(A, sfx, RN, S, CLS, LD, ST) DST_TYPES(ENTRY_PAIR, (sfx, RN, S, LD))

REF_TYPES_ALL(SOURCE, _)

static const convert_fn convert_table[REF_NTYPES][REF_NTYPES] = {REF_TYPES_ALL(SOURCE_ENTRIES, _)};

/* ---- strings ---- */

/* Formats v, a value of `type`, as numpy's str() does: the fewest significant
 * digits that read back to the same value of `type`, positional for decimal
 * exponents in [-4, 16), scientific otherwise; "nan", "inf", "-inf". */
static void format_number(double v, rn_element_type type, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v < 0 ? "-inf" : "inf");
        return;
    }
    uint64_t want = 0, got = 0;
    ref_convert(RN_F64, &v, type, &want, 1);
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(buf, size, "%.*e", digits - 1, v);
        double back = strtod(buf, NULL);
        got = 0;
        ref_convert(RN_F64, &back, type, &got, 1);
        if (got == want)
            break;
    }
    snprintf(buf, size, "%.*e", digits - 1, v);
    int exp10 = atoi(strchr(buf, 'e') + 1);
    if (v == 0 || (exp10 >= -4 && exp10 < 16)) {
        int decimals = digits - 1 - exp10;
        snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, v);
        if (decimals <= 0)
            strncat(buf, ".0", size - strlen(buf) - 1);
    } else {
        /* numpy writes "1e-05", not "1.e-05": drop a lone decimal point */
        if (digits == 1) {
            char *dot = strchr(buf, '.');
            if (dot)
                memmove(dot, dot + 1, strlen(dot));
        }
    }
}

static rn_status to_strings(const graph_node *node, const graph_tensor *x, graph_tensor *y)
{
    size_t n = graph_tensor_count(x);
    char **out = y->data;
    double v;
    for (size_t i = 0; i < n; i++) {
        char buf[64];
        if (x->type == RN_BOOL) {
            snprintf(buf, sizeof buf, "%s", ((const uint8_t *)x->data)[i] ? "True" : "False");
        } else if (x->type == RN_I64 || x->type == RN_I32 || x->type == RN_I16 ||
                   x->type == RN_I8) {
            int64_t iv;
            ref_convert(x->type, (const char *)x->data + i * rn_element_type_size(x->type), RN_I64,
                        &iv, 1);
            snprintf(buf, sizeof buf, "%lld", (long long)iv);
        } else if (x->type == RN_U64 || x->type == RN_U32 || x->type == RN_U16 ||
                   x->type == RN_U8) {
            uint64_t uv;
            ref_convert(x->type, (const char *)x->data + i * rn_element_type_size(x->type), RN_U64,
                        &uv, 1);
            snprintf(buf, sizeof buf, "%llu", (unsigned long long)uv);
        } else {
            ref_convert(x->type, (const char *)x->data + i * rn_element_type_size(x->type), RN_F64,
                        &v, 1);
            format_number(v, x->type, buf, sizeof buf);
        }
        char *s = strdup(buf);
        if (s == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                                node->op_type);
        out[i] = s;
    }
    return RN_OK;
}

static rn_status from_strings(const graph_node *node, const graph_tensor *x, graph_tensor *y)
{
    size_t n = graph_tensor_count(x);
    char *const *in = x->data;
    size_t es = rn_element_type_size(y->type);
    for (size_t i = 0; i < n; i++) {
        const char *s = in[i] != NULL ? in[i] : "";
        char *end;
        double v = strtod(s, &end);
        while (*end == ' ' || *end == '\t' || *end == '\n')
            end++;
        if (end == s || *end != '\0')
            return rn_set_error(RN_INVALID_ARG,
                                "node '%s' (%s): input 0 element %zu '%s' is not a number",
                                node->name, node->op_type, i, s);
        char *dst = (char *)y->data + i * es;
        if (y->type == RN_I64 || y->type == RN_U64) {
            /* integers beyond 2^53 do not survive a double */
            int64_t iv =
                y->type == RN_I64 ? (int64_t)strtoll(s, NULL, 10) : (int64_t)strtoull(s, NULL, 10);
            bool integral =
                strpbrk(s, ".eEnNiIxX") == NULL; /* no fraction, exponent, nan, inf, hex */
            if (integral)
                memcpy(dst, &iv, sizeof iv);
            else
                ref_convert(RN_F64, &v, y->type, dst, 1);
        } else {
            ref_convert(RN_F64, &v, y->type, dst, 1);
        }
    }
    return RN_OK;
}

static rn_status copy_strings(const graph_node *node, const graph_tensor *x, graph_tensor *y)
{
    size_t n = graph_tensor_count(x);
    char *const *in = x->data;
    char **out = y->data;
    for (size_t i = 0; i < n; i++) {
        char *s = strdup(in[i] != NULL ? in[i] : "");
        if (s == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                                node->op_type);
        out[i] = s;
    }
    return RN_OK;
}

/* ---- the kernels ---- */

bool ref_convert(rn_element_type st, const void *src, rn_element_type dt, void *dst, int64_t n)
{
    if ((unsigned)st >= REF_NTYPES || (unsigned)dt >= REF_NTYPES)
        return false;
    convert_fn fn = convert_table[st][dt];
    if (fn == NULL)
        return false;
    fn(src, dst, n);
    return true;
}

static bool known_type(rn_element_type t)
{
    return ref_is_float8(t) ||
           ((unsigned)t < REF_NTYPES && (t == RN_STRING || convert_table[t][t] != NULL));
}

/* Converts n elements when either side is a float8 type, through double
 * (exact for every source type but 64-bit integers beyond 2^53, which float8
 * saturates or overflows anyway). */
static void convert_float8(rn_element_type st, const void *src, rn_element_type dt, void *dst,
                           int64_t n, bool saturate)
{
    size_t ss = rn_element_type_size(st), ds = rn_element_type_size(dt);
    for (int64_t i = 0; i < n; i++) {
        const char *s = (const char *)src + (size_t)i * ss;
        char *d = (char *)dst + (size_t)i * ds;
        double v;
        if (ref_is_float8(st))
            v = ref_f8_to_f64(st, *(const uint8_t *)s);
        else
            ref_convert(st, s, RN_F64, &v, 1);
        if (ref_is_float8(dt))
            *(uint8_t *)d = ref_f64_to_f8(dt, v, saturate);
        else
            ref_convert(RN_F64, &v, dt, d, 1);
    }
}

static bool cast_supports(const graph_node *node, const char **why)
{
    rn_element_type from = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    rn_element_type to = node->outputs[0] ? node->outputs[0]->type : RN_UNDEFINED;
    if (!known_type(from)) {
        *why = ref_why_type(0, from);
        return false;
    }
    if (!known_type(to)) {
        static _Thread_local char buf[64];
        snprintf(buf, sizeof buf, "output type %s", rn_element_type_name(to));
        *why = buf;
        return false;
    }
    if ((from == RN_STRING && ref_is_float8(to)) || (to == RN_STRING && ref_is_float8(from))) {
        *why = "strings to or from float8";
        return false;
    }
    return true;
}

static rn_status cast_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if (graph_tensor_count(x) != graph_tensor_count(y))
        return rn_set_error(RN_SHAPE_MISMATCH, "node '%s' (%s): output has %zu elements, input %zu",
                            node->name, node->op_type, graph_tensor_count(y),
                            graph_tensor_count(x));
    if (ref_is_float8(x->type) || ref_is_float8(y->type)) {
        if (x->type == RN_STRING || y->type == RN_STRING)
            return rn_set_error(RN_UNSUPPORTED, "node '%s' (%s): cannot cast %s to %s", node->name,
                                node->op_type, rn_element_type_name(x->type),
                                rn_element_type_name(y->type));
        bool saturate = graph_node_attr_int(node, "saturate", 1) != 0;
        convert_float8(x->type, x->data, y->type, y->data, (int64_t)graph_tensor_count(x),
                       saturate);
        return RN_OK;
    }
    if (x->type == RN_STRING && y->type == RN_STRING)
        return copy_strings(node, x, y);
    if (y->type == RN_STRING && known_type(x->type))
        return to_strings(node, x, y);
    if (x->type == RN_STRING && known_type(y->type))
        return from_strings(node, x, y);
    if (!ref_convert(x->type, x->data, y->type, y->data, (int64_t)graph_tensor_count(x)))
        return rn_set_error(RN_UNSUPPORTED, "node '%s' (%s): cannot cast %s to %s", node->name,
                            node->op_type, rn_element_type_name(x->type),
                            rn_element_type_name(y->type));
    return RN_OK;
}

REF_KERNEL(ref_kernel_cast, "Cast", cast_supports, cast_run)
REF_KERNEL(ref_kernel_castlike, "CastLike", cast_supports, cast_run)
