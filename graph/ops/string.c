/* Op schemas of the string family: StringNormalizer (opset 10), StringConcat
 * (20), StringSplit (20) and RegexFullMatch (20).
 *
 * StringNormalizer drops stop words from a [C] or [1, C] string tensor, so
 * its output's last dim is known only at run time; StringSplit's output has
 * one more axis, as long as the most substrings any input splits into. */
#include <string.h>

#include "graph/ops.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        if (st_ != RN_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

/* Input i must be a string tensor (or of unknown type). */
static rn_status want_strings(const graph_node *node, const graph_port *in, int i)
{
    if (in[i].kind != GRAPH_KIND_TENSOR)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d is a %s, expected a tensor",
                            NODE_ARGS(node), i, graph_kind_name(in[i].kind));
    if (in[i].type != RN_UNDEFINED && in[i].type != RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input %d is %s, expected string",
                            NODE_ARGS(node), i, rn_element_type_name(in[i].type));
    return RN_OK;
}

static rn_status infer_string_normalizer(const graph_node *node, const graph_port *in, int n_in,
                                         graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    TRY(want_strings(node, in, 0));
    const char *action = graph_node_attr_string(node, "case_change_action", "NONE");
    if (strcmp(action, "NONE") != 0 && strcmp(action, "LOWER") != 0 && strcmp(action, "UPPER") != 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "case_change_action is '%s', expected NONE, LOWER or UPPER",
                            NODE_ARGS(node), action);
    const graph_shape *s = &in[0].shape;
    if (s->rank == 0 || s->rank > 2 || (s->rank == 2 && s->dims[0] > 1))
        return rn_set_error(RN_SHAPE_MISMATCH,
                            NODE_FMT "input has rank %d%s, expected [C] or [1, C]", NODE_ARGS(node),
                            s->rank, s->rank == 2 ? " with a first dim other than 1" : "");
    out[0].type = RN_STRING;
    out[0].shape = *s;
    if (s->rank > 0)
        out[0].shape.dims[s->rank - 1] = RN_DIM_DYNAMIC; /* stop words leave */
    if (s->rank == 2)
        out[0].shape.dims[0] = 1;
    return RN_OK;
}

static rn_status infer_string_concat(const graph_node *node, const graph_port *in, int n_in,
                                     graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    TRY(want_strings(node, in, 0));
    TRY(want_strings(node, in, 1));
    out[0].type = RN_STRING;
    return graph_broadcast_shapes(node, &in[0].shape, &in[1].shape, &out[0].shape);
}

static rn_status infer_string_split(const graph_node *node, const graph_port *in, int n_in,
                                    graph_port *out, int n_out)
{
    (void)n_in;
    TRY(want_strings(node, in, 0));
    int64_t maxsplit = graph_node_attr_int(node, "maxsplit", -1);
    if (graph_node_attr(node, "maxsplit") != NULL && maxsplit < 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "maxsplit is %lld, expected >= 0",
                            NODE_ARGS(node), (long long)maxsplit);
    const graph_shape *s = &in[0].shape;
    if (s->rank >= RN_MAX_RANK)
        return rn_set_error(RN_UNSUPPORTED,
                            NODE_FMT "input rank %d leaves no room for the "
                                     "substrings axis",
                            NODE_ARGS(node), s->rank);
    out[0].type = RN_STRING;
    out[0].shape.rank = -1;
    if (s->rank >= 0) {
        out[0].shape = *s;
        out[0].shape.rank = s->rank + 1;
        out[0].shape.dims[s->rank] = RN_DIM_DYNAMIC;
        if (graph_shape_count(s) == 0)
            out[0].shape.dims[s->rank] = 0; /* nothing to split */
    }
    if (n_out > 1) {
        out[1].type = RN_I64;
        out[1].shape = *s;
    }
    return RN_OK;
}

static rn_status infer_regex_full_match(const graph_node *node, const graph_port *in, int n_in,
                                        graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    TRY(want_strings(node, in, 0));
    out[0].type = RN_BOOL;
    out[0].shape = in[0].shape;
    return RN_OK;
}

const graph_op_schema graph_ops_string[] = {
    {"",
     "StringNormalizer",
     1,
     1,
     1,
     1,
     0,
     infer_string_normalizer,
     {GRAPH_OPTIONAL("case_change_action", STRING), GRAPH_OPTIONAL("is_case_sensitive", INT),
      GRAPH_OPTIONAL("locale", STRING), GRAPH_OPTIONAL("stopwords", STRINGS)}},
    {"", "StringConcat", 2, 2, 1, 1, 0, infer_string_concat, {{NULL}}},
    {"",
     "StringSplit",
     1,
     1,
     1,
     2,
     0,
     infer_string_split,
     {GRAPH_OPTIONAL("delimiter", STRING), GRAPH_OPTIONAL("maxsplit", INT)}},
    {"",
     "RegexFullMatch",
     1,
     1,
     1,
     1,
     0,
     infer_regex_full_match,
     {GRAPH_OPTIONAL("pattern", STRING)}},
    {0},
};
