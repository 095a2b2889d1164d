/* REF RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike,
 * Multinomial and Bernoulli.
 *
 * The generator is xoshiro256** seeded through splitmix64. With the `seed`
 * attribute every run of the node starts from that seed, so a seeded node
 * gives the same values on every run and every device instance; without it
 * each run draws a fresh seed (time, a process-wide counter and the node's
 * address), as the spec's "auto generated" seed asks. The ONNX spec does not
 * fix the generator, so no other implementation's numbers are reproduced.
 *
 * Uniform draws take 53 random bits in [0, 1); normal draws use Box-Muller
 * on two of them. Values are computed in double and rounded to the output
 * type. Bernoulli gives 1 where a uniform draw is below p (so p <= 0 always
 * gives 0 and p >= 1 always 1); Multinomial treats each row as unnormalized
 * log-probabilities, draws sample_size classes from their softmax, and a row
 * with no finite weight is an error.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "plugins/ref/kernels/movement.h"
#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *g)
{
    uint64_t *s = g->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* A uniform double in [0, 1). */
static double rng_uniform(rng *g)
{
    return (double)(rng_next(g) >> 11) * 0x1.0p-53;
}

static double rng_normal(rng *g)
{
    double u1 = 1.0 - rng_uniform(g); /* (0, 1]: log is finite */
    double u2 = rng_uniform(g);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Seeds g from the node's seed attribute, or freshly when it has none. */
static void rng_seed(rng *g, const graph_node *node)
{
    static atomic_uint_fast64_t runs;
    uint64_t x;
    const graph_attr *a = graph_node_attr(node, "seed");
    if (a != NULL && a->type == GRAPH_ATTR_FLOAT && !isnan(a->f)) {
        /* the seed's integer value, as the ONNX reference takes it */
        x = fabsf(a->f) < 9.2e18f ? (uint64_t)(int64_t)a->f : (uint64_t)signbit(a->f) + 1;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
            (atomic_fetch_add(&runs, 1) * 0x9e3779b97f4a7c15u) ^ (uint64_t)(uintptr_t)node;
    }
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix64(&x);
}

static bool float_out_supports(const graph_node *node, const char **why)
{
    const graph_value *y = node->outputs[0];
    if (y == NULL || !ref_nn_is_float(y->type)) {
        *why = "output type is not f32, f64, f16 or bf16";
        return false;
    }
    return true;
}

/* ---- RandomNormal / RandomUniform and their *Like forms ---- */

static rn_status random_fill(plugin_kernel_args *args, bool normal)
{
    const graph_node *node = args->node;
    graph_tensor *y;
    rn_status st = ref_mv_output(args, 0, &y);
    if (st != RN_OK)
        return st;
    rng g;
    rng_seed(&g, node);
    double a, b;
    if (normal) {
        a = graph_node_attr_float(node, "mean", 0.0f);
        b = graph_node_attr_float(node, "scale", 1.0f);
    } else {
        a = graph_node_attr_float(node, "low", 0.0f);
        b = graph_node_attr_float(node, "high", 1.0f);
    }
    size_t n = graph_tensor_count(y);
    for (size_t i = 0; i < n; i++) {
        double v = normal ? a + b * rng_normal(&g) : a + (b - a) * rng_uniform(&g);
        ref_nn_set(y->type, y->data, i, v);
    }
    return RN_OK;
}

static rn_status normal_run(plugin_kernel_args *args)
{
    return random_fill(args, true);
}

static rn_status uniform_run(plugin_kernel_args *args)
{
    return random_fill(args, false);
}

/* ---- Bernoulli ---- */

static bool bernoulli_supports(const graph_node *node, const char **why)
{
    const graph_value *x = node->inputs[0], *y = node->outputs[0];
    if (x == NULL || !ref_nn_is_float(x->type)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    if (y == NULL || y->type == RN_STRING || rn_element_type_size(y->type) == 0 ||
        y->type > RN_BF16) {
        *why = "output type is not numeric or bool";
        return false;
    }
    return true;
}

static rn_status bernoulli_run(plugin_kernel_args *args)
{
    rn_status st = ref_nn_args_ok(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    size_t n = graph_tensor_count(x);
    if (graph_tensor_count(y) != n)
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "output has %zu elements, input %zu",
                            NODE_ARGS(args->node), graph_tensor_count(y), n);
    rng g;
    rng_seed(&g, args->node);
    for (size_t i = 0; i < n; i++) {
        double p = ref_nn_get(x->type, x->data, i);
        ref_mv_store_double(y->type, y->data, i, rng_uniform(&g) < p ? 1.0 : 0.0);
    }
    return RN_OK;
}

/* ---- Multinomial ---- */

static bool multinomial_supports(const graph_node *node, const char **why)
{
    const graph_value *x = node->inputs[0], *y = node->outputs[0];
    if (x == NULL || !ref_nn_is_float(x->type)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    if (y == NULL || (y->type != RN_I32 && y->type != RN_I64)) {
        *why = "output type is not i32 or i64";
        return false;
    }
    return true;
}

static rn_status multinomial_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_nn_args_ok(args, 1);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    if (x->rank != 2 || y->rank != 2 || y->dims[0] != x->dims[0] || x->dims[1] < 1)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "input must be [batch, class_size >= 1] and output [batch, "
                                     "sample_size]",
                            NODE_ARGS(node));
    int64_t batch = x->dims[0], classes = x->dims[1], samples = y->dims[1];
    double *cum = ref_tmp_alloc((size_t)classes * sizeof *cum);
    if (cum == NULL)
        return ref_nn_oom(node);
    rng g;
    rng_seed(&g, node);
    for (int64_t b = 0; b < batch; b++) {
        double top = -INFINITY, total = 0;
        for (int64_t c = 0; c < classes; c++) {
            double v = ref_nn_get(x->type, x->data, (size_t)(b * classes + c));
            if (v > top)
                top = v;
        }
        for (int64_t c = 0; c < classes; c++) {
            double v = ref_nn_get(x->type, x->data, (size_t)(b * classes + c));
            total += isfinite(top) ? exp(v - top) : 0.0;
            cum[c] = total;
        }
        if (!(total > 0) || !isfinite(total)) {
            ref_tmp_free(cum);
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "row %lld has no finite log-probability to draw from",
                                NODE_ARGS(node), (long long)b);
        }
        for (int64_t s = 0; s < samples; s++) {
            double u = rng_uniform(&g) * total;
            int64_t lo = 0, hi = classes - 1; /* first class whose cumulative weight exceeds u */
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (cum[mid] > u)
                    hi = mid;
                else
                    lo = mid + 1;
            }
            ref_mv_store_int(y->type, y->data, (size_t)(b * samples + s), lo);
        }
    }
    ref_tmp_free(cum);
    return RN_OK;
}

const plugin_kernel ref_kernel_random_normal = {
    .domain = "",
    .op_type = "RandomNormal",
    .impl_type = "ref",
    .supports = float_out_supports,
    .run = normal_run,
};

const plugin_kernel ref_kernel_random_uniform = {
    .domain = "",
    .op_type = "RandomUniform",
    .impl_type = "ref",
    .supports = float_out_supports,
    .run = uniform_run,
};

const plugin_kernel ref_kernel_random_normal_like = {
    .domain = "",
    .op_type = "RandomNormalLike",
    .impl_type = "ref",
    .supports = float_out_supports,
    .run = normal_run,
};

const plugin_kernel ref_kernel_random_uniform_like = {
    .domain = "",
    .op_type = "RandomUniformLike",
    .impl_type = "ref",
    .supports = float_out_supports,
    .run = uniform_run,
};

const plugin_kernel ref_kernel_multinomial = {
    .domain = "",
    .op_type = "Multinomial",
    .impl_type = "ref",
    .supports = multinomial_supports,
    .run = multinomial_run,
};

const plugin_kernel ref_kernel_bernoulli = {
    .domain = "",
    .op_type = "Bernoulli",
    .impl_type = "ref",
    .supports = bernoulli_supports,
    .run = bernoulli_run,
};
