/* REF StringNormalizer (opset 10), following ONNX's reference
 * implementation: on a [C] or [1, C] string tensor, case-sensitive stop words
 * are removed before the case change, case-insensitive ones after it (then
 * compared with the stop words changed the same way; with NONE, as given).
 * A string is split into words on single spaces and rejoined with them; the
 * strings left empty are dropped, and when none is left the output is one
 * empty string ([1] or [1, 1]).
 *
 * Case changes cover ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic
 * (UTF-8); other characters are left as they are. The locale attribute is
 * accepted and not used (the mapping does not depend on it). Accents are not
 * stripped (the reference strips them only from non-ASCII text). */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

/* The lower (to_upper false) or upper case of code point c, in the blocks
 * named above. */
static uint32_t change_case(uint32_t c, bool to_upper)
{
    if (!to_upper) {
        if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7) ||
            (c >= 0x391 && c <= 0x3AB && c != 0x3A2) || (c >= 0x410 && c <= 0x42F))
            return c + 0x20;
        if (c >= 0x400 && c <= 0x40F)
            return c + 0x50;
        if (c == 0x178)
            return 0xFF;
        if ((c >= 0x100 && c <= 0x137 && c % 2 == 0) || (c >= 0x14A && c <= 0x177 && c % 2 == 0) ||
            (c >= 0x139 && c <= 0x148 && c % 2 == 1) || (c >= 0x179 && c <= 0x17E && c % 2 == 1))
            return c + 1;
        return c;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7) ||
        (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) || (c >= 0x430 && c <= 0x44F))
        return c - 0x20;
    if (c >= 0x450 && c <= 0x45F)
        return c - 0x50;
    if (c == 0xFF)
        return 0x178;
    if ((c >= 0x101 && c <= 0x137 && c % 2 == 1) || (c >= 0x14B && c <= 0x177 && c % 2 == 1) ||
        (c >= 0x13A && c <= 0x148 && c % 2 == 0) || (c >= 0x17A && c <= 0x17E && c % 2 == 0))
        return c - 1;
    return c;
}

/* Decodes one UTF-8 sequence at s (n bytes left) into *c; returns its length
 * (an invalid byte reads as itself, length 1). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *c)
{
    if (s[0] < 0x80 || n < 2) {
        *c = s[0];
        return 1;
    }
    if ((s[0] & 0xE0) == 0xC0 && (s[1] & 0xC0) == 0x80) {
        *c = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    *c = s[0]; /* longer sequences hold no letters this maps: copied as is */
    return 1;
}

/* A copy of s with its case changed (mode CASE_LOWER / CASE_UPPER); NULL
 * when out of memory. Mapped letters keep their UTF-8 length (all of them
 * are two-byte sequences or ASCII). */
static char *recase(const char *s, int mode)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1);
    if (d == NULL)
        return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t c;
        size_t len = utf8_decode(p + i, n - i, &c);
        uint32_t m = mode == CASE_NONE ? c : change_case(c, mode == CASE_UPPER);
        if (len == 1 && m < 0x80) {
            d[i] = (char)m;
        } else if (len == 2 && m >= 0x80 && m < 0x800) {
            d[i] = (char)(0xC0 | (m >> 6));
            d[i + 1] = (char)(0x80 | (m & 0x3F));
        } else {
            memcpy(d + i, p + i, len);
        }
        i += len;
    }
    d[n] = '\0';
    return d;
}

/* Removes the words of s (split on single spaces) that are in stops[0..n);
 * returns a new string, or NULL when out of memory. */
static char *remove_words(const char *s, char *const *stops, int n)
{
    size_t len = strlen(s);
    char *d = malloc(len + 1);
    if (d == NULL)
        return NULL;
    size_t out = 0;
    bool first = true;
    const char *w = s;
    for (;;) {
        const char *end = strchr(w, ' ');
        size_t wl = end != NULL ? (size_t)(end - w) : strlen(w);
        bool stop = false;
        for (int k = 0; k < n && !stop; k++)
            stop = strlen(stops[k]) == wl && memcmp(stops[k], w, wl) == 0;
        if (!stop) {
            if (!first)
                d[out++] = ' ';
            memcpy(d + out, w, wl);
            out += wl;
            first = false;
        }
        if (end == NULL)
            break;
        w = end + 1;
    }
    d[out] = '\0';
    return d;
}

/* Normalizes one string into a new one. */
static char *normalize(const char *s, int mode, bool sensitive, char *const *raw_stops,
                       char *const *stops, int n_stops)
{
    char *a = sensitive && n_stops > 0 ? remove_words(s, raw_stops, n_stops) : strdup(s);
    if (a == NULL)
        return NULL;
    char *b = recase(a, mode);
    free(a);
    if (b == NULL || sensitive || n_stops == 0)
        return b;
    char *c = remove_words(b, stops, n_stops);
    free(b);
    return c;
}

static bool string_normalizer_supports(const graph_node *node, const char **why)
{
    const graph_value *x = node->inputs[0];
    if (x == NULL || x->type != RN_STRING) {
        *why = "input 0 must be a string tensor";
        return false;
    }
    return true;
}

static rn_status string_normalizer_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_TENSOR);
    if (st != RN_OK)
        return st;
    const graph_tensor *x = &args->inputs[0];
    if (x->type != RN_STRING || x->rank < 1 || x->rank > 2 || (x->rank == 2 && x->dims[0] != 1))
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "input must be a [C] or [1, C] string tensor",
                            NODE_ARGS(node));
    const char *action = graph_node_attr_string(node, "case_change_action", "NONE");
    int mode = strcmp(action, "LOWER") == 0   ? CASE_LOWER
               : strcmp(action, "UPPER") == 0 ? CASE_UPPER
               : strcmp(action, "NONE") == 0  ? CASE_NONE
                                              : -1;
    if (mode < 0)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "case_change_action is '%s', expected NONE, LOWER or UPPER",
                            NODE_ARGS(node), action);
    bool sensitive = graph_node_attr_int(node, "is_case_sensitive", 0) != 0;
    const graph_attr *sw = graph_node_attr(node, "stopwords");
    int n_stops = sw != NULL && sw->type == GRAPH_ATTR_STRINGS ? sw->count : 0;
    char *const *raw = n_stops > 0 ? sw->strings : NULL;
    size_t n = graph_tensor_count(x);
    char **stops = calloc((size_t)n_stops + 1, sizeof *stops);
    char **res = calloc(n + 1, sizeof *res);
    if (stops == NULL || res == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    for (int k = 0; k < n_stops && st == RN_OK; k++)
        if ((stops[k] = recase(raw[k], mode)) == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    char *const *in = x->data;
    size_t kept = 0;
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        char *r = normalize(in[i] != NULL ? in[i] : "", mode, sensitive, raw, stops, n_stops);
        if (r == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
        else if (r[0] == '\0')
            free(r);
        else
            res[kept++] = r;
    }
    graph_tensor y = {.type = RN_STRING, .rank = x->rank};
    if (x->rank == 2)
        y.dims[0] = 1;
    y.dims[x->rank - 1] = kept > 0 ? (int64_t)kept : 1;
    if (st == RN_OK && (st = ref_tensor_alloc(node, &y)) == RN_OK) {
        char **out = y.data;
        if (kept == 0 && (out[0] = strdup("")) == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
        for (size_t i = 0; i < kept; i++) {
            out[i] = res[i];
            res[i] = NULL;
        }
        if (st == RN_OK)
            st = args->move_output(args, 0, &y);
        graph_tensor_release(&y);
    }
    for (size_t i = 0; res != NULL && i < n; i++)
        free(res[i]);
    for (int k = 0; stops != NULL && k < n_stops; k++)
        free(stops[k]);
    free(res);
    free(stops);
    return st;
}

const plugin_kernel ref_kernel_string_normalizer = {
    .domain = "",
    .op_type = "StringNormalizer",
    .impl_type = "ref",
    .supports = string_normalizer_supports,
    .run = string_normalizer_run,
};
