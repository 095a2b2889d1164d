/* The generated cases of the CPU differential test (diff_gen.h): the
 * contexts an op is put in, and one generator per family. */
#include "tests/cpu/diff_gen.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the generator's state ---- */

#define MAX_SYMS    16
#define MAX_RESULTS 4

typedef struct gen {
    uint64_t rng;
    dg_case *c;
    dm_model *m;
    dm_graph *main; /* the model's graph */
    dm_graph *g;    /* where the op goes: main, If's then-branch or Loop's body */
    bool dyn;       /* inputs declared with symbolic dims */
    const char *iter_f32;
    int n_syms;
    int64_t sym[MAX_SYMS][DG_MAX_RUNS];
    int n_results;
    const char *results[MAX_RESULTS];
    rn_element_type result_types[MAX_RESULTS];
} gen;

static uint64_t next(gen *g)
{
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* An integer in [lo, hi]. */
static int rnd(gen *g, int lo, int hi)
{
    return lo + (int)(next(g) % (uint64_t)(hi - lo + 1));
}

static float rndf(gen *g, float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(next(g) >> 40) / (double)(1 << 24));
}

static bool chance(gen *g, double p)
{
    return (double)(next(g) >> 11) * (1.0 / 9007199254740992.0) < p;
}

#define PICK(g, arr) (arr)[rnd((g), 0, (int)(sizeof(arr) / sizeof((arr)[0])) - 1)]

/* A dim: mostly 2..7, often 1, sometimes 8..17 (odd channel counts) and,
 * where the op takes it, 0. */
static int64_t rdim(gen *g, bool zero)
{
    int r = rnd(g, 0, 99);
    if (zero && r < 5)
        return 0;
    if (r < 25)
        return 1;
    if (r < 90)
        return rnd(g, 2, 7);
    return rnd(g, 8, 17);
}

static void desc(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void desc(gen *g, const char *fmt, ...)
{
    size_t n = strlen(g->c->desc);
    if (n + 1 >= sizeof g->c->desc)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->c->desc + n, sizeof g->c->desc - n, fmt, ap);
    va_end(ap);
}

static void desc_ints(gen *g, const char *name, int n, const int64_t *v)
{
    desc(g, " %s=[", name);
    for (int i = 0; i < n; i++)
        desc(g, "%s%lld", i ? "," : "", (long long)v[i]);
    desc(g, "]");
}

/* A symbol: a dim whose value changes between runs when inputs are
 * dynamic (v0 in the first run, a value >= min in the second). */
static int sym(gen *g, int64_t v0, int64_t min)
{
    assert(g->n_syms < MAX_SYMS);
    int s = g->n_syms++;
    g->sym[s][0] = v0;
    if (min < 1)
        min = v0 == 0 ? 0 : 1;
    g->sym[s][1] = chance(g, 0.2) ? v0 : min + rnd(g, 0, 4);
    return s;
}

/* Every eleventh seed of the families whose batch is otherwise at least 1
 * makes the batch 0 in the first run (an empty tensor; the second run of a
 * dynamic case has one again). Decided by the seed, so that the other
 * cases keep their draws. */
static void maybe_empty_batch(gen *g, int64_t *dims, int s)
{
    if (g->c->seed % 11 != 10)
        return;
    dims[0] = 0;
    g->sym[s][0] = 0;
    desc(g, "(empty batch) ");
}

/* ---- values: inputs, constants, results ---- */

static void fill(gen *g, rn_element_type t, size_t n, float lo, float hi, void *out)
{
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case RN_F32:
            ((float *)out)[i] = rndf(g, lo, hi);
            break;
        case RN_I32:
            ((int32_t *)out)[i] = rnd(g, (int)lo, (int)hi);
            break;
        case RN_I64:
            ((int64_t *)out)[i] = rnd(g, (int)lo, (int)hi);
            break;
        case RN_I8:
            ((int8_t *)out)[i] = (int8_t)rnd(g, (int)lo, (int)hi);
            break;
        case RN_U8:
            ((uint8_t *)out)[i] = (uint8_t)rnd(g, (int)lo, (int)hi);
            break;
        case RN_BOOL:
            ((uint8_t *)out)[i] = (uint8_t)rnd(g, 0, 1);
            break;
        default:
            assert(!"type");
            break;
        }
    }
}

static size_t count(int rank, const int64_t *dims)
{
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    return n;
}

/* A constant of random values in the graph the op is built in. */
static const char *cst(gen *g, rn_element_type t, int rank, const int64_t *dims, float lo, float hi)
{
    size_t n = count(rank, dims), es = rn_element_type_size(t);
    void *data = malloc(n * es + 1);
    fill(g, t, n, lo, hi, data);
    const char *name = dm_init(g->g, (int)t, es, rank, dims, data);
    free(data);
    return name;
}

static const char *cst_f32(gen *g, float v)
{
    return dm_init_f32(g->g, 0, NULL, &v);
}

/* The op's input of type t and shape dims (dim d changing between runs as
 * symbol syms[d] where syms is given and syms[d] >= 0): a model input, or
 * in the fold context a constant. In a Loop body an f32 input is
 * x + iteration. */
static const char *input(gen *g, rn_element_type t, int rank, const int64_t *dims, const int *syms,
                         float lo, float hi)
{
    if (g->c->context == DG_FOLD)
        return cst(g, t, rank, dims, lo, hi);
    assert(g->c->n_inputs < DG_MAX_INPUTS);
    int k = g->c->n_inputs++;
    dg_input *in = &g->c->inputs[k];
    in->name = dm_fresh(g->m, "x");
    in->type = t;
    in->rank = rank;
    in->lo = lo;
    in->hi = hi;
    char params[DG_MAX_RANK][24];
    const char *pp[DG_MAX_RANK] = {NULL};
    for (int d = 0; d < rank; d++) {
        bool vary = g->dyn && syms != NULL && syms[d] >= 0;
        for (int r = 0; r < DG_MAX_RUNS; r++)
            in->dims[r][d] = vary ? g->sym[syms[d]][r] : dims[d];
        if (vary)
            snprintf(params[d], sizeof params[d], "s%d", syms[d]);
        else
            snprintf(params[d], sizeof params[d], "%s_%d", in->name, d);
        if (vary || (g->dyn && chance(g, 0.6)))
            pp[d] = params[d];
    }
    dm_input(g->main, in->name, (int)t, rank, dims, pp);
    if (g->iter_f32 != NULL && t == RN_F32)
        return dm_op2(g->g, "Add", in->name, g->iter_f32);
    return in->name;
}

static void result(gen *g, const char *name, rn_element_type t)
{
    assert(g->n_results < MAX_RESULTS);
    g->results[g->n_results] = name;
    g->result_types[g->n_results++] = t;
}

/* Sometimes puts a 1x1 Conv (C to C channels) in front of a rank-4 f32
 * tensor: oneDNN's convolution writes a blocked layout (nChw8c) that the
 * op then reads as it is. Not where C changes between runs (syms[1]). */
static const char *maybe_blocked(gen *g, const char *x, int rank, const int64_t *dims,
                                 const int *syms)
{
    if (rank != 4 || count(rank, dims) == 0 || !chance(g, 0.3) ||
        (g->dyn && syms != NULL && syms[1] >= 0))
        return x;
    int64_t wd[4] = {dims[1], dims[1], 1, 1};
    const char *w = cst(g, RN_F32, 4, wd, -1, 1);
    desc(g, " (input through a 1x1 Conv)");
    return dm_op2(g->g, "Conv", x, w);
}

/* y, or Relu(y) with probability p (a fusion's second half). */
static const char *maybe_relu(gen *g, const char *y, double p)
{
    if (!chance(g, p))
        return y;
    desc(g, " then Relu");
    return dm_op1(g->g, "Relu", y);
}

static int64_t *random_perm(gen *g, int n, int64_t *perm)
{
    for (int i = 0; i < n; i++)
        perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rnd(g, 0, i);
        int64_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    return perm;
}

/* ---- families ---- */

static void gen_unary(void *p)
{
    gen *g = p;
    static const char *const ops[] = {"Relu",      "LeakyRelu", "Elu",  "Sigmoid", "Tanh",
                                      "Exp",       "Sqrt",      "Abs",  "Neg",     "Mish",
                                      "HardSwish", "Gelu",      "Clip", "Relu",    "Sigmoid"};
    const char *op = PICK(g, ops);
    g->c->op = op;
    dm_set_opset(g->m, strcmp(op, "Gelu") == 0 ? 20 : 18);
    int rank = rnd(g, 0, 5);
    int64_t dims[DG_MAX_RANK];
    int syms[DG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        dims[d] = rdim(g, true);
        syms[d] = chance(g, 0.5) ? sym(g, dims[d], 0) : -1;
    }
    float lo = strcmp(op, "Sqrt") == 0 ? 0.0f : -4.0f;
    const char *x =
        maybe_blocked(g, input(g, RN_F32, rank, dims, syms, lo, 4.0f), rank, dims, syms);
    if (strcmp(op, "Sqrt") == 0 && strstr(g->c->desc, "Conv") != NULL)
        x = dm_op1(g->g, "Abs", x);
    const char *y;
    if (strcmp(op, "Clip") == 0) {
        const char *ins[3] = {x, "", ""};
        float a = rndf(g, -3, 0), b = rndf(g, 0, 3);
        if (chance(g, 0.7))
            ins[1] = cst_f32(g, a);
        if (chance(g, 0.7))
            ins[2] = cst_f32(g, b);
        y = dm_node(g->g, op, 3, ins, 1, NULL);
        desc(g, "Clip min=%s%g max=%s%g", ins[1][0] ? "" : "none:", a, ins[2][0] ? "" : "none:", b);
    } else {
        y = dm_op1(g->g, op, x);
        desc(g, "%s", op);
        if (strcmp(op, "LeakyRelu") == 0 || strcmp(op, "Elu") == 0) {
            float a = rndf(g, 0.05f, 2.0f);
            dm_attr_float(g->g, "alpha", a);
            desc(g, " alpha=%g", a);
        }
        if (strcmp(op, "Gelu") == 0 && chance(g, 0.4)) {
            dm_attr_string(g->g, "approximate", "tanh");
            desc(g, " approximate=tanh");
        }
    }
    if (chance(g, 0.25)) {
        static const char *const then[] = {"Relu", "Tanh", "Sigmoid", "Abs"};
        const char *op2 = PICK(g, then);
        y = dm_op1(g->g, op2, y);
        desc(g, " then %s", op2);
    }
    result(g, y, RN_F32);
}

static void gen_binary(void *p)
{
    gen *g = p;
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum"};
    const char *op = PICK(g, ops);
    g->c->op = op;
    int rank = rnd(g, 0, 5);
    int64_t y[DG_MAX_RANK], a[DG_MAX_RANK], b[DG_MAX_RANK];
    int sa[DG_MAX_RANK], sb[DG_MAX_RANK];
    int mode = rnd(g, 0, 4); /* same, b broadcast, a broadcast, both, b scalar */
    int rb = rank, ra = rank;
    if ((mode == 1 || mode == 3) && rank > 0)
        rb = rnd(g, 0, rank);
    if (mode == 2 && rank > 0)
        ra = rnd(g, 0, rank);
    if (mode == 4)
        rb = 0;
    bool bconst = chance(g, 0.3); /* a constant b fixes every dim */
    for (int d = 0; d < rank; d++) {
        y[d] = rdim(g, true);
        int s = !bconst && chance(g, 0.5) ? sym(g, y[d], 0) : -1;
        int ka = d - (rank - ra), kb = d - (rank - rb);
        bool a1 = (mode == 2 || mode == 3) && chance(g, 0.4);
        bool b1 = (mode == 1 || (mode == 3 && !a1)) && chance(g, 0.4);
        if (ka >= 0)
            a[ka] = a1 ? 1 : y[d], sa[ka] = a1 ? -1 : s;
        if (kb >= 0)
            b[kb] = b1 ? 1 : y[d], sb[kb] = b1 ? -1 : s;
    }
    bool div = strcmp(op, "Div") == 0;
    const char *x0 = maybe_blocked(g, input(g, RN_F32, ra, a, sa, -3, 3), ra, a, sa);
    const char *x1 = bconst ? cst(g, RN_F32, rb, b, div ? 0.5f : -3.0f, 3.0f)
                            : input(g, RN_F32, rb, b, sb, div ? 0.5f : -3.0f, 3.0f);
    bool three = strcmp(op, "Sum") == 0 && chance(g, 0.3);
    const char *ins[3] = {x0, x1, three ? input(g, RN_F32, ra, a, sa, -3, 3) : NULL};
    if (chance(g, 0.3) && strcmp(op, "Sub") != 0 && !div)
        ins[0] = x1, ins[1] = x0;
    desc(g, "%s of %d inputs (broadcast mode %d)", op, three ? 3 : 2, mode);
    result(g, dm_node(g->g, op, three ? 3 : 2, ins, 1, NULL), RN_F32);
}

/* Concat of 1 to 5 inputs along any axis (negative too), some of them
 * empty along it, each a model input, a constant, an Unsqueeze or an
 * Expand. */
static void gen_concat(void *p)
{
    gen *g = p;
    g->c->op = "Concat";
    int rank = rnd(g, 1, 5);
    int axis = rnd(g, -rank, rank - 1), ax = axis < 0 ? axis + rank : axis;
    int n = chance(g, 0.4) ? 2 : rnd(g, 1, 5);
    int64_t base[DG_MAX_RANK];
    int syms[DG_MAX_RANK];
    int src[8];
    bool fixed = false;
    for (int k = 0; k < n; k++) {
        src[k] = rnd(g, 0, 5); /* 0, 1: input; 2: constant; 3: Unsqueeze; 4: Expand; 5: Conv */
        fixed = fixed || src[k] == 2 || src[k] == 4;
    }
    for (int d = 0; d < rank; d++) {
        base[d] = rdim(g, chance(g, 0.3));
        syms[d] = !fixed && d != ax && chance(g, 0.6) ? sym(g, base[d], 0) : -1;
    }
    desc(g, "Concat axis=%d of %d:", axis, n);
    const char *ins[8];
    for (int k = 0; k < n; k++) {
        int64_t dims[DG_MAX_RANK];
        int s[DG_MAX_RANK];
        memcpy(dims, base, sizeof dims);
        memcpy(s, syms, sizeof s);
        dims[ax] = chance(g, 0.15) ? 0 : rnd(g, 1, 4);
        s[ax] = !fixed && chance(g, 0.5) ? sym(g, dims[ax], 0) : -1;
        if (src[k] == 3)
            dims[ax] = 1, s[ax] = -1;
        char shape[96] = "";
        for (int d = 0; d < rank; d++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? "," : "",
                     (long long)dims[d]);
        if (src[k] == 2) {
            ins[k] = cst(g, RN_F32, rank, dims, -2, 2);
            desc(g, " const[%s]", shape);
        } else if (src[k] == 3) {
            int64_t inner[DG_MAX_RANK];
            int si[DG_MAX_RANK];
            for (int d = 0, j = 0; d < rank; d++)
                if (d != ax)
                    inner[j] = dims[d], si[j++] = s[d];
            const char *x = input(g, RN_F32, rank - 1, inner, si, -2, 2);
            int64_t a = chance(g, 0.5) ? axis : ax;
            ins[k] = dm_op2(g->g, "Unsqueeze", x, dm_vec_i64(g->g, 1, &a));
            desc(g, " Unsqueeze(axes=%lld)[%s]", (long long)a, shape);
        } else if (src[k] == 4) {
            int64_t small[DG_MAX_RANK];
            for (int d = 0; d < rank; d++)
                small[d] = chance(g, 0.5) ? 1 : dims[d];
            const char *x = input(g, RN_F32, rank, small, NULL, -2, 2);
            ins[k] = dm_op2(g->g, "Expand", x, dm_vec_i64(g->g, rank, dims));
            desc(g, " Expand[%s]", shape);
        } else {
            ins[k] = input(g, RN_F32, rank, dims, s, -2, 2);
            if (src[k] == 5) {
                ins[k] = maybe_blocked(g, ins[k], rank, dims, s);
                desc(g, " [%s]", shape);
            } else {
                desc(g, " [%s]", shape);
            }
        }
    }
    const char *y = dm_node(g->g, "Concat", n, ins, 1, NULL);
    dm_attr_int(g->g, "axis", axis);
    result(g, maybe_relu(g, y, 0.3), RN_F32);
}

/* A detection head's anchor grid (the shape of issue 24's
 * anchors_dyn.onnx): x [N, C, H, W] -> Shape -> Gather H, W -> Range ->
 * Unsqueeze -> Expand to [H, W] -> Unsqueeze(-1) -> Concat along the last
 * axis, with a feature map of x as a third part. */
static void gen_concat_grid(void *p)
{
    gen *g = p;
    g->c->op = "Concat";
    int64_t dims[4] = {1, rnd(g, 1, 5), rdim(g, false), rdim(g, false)};
    int syms[4] = {-1, -1, sym(g, dims[2], 1), sym(g, dims[3], 1)};
    const char *x = input(g, RN_F32, 4, dims, syms, -1, 1);
    dm_graph *b = g->g;
    const char *s = dm_op1(b, "Shape", x);
    const char *h = dm_op2(b, "Gather", s, dm_scalar_i64(b, 2));
    dm_attr_int(b, "axis", 0);
    const char *w = dm_op2(b, "Gather", s, dm_scalar_i64(b, 3));
    dm_attr_int(b, "axis", 0);
    const char *hf = dm_op1(b, "Cast", h);
    dm_attr_int(b, "to", 1);
    const char *wf = dm_op1(b, "Cast", w);
    dm_attr_int(b, "to", 1);
    float start = chance(g, 0.5) ? 0.0f : 0.5f;
    const char *r1[3] = {cst_f32(g, start), hf, cst_f32(g, 1.0f)};
    const char *ry = dm_node(b, "Range", 3, r1, 1, NULL);
    const char *r2[3] = {cst_f32(g, start), wf, cst_f32(g, 1.0f)};
    const char *rx = dm_node(b, "Range", 3, r2, 1, NULL);
    int64_t zero = 0, one = 1, last = -1;
    const char *ry2 = dm_op2(b, "Unsqueeze", ry, dm_vec_i64(b, 1, &one));
    const char *rx2 = dm_op2(b, "Unsqueeze", rx, dm_vec_i64(b, 1, &zero));
    const char *hw[2] = {dm_op2(b, "Unsqueeze", h, dm_vec_i64(b, 1, &zero)),
                         dm_op2(b, "Unsqueeze", w, dm_vec_i64(b, 1, &zero))};
    const char *shape = dm_node(b, "Concat", 2, hw, 1, NULL);
    dm_attr_int(b, "axis", 0);
    const char *gy = dm_op2(b, "Expand", ry2, shape);
    const char *gx = dm_op2(b, "Expand", rx2, shape);
    int64_t ax = chance(g, 0.6) ? -1 : 2;
    const char *parts[3] = {dm_op2(b, "Unsqueeze", gx, dm_vec_i64(b, 1, &last)),
                            dm_op2(b, "Unsqueeze", gy, dm_vec_i64(b, 1, &ax)), NULL};
    int n = 2;
    if (chance(g, 0.6)) {
        const char *m = dm_op1(b, "ReduceMean", x);
        dm_attr_ints(b, "axes", 1, &one);
        dm_attr_int(b, "keepdims", 0);
        const char *sq = dm_op2(b, "Squeeze", m, dm_vec_i64(b, 1, &zero));
        parts[n++] = dm_op2(b, "Unsqueeze", sq, dm_vec_i64(b, 1, &last));
    }
    if (chance(g, 0.3)) {
        const char *t = parts[0];
        parts[0] = parts[1], parts[1] = t;
    }
    const char *y = dm_node(b, "Concat", n, parts, 1, NULL);
    dm_attr_int(b, "axis", ax);
    desc(g, "anchor grid: Shape/Range/Expand/Unsqueeze, Concat axis=%lld of %d parts, start %g",
         (long long)ax, n, start);
    result(g, y, RN_F32);
}

static void gen_transpose(void *p)
{
    gen *g = p;
    g->c->op = "Transpose";
    static const rn_element_type types[] = {RN_F32, RN_F32, RN_I32, RN_I8, RN_U8, RN_I64};
    rn_element_type t = PICK(g, types);
    int rank = rnd(g, 1, 6);
    int64_t dims[DG_MAX_RANK], perm[DG_MAX_RANK];
    int syms[DG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        dims[d] = rank > 4 ? rnd(g, 1, 4) : rdim(g, true);
        syms[d] = chance(g, 0.5) ? sym(g, dims[d], 0) : -1;
    }
    const char *x = input(g, t, rank, dims, syms, t == RN_U8 ? 0 : -100, 100);
    if (t == RN_F32)
        x = maybe_blocked(g, x, rank, dims, syms);
    const char *y = dm_op1(g->g, "Transpose", x);
    desc(g, "Transpose %s", rn_element_type_name(t));
    if (chance(g, 0.8)) {
        dm_attr_ints(g->g, "perm", rank, random_perm(g, rank, perm));
        desc_ints(g, "perm", rank, perm);
    }
    result(g, y, t);
}

static void gen_softmax(void *p)
{
    gen *g = p;
    const char *op = chance(g, 0.5) ? "Softmax" : "LogSoftmax";
    g->c->op = op;
    int opset = chance(g, 0.3) ? 11 : 13;
    dm_set_opset(g->m, opset);
    int rank = rnd(g, 1, 5);
    int64_t dims[DG_MAX_RANK];
    int syms[DG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        dims[d] = rdim(g, chance(g, 0.2));
        syms[d] = chance(g, 0.5) ? sym(g, dims[d], 0) : -1;
    }
    const char *x = maybe_blocked(g, input(g, RN_F32, rank, dims, syms, -5, 5), rank, dims, syms);
    const char *y = dm_op1(g->g, op, x);
    desc(g, "%s opset %d", op, opset);
    if (chance(g, 0.8) || (opset < 13 && rank < 2)) { /* the default axis 1 needs rank 2 */
        int axis = rnd(g, -rank, rank - 1);
        dm_attr_int(g->g, "axis", axis);
        desc(g, " axis=%d", axis);
    }
    result(g, y, RN_F32);
}

/* Window geometry of pooling and convolution: kernel, strides, dilations,
 * pads, and an input size the window fits in. */
typedef struct window {
    int n;
    int64_t k[3], s[3], dl[3], pads[6], in[3];
    const char *auto_pad;
} window;

static void draw_window(gen *g, int n, int kmax, bool dilate, bool pad, window *w)
{
    w->n = n;
    w->auto_pad = NULL;
    if (pad && chance(g, 0.15)) {
        static const char *const modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
        w->auto_pad = PICK(g, modes);
    }
    for (int i = 0; i < n; i++) {
        w->k[i] = rnd(g, 1, kmax);
        w->s[i] = rnd(g, 1, 3);
        w->dl[i] = dilate && chance(g, 0.3) ? 2 : 1;
        int64_t eff = (w->k[i] - 1) * w->dl[i] + 1;
        w->pads[i] = pad && w->auto_pad == NULL ? rnd(g, 0, (int)w->k[i] - 1) : 0;
        w->pads[n + i] = pad && w->auto_pad == NULL ? rnd(g, 0, (int)w->k[i] - 1) : 0;
        int64_t min = eff - w->pads[i] - w->pads[n + i];
        w->in[i] = (min < 1 ? 1 : min) + rnd(g, 0, 6);
    }
}

static void window_attrs(gen *g, const window *w, bool dilate)
{
    int n = w->n;
    dm_attr_ints(g->g, "kernel_shape", n, w->k);
    dm_attr_ints(g->g, "strides", n, w->s);
    desc_ints(g, "kernel", n, w->k);
    desc_ints(g, "strides", n, w->s);
    if (dilate) {
        dm_attr_ints(g->g, "dilations", n, w->dl);
        desc_ints(g, "dilations", n, w->dl);
    }
    if (w->auto_pad != NULL) {
        dm_attr_string(g->g, "auto_pad", w->auto_pad);
        desc(g, " auto_pad=%s", w->auto_pad);
    } else {
        dm_attr_ints(g->g, "pads", 2 * n, w->pads);
        desc_ints(g, "pads", 2 * n, w->pads);
    }
}

/* Whether axis i of window w over `in` elements has an output window whose
 * taps all fall in the padding. */
static bool empty_window(const window *w, int i, int64_t in, bool ceil)
{
    int64_t eff = (w->k[i] - 1) * w->dl[i] + 1, pb = w->pads[i], pe = w->pads[w->n + i];
    if (w->auto_pad != NULL && strcmp(w->auto_pad, "VALID") == 0) {
        pb = pe = 0;
    } else if (w->auto_pad != NULL) {
        int64_t total = ((in + w->s[i] - 1) / w->s[i] - 1) * w->s[i] + eff - in;
        total = total > 0 ? total : 0;
        pb = strcmp(w->auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
        pe = total - pb;
    }
    int64_t span = in + pb + pe - eff;
    if (span < 0)
        return false; /* no output: shape inference says so */
    int64_t out = (ceil ? (span + w->s[i] - 1) / w->s[i] : span / w->s[i]) + 1;
    for (int64_t o = 0; o < out; o++) {
        bool valid = false;
        for (int64_t j = 0; j < w->k[i] && !valid; j++) {
            int64_t t = o * w->s[i] - pb + j * w->dl[i];
            valid = t >= 0 && t < in;
        }
        if (!valid)
            return true;
    }
    return false;
}

static void gen_pool(void *p)
{
    gen *g = p;
    static const char *const ops[] = {"MaxPool",       "AveragePool", "GlobalAveragePool",
                                      "GlobalMaxPool", "MaxPool",     "AveragePool"};
    const char *op = PICK(g, ops);
    g->c->op = op;
    bool global = strncmp(op, "Global", 6) == 0, max = strcmp(op, "MaxPool") == 0;
    int rank = rnd(g, 3, 5), n = rank - 2;
    window w;
    draw_window(g, n, rank == 5 ? 2 : 3, max, true, &w);
    int64_t dims[5] = {rnd(g, 1, 2), rdim(g, false)};
    int syms[5] = {sym(g, dims[0], 1), -1};
    maybe_empty_batch(g, dims, syms[0]);
    for (int i = 0; i < n; i++) {
        dims[2 + i] = global ? rdim(g, false) : w.in[i];
        int64_t eff = (w.k[i] - 1) * w.dl[i] + 1;
        syms[2 + i] = global ? sym(g, dims[2 + i], 1) : sym(g, dims[2 + i], eff);
    }
    const char *x = maybe_blocked(g, input(g, RN_F32, rank, dims, syms, -3, 3), rank, dims, syms);
    const char *y = dm_op1(g->g, op, x);
    desc(g, "%s", op);
    if (!global) {
        bool ceil = chance(g, 0.3) && w.auto_pad == NULL;
        bool include_pad = !max && chance(g, 0.3);
        /* No window of padding only: ONNX leaves its value undefined (REF
         * writes 0, oneDNN and ONNX Runtime the lowest float, the ONNX
         * reference NaN; notes/cpu-diff.md). Such a window needs a
         * dilation or ceil_mode: drop them on that axis. */
        for (int i = 0; i < n; i++) {
            int64_t in[DG_MAX_RUNS] = {dims[2 + i], g->dyn ? g->sym[syms[2 + i]][1] : dims[2 + i]};
            for (int r = 0; r < DG_MAX_RUNS; r++) {
                if (empty_window(&w, i, in[r], ceil))
                    w.dl[i] = 1;
                if (empty_window(&w, i, in[r], ceil))
                    ceil = false;
            }
        }
        window_attrs(g, &w, max);
        if (ceil) {
            dm_attr_int(g->g, "ceil_mode", 1);
            desc(g, " ceil_mode=1");
        }
        if (include_pad) {
            dm_attr_int(g->g, "count_include_pad", 1);
            desc(g, " count_include_pad=1");
        }
    }
    result(g, y, RN_F32);
}

static void gen_lrn(void *p)
{
    gen *g = p;
    g->c->op = "LRN";
    int rank = rnd(g, 3, 5);
    int64_t dims[5];
    int syms[5];
    for (int d = 0; d < rank; d++) {
        dims[d] = d < 2 ? rdim(g, false) : rnd(g, 1, 5);
        syms[d] = d != 1 && chance(g, 0.5) ? sym(g, dims[d], 1) : -1;
    }
    const char *x = maybe_blocked(g, input(g, RN_F32, rank, dims, syms, -2, 2), rank, dims, syms);
    const char *y = dm_op1(g->g, "LRN", x);
    int size = chance(g, 0.9) ? 2 * rnd(g, 0, 3) + 1 : 2 * rnd(g, 1, 2);
    float alpha = rndf(g, 1e-4f, 0.5f), beta = rndf(g, 0.5f, 1.0f), bias = rndf(g, 0.5f, 2.0f);
    dm_attr_int(g->g, "size", size);
    dm_attr_float(g->g, "alpha", alpha);
    dm_attr_float(g->g, "beta", beta);
    dm_attr_float(g->g, "bias", bias);
    desc(g, "LRN size=%d alpha=%g beta=%g bias=%g", size, alpha, beta, bias);
    result(g, y, RN_F32);
}

static void gen_batchnorm(void *p)
{
    gen *g = p;
    g->c->op = "BatchNormalization";
    dm_set_opset(g->m, 15);
    int rank = rnd(g, 2, 5);
    int64_t dims[5];
    int syms[5];
    for (int d = 0; d < rank; d++) {
        dims[d] = rdim(g, d != 1 && chance(g, 0.2));
        syms[d] = d != 1 && chance(g, 0.5) ? sym(g, dims[d], 0) : -1;
    }
    const char *x = maybe_blocked(g, input(g, RN_F32, rank, dims, syms, -3, 3), rank, dims, syms);
    int64_t c = dims[1];
    const char *ins[5] = {x, cst(g, RN_F32, 1, &c, 0.5f, 2), cst(g, RN_F32, 1, &c, -1, 1),
                          cst(g, RN_F32, 1, &c, -1, 1), cst(g, RN_F32, 1, &c, 0.1f, 2)};
    const char *y = dm_node(g->g, "BatchNormalization", 5, ins, 1, NULL);
    float eps = chance(g, 0.5) ? 1e-5f : rndf(g, 1e-4f, 1e-2f);
    dm_attr_float(g->g, "epsilon", eps);
    desc(g, "BatchNormalization epsilon=%g", eps);
    result(g, maybe_relu(g, y, 0.4), RN_F32);
}

static void gen_layernorm(void *p)
{
    gen *g = p;
    g->c->op = "LayerNormalization";
    int rank = rnd(g, 2, 5);
    bool decomposed = chance(g, 0.3);
    int axis = decomposed || chance(g, 0.75) ? -1 : rnd(g, -rank, rank - 1);
    int a = axis < 0 ? axis + rank : axis;
    int64_t dims[5];
    int syms[5];
    for (int d = 0; d < rank; d++) {
        dims[d] = d >= a ? rnd(g, 1, 9) : rdim(g, chance(g, 0.2));
        syms[d] = d < a && chance(g, 0.5) ? sym(g, dims[d], 0) : -1;
    }
    const char *x = input(g, RN_F32, rank, dims, syms, -3, 3);
    int64_t c = dims[rank - 1];
    const char *scale = cst(g, RN_F32, 1, &c, 0.5f, 1.5f);
    const char *bias = chance(g, 0.7) ? cst(g, RN_F32, 1, &c, -1, 1) : NULL;
    float eps = chance(g, 0.5) ? 1e-5f : 1e-3f;
    /* |x| <= 3, plus 2 in a Loop's third iteration. */
    g->c->f32_conditioning = 2 * 1.1920929e-7f * 5 / sqrtf(eps);
    const char *y;
    if (decomposed) {
        /* The exporters' decomposition, which fuse_layernorm puts back. */
        dm_graph *b = g->g;
        int64_t last = -1;
        const char *m = dm_op1(b, "ReduceMean", x);
        dm_attr_ints(b, "axes", 1, &last);
        const char *d = dm_op2(b, "Sub", x, m);
        const char *v = dm_op1(b, "ReduceMean", dm_op2(b, "Pow", d, cst_f32(g, 2.0f)));
        dm_attr_ints(b, "axes", 1, &last);
        const char *s = dm_op1(b, "Sqrt", dm_op2(b, "Add", v, cst_f32(g, eps)));
        y = dm_op2(b, "Mul", dm_op2(b, "Div", d, s), scale);
        if (bias != NULL)
            y = dm_op2(b, "Add", y, bias);
        desc(g, "LayerNormalization as ReduceMean/Sub/Pow/Sqrt/Div/Mul%s epsilon=%g",
             bias ? "/Add" : "", eps);
    } else {
        if (a != rank - 1) {
            /* scale and bias then span every normalised axis. */
            scale = cst(g, RN_F32, rank - a, dims + a, 0.5f, 1.5f);
            if (bias != NULL)
                bias = cst(g, RN_F32, rank - a, dims + a, -1, 1);
        }
        const char *ins[3] = {x, scale, bias};
        y = dm_node(g->g, "LayerNormalization", bias ? 3 : 2, ins, 1, NULL);
        dm_attr_int(g->g, "axis", axis);
        dm_attr_float(g->g, "epsilon", eps);
        desc(g, "LayerNormalization axis=%d epsilon=%g%s", axis, eps, bias ? " with bias" : "");
    }
    result(g, y, RN_F32);
}

static const char *const activations[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh",
                                          "Clip", "HardSwish", "Elu"};

/* An activation after y (as fuse_activation takes it). */
static const char *activation(gen *g, const char *y)
{
    const char *act = PICK(g, activations);
    desc(g, " then %s", act);
    if (strcmp(act, "Clip") == 0) {
        const char *ins[3] = {y, cst_f32(g, 0.0f), cst_f32(g, 6.0f)};
        return dm_node(g->g, "Clip", 3, ins, 1, NULL);
    }
    return dm_op1(g->g, act, y);
}

/* A Conv of x by constant weights wd (bias sometimes) over window w, then
 * sometimes an activation, a residual, a BatchNormalization or a
 * per-channel Mul/Add: the model's result. */
static void conv_and_after(gen *g, const char *x, int rank, const int64_t *wd, const window *w,
                           int64_t group, int64_t cin, int64_t cout)
{
    int n = rank - 2;
    const char *ins[3] = {x, cst(g, RN_F32, rank, wd, -1, 1), NULL};
    if (chance(g, 0.6))
        ins[2] = cst(g, RN_F32, 1, &cout, -1, 1);
    const char *y = dm_node(g->g, "Conv", ins[2] ? 3 : 2, ins, 1, NULL);
    desc(g, "Conv %dD group=%lld in=%lld out=%lld%s", n, (long long)group, (long long)cin,
         (long long)cout, ins[2] ? " bias" : "");
    window_attrs(g, w, true);
    dm_attr_int(g->g, "group", group);
    int post = rnd(g, 0, 5);
    if (post == 1) {
        y = activation(g, y);
    } else if (post == 2) {
        /* A residual of the output's shape: Conv(x) + Conv(x) by other
         * weights, so that its shape follows x's. */
        const char *ins2[3] = {x, cst(g, RN_F32, rank, wd, -1, 1), NULL};
        const char *r = dm_node(g->g, "Conv", 2, ins2, 1, NULL);
        window_attrs(g, w, true);
        dm_attr_int(g->g, "group", group);
        y = dm_op2(g->g, "Add", y, r);
        desc(g, " + a residual");
        if (chance(g, 0.5))
            y = activation(g, y);
    } else if (post == 3) {
        const char *bn[5] = {y, cst(g, RN_F32, 1, &cout, 0.5f, 2), cst(g, RN_F32, 1, &cout, -1, 1),
                             cst(g, RN_F32, 1, &cout, -1, 1), cst(g, RN_F32, 1, &cout, 0.1f, 2)};
        y = dm_node(g->g, "BatchNormalization", 5, bn, 1, NULL);
        desc(g, " then BatchNormalization");
    } else if (post == 4) {
        int64_t cd[4] = {cout, 1, 1, 1};
        y = dm_op2(g->g, chance(g, 0.5) ? "Mul" : "Add", y, cst(g, RN_F32, rank - 1, cd, -1, 1));
        desc(g, " then a per-channel Mul/Add");
    }
    result(g, y, RN_F32);
}

static void gen_conv(void *p)
{
    gen *g = p;
    g->c->op = "Conv";
    dm_set_opset(g->m, 15);
    int rank = rnd(g, 3, 5), n = rank - 2;
    int kind = rnd(g, 0, 4); /* 0-2 plain, 3 depthwise, 4 grouped */
    int64_t group = kind == 3 ? rnd(g, 1, 9) : kind == 4 ? rnd(g, 2, 3) : 1;
    int64_t cin = kind == 3 ? group : group * rnd(g, 1, 5);
    int64_t cout = kind == 3 ? group * rnd(g, 1, 2) : group * rnd(g, 1, 6);
    window w;
    draw_window(g, n, rank == 5 ? 2 : 3, true, true, &w);
    int64_t dims[5] = {rnd(g, 1, 2), cin}, wd[5] = {cout, cin / group};
    int syms[5] = {sym(g, dims[0], 1), -1};
    maybe_empty_batch(g, dims, syms[0]);
    for (int i = 0; i < n; i++) {
        dims[2 + i] = w.in[i];
        wd[2 + i] = w.k[i];
        syms[2 + i] = sym(g, w.in[i], (w.k[i] - 1) * w.dl[i] + 1);
    }
    conv_and_after(g, input(g, RN_F32, rank, dims, syms, -1, 1), rank, wd, &w, group, cin, cout);
}

/* The 3x3 stride-1 2-D convolutions the CPU device runs as Winograd on
 * AVX-512 (plugins/cpu/conv.c: 64 or more channels in whole blocks of 16,
 * maps of 12x12 and more), with the pads (asymmetric, or auto_pad) and
 * post-ops of gen_conv's cases, at batch 1 or 2: its kernels against
 * REF's direct sum at f32's tolerance. */
static void gen_conv_winograd(void *p)
{
    gen *g = p;
    g->c->op = "Conv";
    dm_set_opset(g->m, 15);
    static const int64_t channels[] = {64, 80, 96, 128};
    int64_t cin = channels[rnd(g, 0, 3)], cout = channels[rnd(g, 0, 3)];
    window w;
    draw_window(g, 2, 3, false, true, &w);
    int64_t dims[4] = {rnd(g, 1, 2), cin}, wd[4] = {cout, cin, 3, 3};
    int syms[4] = {sym(g, dims[0], 1), -1};
    for (int i = 0; i < 2; i++) {
        w.k[i] = 3;
        w.s[i] = 1;
        w.dl[i] = 1;
        if (w.auto_pad == NULL) {
            w.pads[i] = rnd(g, 0, 1);
            w.pads[2 + i] = rnd(g, 0, 1);
        }
        w.in[i] = dims[2 + i] = rnd(g, 14, 20);
        syms[2 + i] = sym(g, w.in[i], 3);
    }
    conv_and_after(g, input(g, RN_F32, 4, dims, syms, -1, 1), 4, wd, &w, 1, cin, cout);
}

static void gen_conv_transpose(void *p)
{
    gen *g = p;
    g->c->op = "ConvTranspose";
    int rank = rnd(g, 3, 5), n = rank - 2;
    int64_t group = chance(g, 0.3) ? 2 : 1;
    int64_t cin = group * rnd(g, 1, 4), mg = rnd(g, 1, 4);
    int64_t dims[5] = {rnd(g, 1, 2), cin}, wd[5] = {cin, mg};
    int syms[5] = {sym(g, dims[0], 1), -1};
    maybe_empty_batch(g, dims, syms[0]);
    int64_t k[3], s[3], dl[3], pads[6], op[3], out[3];
    bool out_pad = chance(g, 0.3), out_shape = !out_pad && chance(g, 0.2);
    for (int i = 0; i < n; i++) {
        k[i] = rnd(g, 1, rank == 5 ? 2 : 3);
        s[i] = rnd(g, 1, 3);
        dl[i] = chance(g, 0.2) ? 2 : 1;
        pads[i] = rnd(g, 0, (int)k[i] - 1);
        pads[n + i] = rnd(g, 0, (int)(k[i] - 1 - pads[i]));
        int64_t m = s[i] > dl[i] ? s[i] : dl[i];
        op[i] = out_pad ? rnd(g, 0, (int)m - 1) : 0;
        dims[2 + i] = rnd(g, 1, 5);
        syms[2 + i] = sym(g, dims[2 + i], 1);
        wd[2 + i] = k[i];
        int64_t full = s[i] * (dims[2 + i] - 1) + (k[i] - 1) * dl[i] + 1;
        out[i] = full + rnd(g, 0, (int)s[i] - 1) - pads[i] - pads[n + i];
        if (out[i] < 1)
            out[i] = 1;
    }
    if (out_shape)
        for (int i = 0; i < n; i++)
            syms[2 + i] = -1; /* output_shape fixes the spatial dims */
    const char *x = input(g, RN_F32, rank, dims, syms, -1, 1);
    const char *ins[3] = {x, cst(g, RN_F32, rank, wd, -1, 1), NULL};
    int64_t cout = mg * group;
    if (chance(g, 0.5))
        ins[2] = cst(g, RN_F32, 1, &cout, -1, 1);
    const char *y = dm_node(g->g, "ConvTranspose", ins[2] ? 3 : 2, ins, 1, NULL);
    desc(g, "ConvTranspose %dD group=%lld in=%lld out=%lld%s", n, (long long)group, (long long)cin,
         (long long)cout, ins[2] ? " bias" : "");
    dm_attr_ints(g->g, "kernel_shape", n, k);
    dm_attr_ints(g->g, "strides", n, s);
    dm_attr_ints(g->g, "dilations", n, dl);
    dm_attr_int(g->g, "group", group);
    desc_ints(g, "kernel", n, k);
    desc_ints(g, "strides", n, s);
    desc_ints(g, "dilations", n, dl);
    if (out_shape) {
        dm_attr_ints(g->g, "output_shape", n, out);
        desc_ints(g, "output_shape", n, out);
    } else {
        dm_attr_ints(g->g, "pads", 2 * n, pads);
        desc_ints(g, "pads", 2 * n, pads);
    }
    if (out_pad) {
        dm_attr_ints(g->g, "output_padding", n, op);
        desc_ints(g, "output_padding", n, op);
    }
    result(g, y, RN_F32);
}

static void gen_gemm(void *p)
{
    gen *g = p;
    g->c->op = "Gemm";
    int64_t m = rdim(g, chance(g, 0.1)), k = rdim(g, false), n = rdim(g, false);
    bool ta = chance(g, 0.2), tb = chance(g, 0.5);
    int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
    int cm = rnd(g, 0, 4);                /* C: none, [N], [1, N], [M, N], scalar */
    int sm = cm == 3 ? -1 : sym(g, m, 0); /* C [M, N] fixes M */
    int as[2] = {ta ? -1 : sm, ta ? sm : -1};
    const char *a = input(g, RN_F32, 2, ad, as, -1, 1);
    const char *b =
        chance(g, 0.85) ? cst(g, RN_F32, 2, bd, -1, 1) : input(g, RN_F32, 2, bd, NULL, -1, 1);
    const char *ins[3] = {a, b, NULL};
    int64_t cd[2] = {cm == 3 ? m : 1, n};
    if (cm == 1)
        ins[2] = cst(g, RN_F32, 1, &n, -1, 1);
    else if (cm == 2 || cm == 3)
        ins[2] = cst(g, RN_F32, 2, cd, -1, 1);
    else if (cm == 4)
        ins[2] = cst(g, RN_F32, 0, NULL, -1, 1);
    const char *y = dm_node(g->g, "Gemm", ins[2] ? 3 : 2, ins, 1, NULL);
    float alpha = chance(g, 0.8) ? 1.0f : rndf(g, 0.1f, 2), beta = chance(g, 0.8) ? 1.0f : 0.5f;
    if (ta)
        dm_attr_int(g->g, "transA", 1);
    if (tb)
        dm_attr_int(g->g, "transB", 1);
    dm_attr_float(g->g, "alpha", alpha);
    dm_attr_float(g->g, "beta", beta);
    desc(g, "Gemm M=%lld K=%lld N=%lld transA=%d transB=%d alpha=%g beta=%g C mode %d",
         (long long)m, (long long)k, (long long)n, ta, tb, alpha, beta, cm);
    if (chance(g, 0.3))
        y = activation(g, y);
    result(g, y, RN_F32);
}

static void gen_matmul(void *p)
{
    gen *g = p;
    g->c->op = "MatMul";
    int ra = chance(g, 0.1) ? 1 : rnd(g, 2, 5), rb = chance(g, 0.1) ? 1 : rnd(g, 2, 5);
    int64_t m = rdim(g, chance(g, 0.1)), k = rdim(g, false), n = rnd(g, 1, 17);
    int batch = (ra > rb ? ra : rb) - 2;
    int64_t bt[4];
    for (int i = 0; i < batch; i++)
        bt[i] = rnd(g, 1, 3);
    int64_t ad[5], bd[5];
    int as[5];
    for (int i = 0; i < ra - 2; i++) {
        int j = batch - (ra - 2) + i;
        ad[i] = chance(g, 0.2) ? 1 : bt[j];
        as[i] = -1;
    }
    for (int i = 0; i < rb - 2; i++) {
        int j = batch - (rb - 2) + i;
        bd[i] = chance(g, 0.2) ? 1 : bt[j];
    }
    /* Batch dims a 1 on one side and > 1 on the other broadcast. */
    if (ra >= 2) {
        ad[ra - 2] = m, ad[ra - 1] = k;
        as[ra - 2] = sym(g, m, 0), as[ra - 1] = -1;
    } else {
        ad[0] = k, as[0] = -1;
    }
    if (rb >= 2)
        bd[rb - 2] = k, bd[rb - 1] = n;
    else
        bd[0] = k;
    const char *a = input(g, RN_F32, ra, ad, as, -1, 1);
    bool bc = chance(g, 0.6);
    const char *b = bc ? cst(g, RN_F32, rb, bd, -1, 1) : input(g, RN_F32, rb, bd, NULL, -1, 1);
    const char *y = dm_op2(g->g, "MatMul", a, b);
    desc(g, "MatMul a rank %d b rank %d%s M=%lld K=%lld N=%lld", ra, rb, bc ? " (const)" : "",
         (long long)m, (long long)k, (long long)n);
    if (bc && rb >= 2 && chance(g, 0.4)) {
        y = dm_op2(g->g, "Add", y, cst(g, RN_F32, 1, &n, -1, 1));
        desc(g, " + bias");
        if (chance(g, 0.5)) {
            y = dm_op1(g->g, chance(g, 0.5) ? "Relu" : "Sigmoid", y);
            desc(g, " then an activation");
        }
    }
    result(g, y, RN_F32);
}

static void gen_reduce(void *p)
{
    gen *g = p;
    static const char *const ops[] = {"ReduceSum",  "ReduceMean", "ReduceMax", "ReduceMin",
                                      "ReduceProd", "ReduceL1",   "ReduceL2",  "ReduceSumSquare",
                                      "ReduceSum",  "ReduceMean", "ReduceMax"};
    const char *op = PICK(g, ops);
    g->c->op = op;
    int opset = chance(g, 0.5) ? 13 : 18;
    dm_set_opset(g->m, opset);
    int rank = rnd(g, 1, 5);
    int64_t dims[DG_MAX_RANK], axes[DG_MAX_RANK];
    int syms[DG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        dims[d] = rank > 3 ? rnd(g, 1, 6) : rdim(g, false);
        syms[d] = chance(g, 0.5) ? sym(g, dims[d], 1) : -1;
    }
    bool prod = strcmp(op, "ReduceProd") == 0;
    const char *x = maybe_blocked(
        g, input(g, RN_F32, rank, dims, syms, prod ? 0.7f : -2.0f, prod ? 1.3f : 2.0f), rank, dims,
        syms);
    int n_axes = chance(g, 0.15) ? 0 : rnd(g, 1, rank);
    int64_t perm[DG_MAX_RANK];
    random_perm(g, rank, perm);
    for (int i = 0; i < n_axes; i++)
        axes[i] = chance(g, 0.3) ? perm[i] - rank : perm[i];
    bool input_axes = opset >= 18 || strcmp(op, "ReduceSum") == 0;
    const char *y;
    if (n_axes > 0 && input_axes)
        y = dm_op2(g->g, op, x, dm_vec_i64(g->g, n_axes, axes));
    else
        y = dm_op1(g->g, op, x);
    if (n_axes > 0 && !input_axes)
        dm_attr_ints(g->g, "axes", n_axes, axes);
    int keep = chance(g, 0.5);
    dm_attr_int(g->g, "keepdims", keep);
    desc(g, "%s opset %d keepdims=%d", op, opset, keep);
    desc_ints(g, input_axes ? "axes(input)" : "axes", n_axes, axes);
    result(g, y, RN_F32);
}

static void gen_resize(void *p)
{
    gen *g = p;
    g->c->op = "Resize";
    static const int opsets[] = {11, 13, 18, 19};
    int opset = PICK(g, opsets);
    dm_set_opset(g->m, opset);
    int rank = rnd(g, 3, 5);
    int64_t dims[5], out[5];
    float scales[5];
    static const float factors[] = {2.0f, 0.5f, 1.0f, 3.0f, 1.5f, 0.75f, 2.0f};
    for (int d = 0; d < rank; d++) {
        dims[d] = d < 2 ? rnd(g, 1, 3) : rnd(g, 1, rank == 5 ? 4 : 7);
        scales[d] = d < 2 ? 1.0f : PICK(g, factors);
        out[d] = (int64_t)floorf((float)dims[d] * scales[d]);
        if (out[d] < 1)
            scales[d] = 1.0f, out[d] = dims[d];
    }
    const char *x = maybe_blocked(g, input(g, RN_F32, rank, dims, NULL, -2, 2), rank, dims, NULL);
    static const char *const modes[] = {"nearest", "linear", "linear", "nearest"};
    static const char *const ctms[] = {"half_pixel", "half_pixel", "pytorch_half_pixel",
                                       "asymmetric", "align_corners"};
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    const char *mode = PICK(g, modes), *ctm = PICK(g, ctms), *nm = PICK(g, nms);
    bool sizes = chance(g, 0.4);
    int64_t zero = 0, r = rank;
    const char *ins[4] = {x, dm_init_f32(g->g, 1, &zero, NULL), "", ""};
    if (sizes)
        ins[3] = dm_vec_i64(g->g, rank, out);
    else
        ins[2] = dm_init_f32(g->g, 1, &r, scales);
    if (opset == 11 && sizes)
        ins[2] = dm_init_f32(g->g, 1, &zero, NULL);
    if (opset >= 13 && chance(g, 0.5))
        ins[1] = "";
    const char *y = dm_node(g->g, "Resize", sizes ? 4 : 3, ins, 1, NULL);
    dm_attr_string(g->g, "mode", mode);
    dm_attr_string(g->g, "coordinate_transformation_mode", ctm);
    if (strcmp(mode, "nearest") == 0)
        dm_attr_string(g->g, "nearest_mode", nm);
    desc(g, "Resize opset %d mode=%s ctm=%s nearest_mode=%s by %s", opset, mode, ctm, nm,
         sizes ? "sizes" : "scales");
    desc_ints(g, "out", rank, out);
    result(g, y, RN_F32);
}

static void gen_shuffle(void *p)
{
    gen *g = p;
    g->c->op = "ShuffleChannels";
    int64_t grp = rnd(g, 2, 4), k = rnd(g, 1, 5);
    int64_t dims[4] = {rnd(g, 1, 2), grp * k, rnd(g, 1, 5), rnd(g, 1, 5)};
    const char *x = maybe_blocked(g, input(g, RN_F32, 4, dims, NULL, -2, 2), 4, dims, NULL);
    int64_t s5[5] = {dims[0], grp, k, dims[2], dims[3]}, perm[5] = {0, 2, 1, 3, 4};
    const char *a = dm_op2(g->g, "Reshape", x, dm_vec_i64(g->g, 5, s5));
    const char *t = dm_op1(g->g, "Transpose", a);
    dm_attr_ints(g->g, "perm", 5, perm);
    const char *y = dm_op2(g->g, "Reshape", t, dm_vec_i64(g->g, 4, dims));
    desc(g, "channel shuffle (Reshape/Transpose/Reshape) groups=%lld", (long long)grp);
    result(g, y, RN_F32);
}

static void gen_attention(void *p)
{
    gen *g = p;
    g->c->op = "ScaledDotProductAttention";
    int64_t b = rnd(g, 1, 2), h = rnd(g, 1, 3), s = rnd(g, 1, 6), d = rnd(g, 1, 9);
    int64_t qd[4] = {b, h, s, d}, kd[4] = {b, h, d, s};
    int mask = rnd(g, 0, 2);                                 /* none, [1, 1, S, S], [B, 1, 1, S] */
    int qs[4] = {-1, -1, mask == 1 ? -1 : sym(g, s, 1), -1}; /* an [S, S] mask fixes S */
    const char *q = input(g, RN_F32, 4, qd, qs, -1, 1);
    bool kc = chance(g, 0.4);
    const char *kt = kc ? cst(g, RN_F32, 4, kd, -1, 1) : input(g, RN_F32, 4, kd, NULL, -1, 1);
    const char *v = kc ? cst(g, RN_F32, 4, qd, -1, 1) : input(g, RN_F32, 4, qd, NULL, -1, 1);
    dm_graph *gr = g->g;
    const char *sc = dm_op2(gr, "MatMul", q, kt);
    float scale = 1.0f / sqrtf((float)d);
    bool div = chance(g, 0.5);
    sc = dm_op2(gr, div ? "Div" : "Mul", sc, cst_f32(g, div ? sqrtf((float)d) : scale));
    if (mask == 1) {
        int64_t md[4] = {1, 1, s, s};
        sc = dm_op2(gr, "Add", sc, cst(g, RN_F32, 4, md, -3, 0));
    } else if (mask == 2) {
        int64_t md[4] = {b, 1, 1, s};
        sc = dm_op2(gr, "Add", sc, cst(g, RN_F32, 4, md, -3, 0));
    }
    const char *pr = dm_op1(gr, "Softmax", sc);
    dm_attr_int(gr, "axis", -1);
    const char *y = dm_op2(gr, "MatMul", pr, v);
    desc(g, "attention B=%lld H=%lld S=%lld D=%lld scale by %s, mask mode %d, K and V %s",
         (long long)b, (long long)h, (long long)s, (long long)d, div ? "Div" : "Mul", mask,
         kc ? "constant" : "inputs");
    result(g, y, RN_F32);
}

static void gen_quant(void *p)
{
    gen *g = p;
    int rank = rnd(g, 1, 4);
    int64_t dims[4];
    int syms[4];
    for (int d = 0; d < rank; d++) {
        dims[d] = rdim(g, true);
        syms[d] = chance(g, 0.5) ? sym(g, dims[d], 0) : -1;
    }
    bool u8 = chance(g, 0.5);
    rn_element_type qt = u8 ? RN_U8 : RN_I8;
    float scale = rndf(g, 0.01f, 0.1f);
    int zp = u8 ? rnd(g, 0, 255) : rnd(g, -20, 20);
    int kind = rnd(g, 0, 2); /* Q, DQ, Q then DQ */
    const char *sc = cst_f32(g, scale);
    uint8_t zpv = (uint8_t)zp;
    const char *z = dm_init(g->g, (int)qt, 1, 0, NULL, &zpv);
    const char *y;
    if (kind == 1) {
        g->c->op = "DequantizeLinear";
        const char *x = input(g, qt, rank, dims, syms, u8 ? 0 : -128, u8 ? 255 : 127);
        const char *ins[3] = {x, sc, z};
        y = dm_node(g->g, "DequantizeLinear", 3, ins, 1, NULL);
        result(g, y, RN_F32);
    } else {
        g->c->op = "QuantizeLinear";
        g->c->int_steps = 1;
        const char *x = input(g, RN_F32, rank, dims, syms, -300 * scale, 300 * scale);
        const char *ins[3] = {x, sc, z};
        y = dm_node(g->g, "QuantizeLinear", 3, ins, 1, NULL);
        if (kind == 2) {
            g->c->f32_step = scale;
            const char *ins2[3] = {y, sc, z};
            y = dm_node(g->g, "DequantizeLinear", 3, ins2, 1, NULL);
            result(g, y, RN_F32);
        } else {
            result(g, y, qt);
        }
    }
    desc(g, "%s %s scale=%g zero_point=%d",
         kind == 0   ? "QuantizeLinear"
         : kind == 1 ? "DequantizeLinear"
                     : "QuantizeLinear then DequantizeLinear",
         u8 ? "u8" : "i8", scale, zp);
}

/* A DequantizeLinear x -> Conv / Gemm / MatMul by DequantizeLinear of
 * constant int8 weights (per tensor or per output channel) -> [Relu] ->
 * QuantizeLinear, as quantize_static writes it: CPU's fuse_qdq makes it
 * one int8 primitive (runnel QLinearFusedConv / Gemm / MatMul). Weights
 * use 7 bits, which cannot saturate AVX2's u8 x s8 pair sums
 * (tests/cpu/test_cpu_int8.c); the outputs may differ by one step (a
 * value within f32 rounding of a half step). */
/* DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale and
 * zero point, which fuse_qdq makes a MaxPool on the quantized tensor (max
 * commutes with the quantization: equal results). No padding: a window of
 * padding only has no defined value (gen_pool). */
static void gen_qdq_pool(gen *g)
{
    g->c->op = "MaxPool";
    bool u8 = chance(g, 0.7);
    rn_element_type xt = u8 ? RN_U8 : RN_I8;
    float sx = rndf(g, 0.005f, 0.05f);
    uint8_t zx = u8 ? (uint8_t)rnd(g, 0, 255) : (uint8_t)(int8_t)rnd(g, -20, 20);
    int64_t k[2] = {rnd(g, 1, 3), rnd(g, 1, 3)}, st[2] = {rnd(g, 1, 2), rnd(g, 1, 2)};
    int64_t dims[4] = {rnd(g, 1, 2), rdim(g, false), k[0] + rnd(g, 0, 5), k[1] + rnd(g, 0, 5)};
    int syms[4] = {sym(g, dims[0], 1), -1, sym(g, dims[2], k[0]), sym(g, dims[3], k[1])};
    const char *x = input(g, xt, 4, dims, syms, u8 ? 0 : -128, u8 ? 255 : 127);
    const char *sc = cst_f32(g, sx), *z = dm_init(g->g, (int)xt, 1, 0, NULL, &zx);
    const char *d_in[3] = {x, sc, z};
    const char *y = dm_op1(g->g, "MaxPool", dm_node(g->g, "DequantizeLinear", 3, d_in, 1, NULL));
    dm_attr_ints(g->g, "kernel_shape", 2, k);
    dm_attr_ints(g->g, "strides", 2, st);
    const char *q_in[3] = {y, sc, z};
    desc(g, "QDQ MaxPool %s scale=%g zero_point=%d", u8 ? "u8" : "i8", sx, u8 ? zx : (int8_t)zx);
    desc_ints(g, "kernel", 2, k);
    desc_ints(g, "strides", 2, st);
    result(g, dm_node(g->g, "QuantizeLinear", 3, q_in, 1, NULL), xt);
}

static void gen_qdq(void *p)
{
    gen *g = p;
    if (g->c->seed % 7 == 6) { /* decided by the seed: the other cases keep their draws */
        gen_qdq_pool(g);
        return;
    }
    g->c->op = "QLinearFused";
    g->c->int_steps = 1;
    int kind = rnd(g, 0, 2); /* Conv, Gemm, MatMul */
    bool u8 = chance(g, 0.7), per_channel = chance(g, 0.6), relu = chance(g, 0.4);
    rn_element_type xt = u8 ? RN_U8 : RN_I8;
    float sx = rndf(g, 0.005f, 0.05f);
    uint8_t zx = u8 ? (uint8_t)rnd(g, 0, 255) : (uint8_t)(int8_t)rnd(g, -20, 20);
    int64_t x_dims[4], w_dims[4], cout, k;
    int rank, w_rank, syms[4] = {-1, -1, -1, -1};
    if (kind == 0) {
        int64_t cin = rnd(g, 1, 9), kh = rnd(g, 1, 3), kw = rnd(g, 1, 3);
        cout = rnd(g, 1, 17);
        rank = 4, w_rank = 4;
        x_dims[0] = rnd(g, 1, 2), x_dims[1] = cin, x_dims[2] = kh + rnd(g, 0, 5),
        x_dims[3] = kw + rnd(g, 0, 5);
        syms[0] = sym(g, x_dims[0], 1);
        maybe_empty_batch(g, x_dims, syms[0]);
        w_dims[0] = cout, w_dims[1] = cin, w_dims[2] = kh, w_dims[3] = kw;
        k = cin * kh * kw;
    } else {
        k = rdim(g, false);
        cout = rnd(g, 1, 17);
        rank = kind == 1 ? 2 : rnd(g, 2, 3);
        for (int d = 0; d < rank - 1; d++)
            x_dims[d] = rdim(g, false), syms[d] = sym(g, x_dims[d], 1);
        x_dims[rank - 1] = k;
        w_rank = 2;
        w_dims[0] = kind == 1 ? cout : k, w_dims[1] = kind == 1 ? k : cout;
    }
    const char *x = input(g, xt, rank, x_dims, syms, u8 ? 0 : -128, u8 ? 255 : 127);
    const char *dx_in[3] = {x, cst_f32(g, sx), dm_init(g->g, (int)xt, 1, 0, NULL, &zx)};
    const char *dx = dm_node(g->g, "DequantizeLinear", 3, dx_in, 1, NULL);
    int64_t n_scales = per_channel ? cout : 1;
    float sw[17];
    int8_t zw[17] = {0};
    for (int i = 0; i < n_scales; i++)
        sw[i] = rndf(g, 0.002f, 0.02f);
    const char *wq = cst(g, RN_I8, w_rank, w_dims, -63, 63);
    const char *dw_in[3] = {wq,
                            per_channel ? dm_init_f32(g->g, 1, &n_scales, sw) : cst_f32(g, sw[0]),
                            per_channel ? dm_init(g->g, RN_I8, 1, 1, &n_scales, zw)
                                        : dm_init(g->g, RN_I8, 1, 0, NULL, zw)};
    const char *dw = dm_node(g->g, "DequantizeLinear", 3, dw_in, 1, NULL);
    if (per_channel)
        dm_attr_int(g->g, "axis", kind == 2 ? 1 : 0);
    const char *y;
    bool bias = kind != 2 && chance(g, 0.6);
    if (kind == 0) {
        const char *ins[3] = {dx, dw, bias ? cst(g, RN_F32, 1, &cout, -1, 1) : NULL};
        y = dm_node(g->g, "Conv", bias ? 3 : 2, ins, 1, NULL);
    } else if (kind == 1) {
        const char *ins[3] = {dx, dw, bias ? cst(g, RN_F32, 1, &cout, -1, 1) : NULL};
        y = dm_node(g->g, "Gemm", bias ? 3 : 2, ins, 1, NULL);
        dm_attr_int(g->g, "transB", 1);
    } else {
        y = dm_op2(g->g, "MatMul", dx, dw);
    }
    if (relu)
        y = dm_op1(g->g, "Relu", y);
    float sy = sx * sw[0] * sqrtf((float)k) * rndf(g, 2, 8);
    uint8_t zy = u8 ? (uint8_t)rnd(g, 0, 128) : 0;
    const char *q_in[3] = {y, cst_f32(g, sy), dm_init(g->g, (int)xt, 1, 0, NULL, &zy)};
    y = dm_node(g->g, "QuantizeLinear", 3, q_in, 1, NULL);
    static const char *const kinds[] = {"Conv", "Gemm", "MatMul"};
    desc(g, "QDQ %s %s x scale=%g zero_point=%d, weights %s, %s%s, y scale=%g zero_point=%d",
         kinds[kind], u8 ? "u8" : "i8", sx, u8 ? zx : (int8_t)zx,
         per_channel ? "per channel" : "per tensor", bias ? "bias" : "no bias",
         relu ? ", Relu" : "", sy, zy);
    desc_ints(g, "w", w_rank, w_dims);
    result(g, y, xt);
}

const dg_family dg_families[] = {
    {"unary", gen_unary},
    {"binary", gen_binary},
    {"concat", gen_concat},
    {"concat_grid", gen_concat_grid},
    {"transpose", gen_transpose},
    {"softmax", gen_softmax},
    {"pool", gen_pool},
    {"lrn", gen_lrn},
    {"batchnorm", gen_batchnorm},
    {"layernorm", gen_layernorm},
    {"conv", gen_conv},
    {"conv_transpose", gen_conv_transpose},
    {"conv_winograd", gen_conv_winograd},
    {"gemm", gen_gemm},
    {"matmul", gen_matmul},
    {"reduce", gen_reduce},
    {"resize", gen_resize},
    {"shuffle", gen_shuffle},
    {"attention", gen_attention},
    {"quant", gen_quant},
    {"qdq", gen_qdq},
};
const int dg_family_count = (int)(sizeof dg_families / sizeof dg_families[0]);

int dg_family_find(const char *name)
{
    for (int f = 0; f < dg_family_count; f++)
        if (strcmp(dg_families[f].name, name) == 0)
            return f;
    return -1;
}

/* ---- contexts ---- */

const char *dg_context_name(dg_context c)
{
    static const char *const names[] = {"static", "dynamic", "fold", "if_const", "if", "loop"};
    return c < DG_CONTEXT_COUNT ? names[c] : "?";
}

static dg_context draw_context(gen *g)
{
    int r = rnd(g, 0, 99);
    return r < 20   ? DG_STATIC
           : r < 45 ? DG_DYNAMIC
           : r < 60 ? DG_FOLD
           : r < 70 ? DG_IF_CONST
           : r < 85 ? DG_IF
                    : DG_LOOP;
}

/* Puts the op's results where the context wants them. */
static void finish(gen *g)
{
    dg_case *c = g->c;
    const char *outs[MAX_RESULTS];
    if (c->context == DG_IF || c->context == DG_IF_CONST) {
        dm_graph *els = dm_subgraph(g->m, "else_branch");
        for (int i = 0; i < g->n_results; i++) {
            dm_output(g->g, g->results[i], (int)g->result_types[i]);
            int64_t one = 1;
            uint8_t zero[8] = {0};
            const char *k = dm_init(els, (int)g->result_types[i],
                                    rn_element_type_size(g->result_types[i]), 1, &one, zero);
            dm_output(els, dm_op1(els, "Identity", k), (int)g->result_types[i]);
        }
        const char *cond;
        if (c->context == DG_IF_CONST) {
            uint8_t t = 1;
            cond = dm_init(g->main, RN_BOOL, 1, 0, NULL, &t);
        } else {
            assert(c->n_inputs < DG_MAX_INPUTS);
            dg_input *in = &c->inputs[c->n_inputs++];
            in->name = "cond";
            in->type = RN_BOOL;
            in->rank = 0;
            dm_input(g->main, "cond", RN_BOOL, 0, NULL, NULL);
            cond = "cond";
        }
        dm_node(g->main, "If", 1, &cond, g->n_results, outs);
        dm_attr_graph(g->main, "then_branch", g->g);
        dm_attr_graph(g->main, "else_branch", els);
    } else if (c->context == DG_LOOP) {
        int64_t trips = c->seed % 2 ? 3 : 2;
        uint8_t t = 1;
        const char *ins[2] = {dm_scalar_i64(g->main, trips),
                              dm_init(g->main, RN_BOOL, 1, 0, NULL, &t)};
        dm_output(g->g, dm_op1(g->g, "Identity", "cond_in"), RN_BOOL);
        for (int i = 0; i < g->n_results; i++)
            dm_output(g->g, g->results[i], (int)g->result_types[i]);
        dm_node(g->main, "Loop", 2, ins, g->n_results, outs);
        dm_attr_graph(g->main, "body", g->g);
        desc(g, " (%lld iterations)", (long long)trips);
    } else {
        for (int i = 0; i < g->n_results; i++)
            outs[i] = g->results[i];
    }
    for (int i = 0; i < g->n_results; i++)
        dm_output(g->main, outs[i], (int)g->result_types[i]);
}

void dg_case_make(int family, uint64_t seed, dg_context context, dg_case *out)
{
    memset(out, 0, sizeof *out);
    gen g = {.rng = seed * 0x2545f4914f6cdd1dull + (uint64_t)family * 0x9e3779b97f4a7c15ull,
             .c = out};
    out->family = dg_families[family].name;
    out->seed = seed;
    /* Drawn even when given, so that a case keeps its shapes and
     * attributes in every context. */
    dg_context drawn = draw_context(&g);
    bool dyn = chance(&g, 0.5);
    out->context = context < DG_CONTEXT_COUNT ? context : drawn;
    g.m = out->model = dm_model_create(17);
    g.main = g.g = dm_main(g.m);
    g.dyn =
        out->context == DG_DYNAMIC ||
        ((out->context == DG_IF || out->context == DG_LOOP || out->context == DG_IF_CONST) && dyn);
    if (out->context == DG_IF || out->context == DG_IF_CONST) {
        g.g = dm_subgraph(g.m, "then_branch");
    } else if (out->context == DG_LOOP) {
        g.g = dm_subgraph(g.m, "body");
        dm_input(g.g, "iter", RN_I64, 0, NULL, NULL);
        dm_input(g.g, "cond_in", RN_BOOL, 0, NULL, NULL);
        g.iter_f32 = dm_op1(g.g, "Cast", "iter");
        dm_attr_int(g.g, "to", RN_F32);
    }
    snprintf(out->desc, sizeof out->desc, "%s seed %llu, context %s%s: ", out->family,
             (unsigned long long)seed, dg_context_name(out->context),
             g.dyn ? " (dynamic dims)" : "");
    dg_families[family].generate(&g);
    finish(&g);
    out->n_runs = g.dyn || out->context == DG_IF ? 2 : 1;
    /* The shapes each input is fed with. */
    for (int k = 0; k < out->n_inputs; k++) {
        const dg_input *in = &out->inputs[k];
        desc(&g, "; %s %s", in->name, rn_element_type_name(in->type));
        for (int r = 0; r < out->n_runs && in->type != RN_BOOL; r++) {
            desc(&g, "%s[", r ? " then " : " ");
            for (int d = 0; d < in->rank; d++)
                desc(&g, "%s%lld", d ? "," : "", (long long)in->dims[r][d]);
            desc(&g, "]");
        }
    }
}

void dg_case_free(dg_case *c)
{
    dm_model_free(c->model);
    c->model = NULL;
}
