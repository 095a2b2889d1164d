/* REF RegexFullMatch (opset 20): whether each string matches `pattern` as a
 * whole. ONNX's patterns are RE2's; REF translates them to POSIX extended
 * expressions (glibc's regcomp, which also knows \w \W \s \S \b \B) and
 * anchors them at both ends:
 *   - \d \D and the class escapes inside brackets ([\w.\-]) become POSIX
 *     classes, escaped punctuation becomes the literal character;
 *   - (?: groups become plain groups, and lazy quantifiers (*? +? ?? {n,m}?)
 *     greedy ones: neither changes whether a whole string matches.
 * What has no POSIX counterpart (flags like (?i), named groups, \p{..},
 * \A \z, negated class escapes inside brackets) is refused by supports(), so
 * the node is UNSUPPORTED rather than answered wrongly. Strings are matched
 * as bytes in the C locale (RE2's \w is ASCII too). */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

/* A growing string. */
typedef struct text {
    char *s;
    size_t n, cap;
    bool oom;
} text;

static void put(text *t, const char *s)
{
    size_t l = strlen(s);
    if (t->oom)
        return;
    if (t->n + l + 1 > t->cap) {
        size_t cap = (t->n + l + 1) * 2;
        char *p = realloc(t->s, cap);
        if (p == NULL) {
            t->oom = true;
            return;
        }
        t->s = p;
        t->cap = cap;
    }
    memcpy(t->s + t->n, s, l + 1);
    t->n += l;
}

static void putc_(text *t, char c)
{
    char s[2] = {c, '\0'};
    put(t, s);
}

/* Translates a bracket expression starting after '[' at *p; advances *p
 * past its ']'. Returns NULL or the reason it cannot. */
static const char *bracket(const char **p, text *t)
{
    const char *s = *p;
    bool negated = *s == '^';
    if (negated)
        s++;
    bool dash = false, close = false;
    text body = {0};
    if (*s == ']') { /* a leading ']' is a member */
        close = true;
        s++;
    }
    while (*s != '\0' && *s != ']') {
        if (*s == '[' && s[1] == ':') { /* a POSIX class as RE2 also reads it */
            const char *end = strstr(s + 2, ":]");
            if (end == NULL)
                return "an unterminated [: class";
            char buf[32];
            size_t l = (size_t)(end + 2 - s);
            if (l >= sizeof buf)
                return "an unknown [: class";
            memcpy(buf, s, l);
            buf[l] = '\0';
            put(&body, buf);
            s = end + 2;
            continue;
        }
        if (*s != '\\') {
            putc_(&body, *s++);
            continue;
        }
        char e = s[1];
        s += 2;
        switch (e) {
        case 'w':
            put(&body, "[:alnum:]_");
            break;
        case 'd':
            put(&body, "0-9");
            break;
        case 's':
            put(&body, "[:space:]");
            break;
        case '-':
            dash = true;
            break;
        case ']':
            close = true;
            break;
        case 'n':
            putc_(&body, '\n');
            break;
        case 't':
            putc_(&body, '\t');
            break;
        case '\0':
            free(body.s);
            return "a trailing backslash";
        default:
            if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
                free(body.s);
                return "a class escape inside brackets";
            }
            putc_(&body, e); /* escaped punctuation: itself (backslash included) */
        }
    }
    if (*s != ']') {
        free(body.s);
        return "an unterminated bracket expression";
    }
    put(t, negated ? "[^" : "[");
    if (close)
        putc_(t, ']');
    put(t, body.s != NULL ? body.s : "");
    if (dash)
        putc_(t, '-');
    putc_(t, ']');
    free(body.s);
    *p = s + 1;
    return body.oom ? "out of memory" : NULL;
}

/* Translates an RE2 pattern into an anchored POSIX ERE (*out malloc'ed).
 * Returns NULL, or the reason it cannot. */
static const char *translate(const char *re, char **out)
{
    text t = {0};
    put(&t, "^(");
    const char *p = re;
    const char *why = NULL;
    while (*p != '\0' && why == NULL) {
        char c = *p;
        if (c == '[') {
            p++;
            why = bracket(&p, &t);
        } else if (c == '(' && p[1] == '?') {
            if (p[2] == ':') {
                putc_(&t, '(');
                p += 3;
            } else {
                why = "a (? group or flag";
            }
        } else if ((c == '*' || c == '+' || c == '?' || c == '}') && p[1] == '?') {
            putc_(&t, c); /* lazy: greedy matches the same whole strings */
            p += 2;
        } else if (c == '\\') {
            char e = p[1];
            p += 2;
            switch (e) {
            case 'd':
                put(&t, "[0-9]");
                break;
            case 'D':
                put(&t, "[^0-9]");
                break;
            case 'w':
            case 'W':
            case 's':
            case 'S':
            case 'b':
            case 'B': {
                char s[3] = {'\\', e, '\0'};
                put(&t, s);
                break;
            }
            case 'n':
                putc_(&t, '\n');
                break;
            case 't':
                putc_(&t, '\t');
                break;
            case '\0':
                why = "a trailing backslash";
                break;
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
                    why = "an escape POSIX has no counterpart for";
                } else if (strchr(".[]()*+?{}|^$\\", e) != NULL) {
                    char s[3] = {'\\', e, '\0'};
                    put(&t, s);
                } else {
                    putc_(&t, e);
                }
            }
        } else {
            putc_(&t, c);
            p++;
        }
    }
    put(&t, ")$");
    if (why == NULL && t.oom)
        why = "out of memory";
    if (why != NULL) {
        free(t.s);
        return why;
    }
    *out = t.s;
    return NULL;
}

static bool regex_supports(const graph_node *node, const char **why)
{
    const graph_value *x = node->inputs[0];
    if (x == NULL || x->type != RN_STRING) {
        *why = "input 0 must be a string tensor";
        return false;
    }
    char *ere = NULL;
    const char *reason = translate(graph_node_attr_string(node, "pattern", ""), &ere);
    free(ere);
    if (reason != NULL) {
        *why = reason;
        return false;
    }
    return true;
}

static rn_status regex_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    if (x->kind != GRAPH_KIND_TENSOR || x->type != RN_STRING)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "input must be a string tensor",
                            NODE_ARGS(node));
    const char *pattern = graph_node_attr_string(node, "pattern", "");
    char *ere = NULL;
    const char *why = translate(pattern, &ere);
    if (why != NULL)
        return rn_set_error(RN_UNSUPPORTED, NODE_FMT "pattern '%s': %s", NODE_ARGS(node), pattern,
                            why);
    regex_t re;
    int rc = regcomp(&re, ere, REG_EXTENDED | REG_NOSUB);
    free(ere);
    if (rc != 0) {
        char msg[128];
        regerror(rc, &re, msg, sizeof msg);
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "pattern '%s' does not compile: %s",
                            NODE_ARGS(node), pattern, msg);
    }
    graph_tensor y = {.type = RN_BOOL, .rank = x->rank};
    memcpy(y.dims, x->dims, sizeof y.dims);
    rn_status st = ref_tensor_alloc(node, &y);
    size_t n = graph_tensor_count(x);
    char *const *in = x->data;
    for (size_t i = 0; i < n && st == RN_OK; i++)
        ((uint8_t *)y.data)[i] = regexec(&re, in[i] != NULL ? in[i] : "", 0, NULL, 0) == 0;
    regfree(&re);
    if (st == RN_OK && (st = args->move_output(args, 0, &y)) != RN_OK)
        graph_tensor_release(&y);
    return st;
}

const plugin_kernel ref_kernel_regex_full_match = {
    .domain = "",
    .op_type = "RegexFullMatch",
    .impl_type = "ref",
    .supports = regex_supports,
    .run = regex_run,
};
