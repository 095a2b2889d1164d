/* The four float8 element types (private to plugins/ref): decoding to double
 * and encoding from double, as ONNX's Cast, CastLike, QuantizeLinear and
 * DequantizeLinear define them.
 *
 *   type        layout   bias  max     inf  NaN            -0
 *   E4M3FN      1.4.3    7     448     no   S.1111.111     yes
 *   E4M3FNUZ    1.4.3    8     240     no   1.0000.000     no
 *   E5M2        1.5.2    15    57344   yes  S.11111.{01..} yes
 *   E5M2FNUZ    1.5.2    16    57344   no   1.00000.00     no
 *
 * Encoding rounds to nearest even once (from the exact double, so f16 and f32
 * sources are rounded a single time). With `saturate` a finite or infinite
 * value beyond the largest finite one becomes that largest value with its
 * sign (what the ONNX reference and its test data do for every format: it
 * clips before casting); without it an overflow becomes infinity where the
 * format has one (E5M2) and NaN elsewhere. NaN stays NaN. The FNUZ formats
 * have no negative zero, so -0 and negative values that round to zero encode
 * as +0.
 */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_FLOAT8_H
#define RUNNEL_PLUGINS_REF_KERNELS_FLOAT8_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "runnel/tensor.h"

static inline bool ref_is_float8(rn_element_type t)
{
    return t == RN_F8E4M3FN || t == RN_F8E4M3FNUZ || t == RN_F8E5M2 || t == RN_F8E5M2FNUZ;
}

typedef struct ref_f8_format {
    int man_bits; /* explicit significand bits */
    int bias;
    bool fnuz;    /* NaN is 0x80 only, no -0, no infinity */
    bool has_inf; /* E5M2: IEEE-style infinities */
    double max;   /* largest finite value */
} ref_f8_format;

/* The format of a float8 type (E4M3FN for any other type: callers check
 * ref_is_float8 first). */
static inline ref_f8_format ref_f8_format_of(rn_element_type t)
{
    switch (t) {
    case RN_F8E4M3FNUZ:
        return (ref_f8_format){3, 8, true, false, 240.0};
    case RN_F8E5M2:
        return (ref_f8_format){2, 15, false, true, 57344.0};
    case RN_F8E5M2FNUZ:
        return (ref_f8_format){2, 16, true, false, 57344.0};
    default:
        return (ref_f8_format){3, 7, false, false, 448.0};
    }
}

static inline double ref_f8_to_f64(rn_element_type t, uint8_t b)
{
    ref_f8_format f = ref_f8_format_of(t);
    int exp_bits = 7 - f.man_bits;
    int e = (b >> f.man_bits) & ((1 << exp_bits) - 1);
    int m = b & ((1 << f.man_bits) - 1);
    if (f.fnuz) {
        if (b == 0x80)
            return NAN;
    } else if (f.has_inf) {
        if (e == (1 << exp_bits) - 1)
            return m ? NAN : ((b & 0x80) ? -INFINITY : INFINITY);
    } else if ((b & 0x7f) == 0x7f) {
        return NAN;
    }
    double v = e == 0 ? ldexp(m, 1 - f.bias - f.man_bits)
                      : ldexp(m + (1 << f.man_bits), e - f.bias - f.man_bits);
    return (b & 0x80) ? -v : v;
}

static inline uint8_t ref_f64_to_f8(rn_element_type t, double x, bool saturate)
{
    ref_f8_format f = ref_f8_format_of(t);
    uint8_t nan_code = f.fnuz ? 0x80 : 0x7f;
    if (isnan(x))
        return nan_code;
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double a = fabs(x);
    int emin = 1 - f.bias; /* exponent of the smallest normal value */
    int e = emin;
    if (a != 0 && !isinf(a)) {
        frexp(a, &e);
        e -= 1; /* a is in [2^e, 2^(e+1)) */
        if (e < emin)
            e = emin;
        /* Scaling by a power of two is exact, so this is one rounding. */
        double q = ldexp(1.0, e - f.man_bits);
        a = nearbyint(a / q) * q;
    }
    if (a > f.max) {
        if (saturate)
            a = f.max;
        else if (f.has_inf)
            return sign | 0x7c; /* S.11111.00 */
        else
            return f.fnuz ? nan_code : (uint8_t)(sign | nan_code);
    }
    if (a == 0)
        return f.fnuz ? 0 : sign;
    frexp(a, &e);
    e -= 1;
    if (e < emin) /* subnormal: exponent field 0 */
        return sign | (uint8_t)(a / ldexp(1.0, emin - f.man_bits));
    int m = (int)(a / ldexp(1.0, e - f.man_bits)) - (1 << f.man_bits);
    return sign | (uint8_t)((e + f.bias) << f.man_bits) | (uint8_t)m;
}

#endif /* RUNNEL_PLUGINS_REF_KERNELS_FLOAT8_H */
