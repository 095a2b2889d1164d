/* Op schemas of the random family: RandomNormal, RandomUniform,
 * RandomNormalLike, RandomUniformLike, Multinomial and Bernoulli.
 *
 * Output types: `dtype` when given (a float type for the Random* ops, i32 or
 * i64 for Multinomial, any numeric or bool type for Bernoulli), else f32 for
 * RandomNormal / RandomUniform, i32 for Multinomial and the input's type for
 * the *Like ops and Bernoulli. Shapes: the `shape` attribute, the input's
 * shape, or [batch, sample_size] for Multinomial.
 */
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static bool is_float(rn_element_type t)
{
    return t == RN_F32 || t == RN_F64 || t == RN_F16 || t == RN_BF16;
}

/* The dtype attribute, or dflt when absent; `ok` says which types fit. */
static rn_status random_dtype(const graph_node *node, rn_element_type dflt,
                              bool (*ok)(rn_element_type), const char *what, rn_element_type *out)
{
    int64_t t = graph_node_attr_int(node, "dtype", 0);
    if (graph_node_attr(node, "dtype") == NULL || t == 0) {
        *out = dflt;
        return RN_OK;
    }
    if (t < 0 || t > 64 || !rn_element_type_is_valid((rn_element_type)t) || !ok((rn_element_type)t))
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "dtype %lld is not %s", NODE_ARGS(node),
                            (long long)t, what);
    *out = (rn_element_type)t;
    return RN_OK;
}

static bool is_index(rn_element_type t)
{
    return t == RN_I32 || t == RN_I64;
}

static bool is_numeric_or_bool(rn_element_type t)
{
    return t != RN_STRING && rn_element_type_size(t) > 0 && t <= RN_BF16;
}

static rn_status infer_random(const graph_node *node, const graph_port *in, int n_in,
                              graph_port *out, int n_out)
{
    (void)in, (void)n_in, (void)n_out;
    rn_element_type type = RN_UNDEFINED;
    rn_status st = random_dtype(node, RN_F32, is_float, "a float type", &type);
    if (st != RN_OK)
        return st;
    const int64_t *dims;
    int rank = graph_node_attr_ints(node, "shape", &dims);
    if (rank < 0 || rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "attribute shape is %s", NODE_ARGS(node),
                            rank < 0 ? "missing" : "longer than the largest rank");
    out[0].type = type;
    out[0].shape.rank = rank;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "shape[%d] is %lld", NODE_ARGS(node), d,
                                (long long)dims[d]);
        out[0].shape.dims[d] = dims[d];
    }
    return RN_OK;
}

static rn_status infer_random_like(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    rn_element_type dflt = in[0].type;
    if (dflt != RN_UNDEFINED && !is_float(dflt) && graph_node_attr(node, "dtype") == NULL)
        return rn_set_error(RN_TYPE_MISMATCH,
                            NODE_FMT "input type %s is not a float type and no dtype is given",
                            NODE_ARGS(node), rn_element_type_name(dflt));
    rn_element_type type = RN_UNDEFINED;
    rn_status st = random_dtype(node, dflt, is_float, "a float type", &type);
    if (st != RN_OK)
        return st;
    out[0].type = type;
    out[0].shape = in[0].shape;
    return RN_OK;
}

static rn_status infer_bernoulli(const graph_node *node, const graph_port *in, int n_in,
                                 graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    if (in[0].type != RN_UNDEFINED && !is_float(in[0].type))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input type %s is not a float type",
                            NODE_ARGS(node), rn_element_type_name(in[0].type));
    rn_element_type type = RN_UNDEFINED;
    rn_status st =
        random_dtype(node, in[0].type, is_numeric_or_bool, "a numeric or bool type", &type);
    if (st != RN_OK)
        return st;
    out[0].type = type;
    out[0].shape = in[0].shape;
    return RN_OK;
}

static rn_status infer_multinomial(const graph_node *node, const graph_port *in, int n_in,
                                   graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    if (in[0].type != RN_UNDEFINED && !is_float(in[0].type))
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input type %s is not a float type",
                            NODE_ARGS(node), rn_element_type_name(in[0].type));
    if (in[0].shape.rank >= 0 && in[0].shape.rank != 2)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "input has rank %d; expected [batch, class_size]",
                            NODE_ARGS(node), in[0].shape.rank);
    rn_element_type type = RN_UNDEFINED;
    rn_status st = random_dtype(node, RN_I32, is_index, "i32 or i64", &type);
    if (st != RN_OK)
        return st;
    int64_t samples = graph_node_attr_int(node, "sample_size", 1);
    if (samples < 1)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "sample_size is %lld; must be >= 1",
                            NODE_ARGS(node), (long long)samples);
    out[0].type = type;
    out[0].shape.rank = 2;
    out[0].shape.dims[0] = in[0].shape.rank == 2 ? in[0].shape.dims[0] : RN_DIM_DYNAMIC;
    out[0].shape.dims[1] = samples;
    return RN_OK;
}

const graph_op_schema graph_ops_random[] = {
    {"",
     "RandomNormal",
     0,
     0,
     1,
     1,
     0,
     infer_random,
     {GRAPH_OPTIONAL("dtype", INT), GRAPH_OPTIONAL("mean", FLOAT), GRAPH_OPTIONAL("scale", FLOAT),
      GRAPH_OPTIONAL("seed", FLOAT), GRAPH_REQUIRED("shape", INTS)}},
    {"",
     "RandomUniform",
     0,
     0,
     1,
     1,
     0,
     infer_random,
     {GRAPH_OPTIONAL("dtype", INT), GRAPH_OPTIONAL("high", FLOAT), GRAPH_OPTIONAL("low", FLOAT),
      GRAPH_OPTIONAL("seed", FLOAT), GRAPH_REQUIRED("shape", INTS)}},
    {"",
     "RandomNormalLike",
     1,
     1,
     1,
     1,
     0,
     infer_random_like,
     {GRAPH_OPTIONAL("dtype", INT), GRAPH_OPTIONAL("mean", FLOAT), GRAPH_OPTIONAL("scale", FLOAT),
      GRAPH_OPTIONAL("seed", FLOAT)}},
    {"",
     "RandomUniformLike",
     1,
     1,
     1,
     1,
     0,
     infer_random_like,
     {GRAPH_OPTIONAL("dtype", INT), GRAPH_OPTIONAL("high", FLOAT), GRAPH_OPTIONAL("low", FLOAT),
      GRAPH_OPTIONAL("seed", FLOAT)}},
    {"",
     "Multinomial",
     1,
     1,
     1,
     1,
     0,
     infer_multinomial,
     {GRAPH_OPTIONAL("dtype", INT), GRAPH_OPTIONAL("sample_size", INT),
      GRAPH_OPTIONAL("seed", FLOAT)}},
    {"",
     "Bernoulli",
     1,
     1,
     1,
     1,
     0,
     infer_bernoulli,
     {GRAPH_OPTIONAL("dtype", INT), GRAPH_OPTIONAL("seed", FLOAT)}},
    {0},
};
