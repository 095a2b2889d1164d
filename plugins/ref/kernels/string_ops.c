/* REF StringConcat and StringSplit (opset 20).
 *
 * StringConcat joins two string tensors element by element with numpy
 * broadcasting. StringSplit splits every string on `delimiter` (each
 * occurrence; empty pieces kept), or, when the delimiter is absent or empty,
 * on runs of whitespace (as Python's str.split() does: leading whitespace
 * ignored, the unsplit rest kept as it is), doing at most `maxsplit` splits; the substrings get one
 * more axis, as long as the most pieces any string gave, padded with empty strings, and the second
 * output counts each string's pieces. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/broadcast.h"
#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static bool strings_supports(const graph_node *node, const char **why)
{
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i] == NULL || node->inputs[i]->type != RN_STRING) {
            *why = "inputs must be string tensors";
            return false;
        }
    return true;
}

static rn_status string_concat_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *a = &args->inputs[0], *b = &args->inputs[1];
    if (a->kind != GRAPH_KIND_TENSOR || b->kind != GRAPH_KIND_TENSOR || a->type != RN_STRING ||
        b->type != RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "inputs must be string tensors",
                            NODE_ARGS(node));
    graph_shape sa = {.rank = a->rank}, sb = {.rank = b->rank}, so;
    memcpy(sa.dims, a->dims, sizeof sa.dims);
    memcpy(sb.dims, b->dims, sizeof sb.dims);
    rn_status st = graph_broadcast_shapes(node, &sa, &sb, &so);
    if (st != RN_OK)
        return st;
    graph_tensor y = {.type = RN_STRING, .rank = so.rank};
    memcpy(y.dims, so.dims, sizeof y.dims);
    if ((st = ref_tensor_alloc(node, &y)) != RN_OK)
        return st;
    ref_bcast it;
    if (!ref_bcast_init(&it, y.rank, y.dims, 2, (const graph_tensor *[]){a, b})) {
        graph_tensor_release(&y);
        return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "shapes do not broadcast", NODE_ARGS(node));
    }
    char *const *xa = a->data, *const *xb = b->data;
    char **out = y.data;
    for (int64_t r = 0; r < it.rows && st == RN_OK; r++, ref_bcast_next(&it)) {
        for (int64_t k = 0; k < it.inner && st == RN_OK; k++) {
            const char *p = xa[it.off[0] + k * it.step[0]], *q = xb[it.off[1] + k * it.step[1]];
            p = p != NULL ? p : "";
            q = q != NULL ? q : "";
            size_t lp = strlen(p), lq = strlen(q);
            char *s = malloc(lp + lq + 1);
            if (s == NULL) {
                st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
                break;
            }
            memcpy(s, p, lp);
            memcpy(s + lp, q, lq + 1);
            out[r * it.inner + k] = s;
        }
    }
    if (st == RN_OK)
        st = args->move_output(args, 0, &y);
    graph_tensor_release(&y);
    return st;
}

/* The pieces of one string: start offsets and lengths into it. */
typedef struct pieces {
    size_t n, cap;
    size_t *start, *len;
} pieces;

static bool pieces_add(pieces *p, size_t start, size_t len)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 8;
        size_t *s = realloc(p->start, cap * sizeof *s);
        if (s == NULL)
            return false;
        p->start = s;
        size_t *l = realloc(p->len, cap * sizeof *l);
        if (l == NULL)
            return false;
        p->len = l;
        p->cap = cap;
    }
    p->start[p->n] = start;
    p->len[p->n++] = len;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Splits s as Python's str.split(delim, maxsplit) does (delim NULL or "":
 * whitespace runs); maxsplit < 0 means no limit. */
static bool split_one(const char *s, const char *delim, int64_t maxsplit, pieces *p)
{
    p->n = 0;
    size_t n = strlen(s);
    if (delim != NULL && delim[0] != '\0') {
        size_t dl = strlen(delim), from = 0;
        int64_t splits = 0;
        for (;;) {
            const char *hit = maxsplit < 0 || splits < maxsplit ? strstr(s + from, delim) : NULL;
            if (hit == NULL)
                return pieces_add(p, from, n - from);
            size_t at = (size_t)(hit - s);
            if (!pieces_add(p, from, at - from))
                return false;
            from = at + dl;
            splits++;
        }
    }
    size_t i = 0;
    int64_t splits = 0;
    while (i < n && is_space(s[i]))
        i++;
    while (i < n) {
        if (maxsplit >= 0 && splits == maxsplit)
            return pieces_add(p, i, n - i); /* the rest, as Python keeps it */
        size_t j = i;
        while (j < n && !is_space(s[j]))
            j++;
        if (!pieces_add(p, i, j - i))
            return false;
        splits++;
        i = j;
        while (i < n && is_space(s[i]))
            i++;
    }
    return true;
}

static rn_status string_split_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    if (x->kind != GRAPH_KIND_TENSOR || x->type != RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input must be a string tensor",
                            NODE_ARGS(node));
    if (x->rank >= RN_MAX_RANK)
        return rn_set_error(RN_UNSUPPORTED,
                            NODE_FMT "input rank %d leaves no room for the "
                                     "substrings axis",
                            NODE_ARGS(node), x->rank);
    const char *delim = graph_node_attr_string(node, "delimiter", NULL);
    int64_t maxsplit = graph_node_attr_int(node, "maxsplit", -1);
    if (graph_node_attr(node, "maxsplit") != NULL && maxsplit < 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "maxsplit is %lld, expected >= 0",
                            NODE_ARGS(node), (long long)maxsplit);
    size_t n = graph_tensor_count(x);
    char *const *in = x->data;
    pieces p = {0};
    size_t most = 0;
    rn_status st = RN_OK;
    /* First pass: the widest split sets the new axis. */
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        if (!split_one(in[i] != NULL ? in[i] : "", delim, maxsplit, &p))
            st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
        else if (p.n > most)
            most = p.n;
    }
    graph_tensor y = {.type = RN_STRING, .rank = x->rank + 1};
    graph_tensor z = {.type = RN_I64, .rank = x->rank};
    memcpy(y.dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    memcpy(z.dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    y.dims[x->rank] = (int64_t)most;
    if (st == RN_OK && (st = ref_tensor_alloc(node, &y)) == RN_OK)
        st = ref_tensor_alloc(node, &z);
    char **out = y.data;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        const char *s = in[i] != NULL ? in[i] : "";
        if (!split_one(s, delim, maxsplit, &p)) {
            st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
            break;
        }
        ((int64_t *)z.data)[i] = (int64_t)p.n;
        for (size_t k = 0; k < most && st == RN_OK; k++) {
            char *piece = k < p.n ? strndup(s + p.start[k], p.len[k]) : strdup("");
            if (piece == NULL)
                st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
            out[i * most + k] = piece;
        }
    }
    free(p.start);
    free(p.len);
    if (st == RN_OK)
        st = args->move_output(args, 0, &y);
    if (st == RN_OK && args->n_outputs > 1 && node->outputs[1] != NULL)
        st = args->move_output(args, 1, &z);
    graph_tensor_release(&y);
    graph_tensor_release(&z);
    return st;
}

const plugin_kernel ref_kernel_string_concat = {
    .domain = "",
    .op_type = "StringConcat",
    .impl_type = "ref",
    .supports = strings_supports,
    .run = string_concat_run,
};

const plugin_kernel ref_kernel_string_split = {
    .domain = "",
    .op_type = "StringSplit",
    .impl_type = "ref",
    .supports = strings_supports,
    .run = string_split_run,
};
