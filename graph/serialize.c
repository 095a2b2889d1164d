/* Graph serialization, the export container, cache keys and cache files.
 * The byte layouts are described in docs/export.md; this file is their
 * reference. */
#include "graph/serialize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "graph/serialize.c copies tensor data as is: it needs a little-endian host"
#endif

void graph_buffer_release(graph_buffer *b)
{
    if (b == NULL)
        return;
    free(b->data);
    b->data = NULL;
    b->size = 0;
}

/* ---- XXH64 (Yann Collet's xxHash, 64-bit variant), streaming ---- */

#define XXH_P1 11400714785074694791ull
#define XXH_P2 14029467366897019727ull
#define XXH_P3 1609587929392839161ull
#define XXH_P4 9650029242287828579ull
#define XXH_P5 2870177450012600261ull

typedef struct xxh64_state {
    uint64_t v[4];
    uint64_t total;
    uint8_t mem[32];
    size_t mem_size;
    uint64_t seed;
} xxh64_state;

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t load64(const uint8_t *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static uint32_t load32(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

static uint64_t xxh_round(uint64_t acc, uint64_t input)
{
    acc += input * XXH_P2;
    acc = rotl64(acc, 31);
    return acc * XXH_P1;
}

static uint64_t xxh_merge(uint64_t acc, uint64_t v)
{
    acc ^= xxh_round(0, v);
    return acc * XXH_P1 + XXH_P4;
}

static void xxh64_init(xxh64_state *s, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->seed = seed;
    s->v[0] = seed + XXH_P1 + XXH_P2;
    s->v[1] = seed + XXH_P2;
    s->v[2] = seed;
    s->v[3] = seed - XXH_P1;
}

static void xxh64_stripe(xxh64_state *s, const uint8_t *p)
{
    for (int i = 0; i < 4; i++)
        s->v[i] = xxh_round(s->v[i], load64(p + 8 * i));
}

static void xxh64_update(xxh64_state *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->total += n;
    if (s->mem_size + n < 32) {
        memcpy(s->mem + s->mem_size, p, n);
        s->mem_size += n;
        return;
    }
    if (s->mem_size > 0) {
        size_t fill = 32 - s->mem_size;
        memcpy(s->mem + s->mem_size, p, fill);
        xxh64_stripe(s, s->mem);
        p += fill;
        n -= fill;
        s->mem_size = 0;
    }
    for (; n >= 32; p += 32, n -= 32)
        xxh64_stripe(s, p);
    memcpy(s->mem, p, n);
    s->mem_size = n;
}

static uint64_t xxh64_digest(const xxh64_state *s)
{
    uint64_t h;
    if (s->total >= 32) {
        h = rotl64(s->v[0], 1) + rotl64(s->v[1], 7) + rotl64(s->v[2], 12) + rotl64(s->v[3], 18);
        for (int i = 0; i < 4; i++)
            h = xxh_merge(h, s->v[i]);
    } else {
        h = s->seed + XXH_P5;
    }
    h += s->total;
    const uint8_t *p = s->mem, *end = s->mem + s->mem_size;
    for (; p + 8 <= end; p += 8) {
        h ^= xxh_round(0, load64(p));
        h = rotl64(h, 27) * XXH_P1 + XXH_P4;
    }
    if (p + 4 <= end) {
        h ^= (uint64_t)load32(p) * XXH_P1;
        h = rotl64(h, 23) * XXH_P2 + XXH_P3;
        p += 4;
    }
    for (; p < end; p++) {
        h ^= *p * XXH_P5;
        h = rotl64(h, 11) * XXH_P1;
    }
    h ^= h >> 33;
    h *= XXH_P2;
    h ^= h >> 29;
    h *= XXH_P3;
    h ^= h >> 32;
    return h;
}

uint64_t graph_hash_bytes(const void *data, size_t size, uint64_t seed)
{
    xxh64_state s;
    xxh64_init(&s, seed);
    xxh64_update(&s, data, size);
    return xxh64_digest(&s);
}

/* ---- encoding ---- */

/* Where encoded bytes go. The encoder runs twice for a buffer: once with
 * data NULL to count the bytes, once to write them into an allocation of
 * exactly that size, so weights are copied once and never realloc'ed. For a
 * hash, the bytes stream into `hash` and are not kept. The first error
 * sticks: later puts do nothing. */
typedef struct sink {
    uint8_t *data; /* NULL: count (and hash) only */
    size_t cap;
    size_t size;
    xxh64_state *hash;
    rn_status st;
} sink;

static void put(sink *s, const void *p, size_t n)
{
    if (s->st != RN_OK || n == 0)
        return;
    if (s->data != NULL) {
        if (n > s->cap - s->size) {
            s->st = rn_set_error(RN_INTERNAL, "graph encoding: the write pass outgrew the count");
            return;
        }
        memcpy(s->data + s->size, p, n);
    }
    if (s->hash != NULL)
        xxh64_update(s->hash, p, n);
    s->size += n;
}

static void put_u8(sink *s, uint8_t x)
{
    put(s, &x, 1);
}

static void put_u32(sink *s, uint32_t x)
{
    put(s, &x, 4); /* little-endian host */
}

static void put_u64(sink *s, uint64_t x)
{
    put(s, &x, 8);
}

/* A string: u32 byte length, then the bytes without a terminator. NULL is "". */
static void put_str(sink *s, const char *str)
{
    size_t n = str != NULL ? strlen(str) : 0;
    if (n > UINT32_MAX) {
        if (s->st == RN_OK)
            s->st = rn_set_error(RN_INVALID_ARG, "graph encoding: a string of %zu bytes", n);
        return;
    }
    put_u32(s, (uint32_t)n);
    put(s, str, n);
}

/* Records an encoding error (the first one wins) and returns it. */
static rn_status enc_fail(sink *s, rn_status st)
{
    if (s->st == RN_OK)
        s->st = st;
    return s->st;
}

/* The chain of graphs being encoded, innermost first: outer-scope references
 * must resolve in it. */
typedef struct scope {
    const graph *g;
    const struct scope *up;
    int depth;
} scope;

static bool is_local(const graph *g, const graph_value *v)
{
    return v->id >= 0 && v->id < g->n_values && g->values[v->id] == v;
}

/* The values of enclosing graphs that g's nodes and results read, in first-use
 * order. They are written by name, so that a reader resolves them in the
 * graphs it has rebuilt around the subgraph. */
typedef struct outer_refs {
    int n, cap;
    const graph_value **v;
} outer_refs;

static int outer_index(const outer_refs *o, const graph_value *v)
{
    for (int i = 0; i < o->n; i++)
        if (o->v[i] == v)
            return i;
    return -1;
}

static rn_status outer_add(sink *s, const scope *sc, outer_refs *o, const graph_value *v,
                           const char *user)
{
    if (v == NULL || is_local(sc->g, v) || outer_index(o, v) >= 0)
        return RN_OK;
    const graph_value *found = NULL;
    for (const scope *up = sc->up; up != NULL && found == NULL; up = up->up)
        found = graph_find_value(up->g, v->name, false);
    if (found != v)
        return enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                        "graph encoding: graph '%s': %s reads value '%s', which "
                                        "is defined neither in the graph nor in an enclosing one",
                                        sc->g->name, user, v->name));
    if (o->n == o->cap) {
        int ncap = o->cap ? 2 * o->cap : 8;
        const graph_value **p = realloc(o->v, (size_t)ncap * sizeof *p);
        if (p == NULL)
            return enc_fail(s, rn_set_error(RN_OUT_OF_MEMORY, "graph encoding: out of memory"));
        o->v = p;
        o->cap = ncap;
    }
    o->v[o->n++] = v;
    return RN_OK;
}

/* -1 for an omitted value, the id of a local value, n_values + k for entry k
 * of the outer references. */
static int32_t value_ref(const graph *g, const outer_refs *o, const graph_value *v)
{
    if (v == NULL)
        return -1;
    if (is_local(g, v))
        return v->id;
    return g->n_values + outer_index(o, v);
}

static bool type_ok(rn_element_type t)
{
    return t == RN_UNDEFINED || rn_element_type_is_valid(t);
}

static void enc_graph(sink *s, const graph *g, const scope *up);

/* Elements of a tensor of these dims (0 when a dim is 0); false when a dim is
 * negative or the count overflows. */
static bool dims_count(int rank, const int64_t *dims, size_t *out)
{
    size_t n = 1;
    bool zero = false, overflow = false;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return false;
        zero |= dims[i] == 0;
        overflow |= __builtin_mul_overflow(n, (size_t)dims[i], &n);
    }
    *out = zero ? 0 : n;
    return zero || !overflow;
}

static void enc_tensor(sink *s, const graph_tensor *t, const char *owner)
{
    size_t count = 0, want = 0;
    bool ok = rn_element_type_is_valid(t->type) && t->rank >= 0 && t->rank <= RN_MAX_RANK &&
              dims_count(t->rank, t->dims, &count);
    if (ok && t->type != RN_STRING)
        ok = !__builtin_mul_overflow(count, rn_element_type_size(t->type), &want) &&
             want == t->nbytes;
    if (!ok || (count > 0 && t->data == NULL)) {
        enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                 "graph encoding: %s: a tensor of type %d, rank %d and %zu bytes "
                                 "whose dims, byte count and data disagree",
                                 owner, (int)t->type, t->rank, t->nbytes));
        return;
    }
    put_u32(s, (uint32_t)t->type);
    put_u32(s, (uint32_t)t->rank);
    for (int i = 0; i < t->rank; i++)
        put_u64(s, (uint64_t)t->dims[i]);
    if (t->type == RN_STRING) {
        char *const *str = t->data;
        for (size_t i = 0; i < count; i++)
            put_str(s, str[i]);
    } else {
        put_u64(s, t->nbytes);
        put(s, t->data, t->nbytes);
    }
}

static void enc_attr(sink *s, const graph_attr *a, const graph_node *n, const scope *sc)
{
    char owner[256];
    snprintf(owner, sizeof owner, "node '%s' (%s), attribute '%s'", n->name, n->op_type,
             a->name ? a->name : "");
    put_str(s, a->name);
    put_u32(s, (uint32_t)a->type);
    int count = a->count > 0 ? a->count : 0;
    switch (a->type) {
    case GRAPH_ATTR_UNDEFINED:
        break;
    case GRAPH_ATTR_FLOAT: {
        uint32_t bits;
        memcpy(&bits, &a->f, 4);
        put_u32(s, bits);
        break;
    }
    case GRAPH_ATTR_INT:
        put_u64(s, (uint64_t)a->i);
        break;
    case GRAPH_ATTR_STRING:
        put_u8(s, a->s != NULL);
        if (a->s != NULL)
            put_str(s, a->s);
        break;
    case GRAPH_ATTR_TENSOR:
        put_u8(s, a->t != NULL);
        if (a->t != NULL)
            enc_tensor(s, a->t, owner);
        break;
    case GRAPH_ATTR_GRAPH:
        put_u8(s, a->g != NULL);
        if (a->g != NULL)
            enc_graph(s, a->g, sc);
        break;
    case GRAPH_ATTR_TYPE_PROTO: /* kind, element type, rank, dims */
        put_u32(s, (uint32_t)a->tp.kind);
        put_u32(s, (uint32_t)a->tp.elem);
        put_u32(s, (uint32_t)a->tp.shape.rank);
        for (int i = 0; i < a->tp.shape.rank && i < RN_MAX_RANK; i++)
            put_u64(s, (uint64_t)a->tp.shape.dims[i]);
        break;
    case GRAPH_ATTR_FLOATS:
    case GRAPH_ATTR_INTS:
    case GRAPH_ATTR_STRINGS:
    case GRAPH_ATTR_TENSORS:
    case GRAPH_ATTR_GRAPHS: {
        put_u32(s, (uint32_t)count);
        for (int k = 0; k < count && s->st == RN_OK; k++) {
            if (a->type == GRAPH_ATTR_FLOATS) {
                uint32_t bits;
                memcpy(&bits, &a->floats[k], 4);
                put_u32(s, bits);
            } else if (a->type == GRAPH_ATTR_INTS) {
                put_u64(s, (uint64_t)a->ints[k]);
            } else if (a->type == GRAPH_ATTR_STRINGS) {
                put_str(s, a->strings[k]);
            } else if (a->type == GRAPH_ATTR_TENSORS) {
                enc_tensor(s, &a->tensors[k], owner);
            } else {
                enc_graph(s, a->graphs[k], sc);
            }
        }
        break;
    }
    default:
        enc_fail(s, rn_set_error(RN_INVALID_ARG, "graph encoding: %s: unknown attribute type %d",
                                 owner, (int)a->type));
    }
}

static void enc_node(sink *s, const graph_node *n, const scope *sc, const outer_refs *o)
{
    const graph *g = sc->g;
    put_str(s, n->name);
    put_str(s, n->domain);
    put_str(s, n->op_type);
    put_u32(s, (uint32_t)n->opset);
    put_u32(s, (uint32_t)n->n_inputs);
    for (int k = 0; k < n->n_inputs; k++)
        put_u32(s, (uint32_t)value_ref(g, o, n->inputs[k]));
    put_u32(s, (uint32_t)n->n_outputs);
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] != NULL && !is_local(g, n->outputs[k])) {
            enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                     "graph encoding: node '%s' (%s): output %d '%s' is not a "
                                     "value of graph '%s'",
                                     n->name, n->op_type, k, n->outputs[k]->name, g->name));
            return;
        }
        put_u32(s, (uint32_t)value_ref(g, o, n->outputs[k]));
    }
    put_u32(s, (uint32_t)n->n_attrs);
    for (int k = 0; k < n->n_attrs && s->st == RN_OK; k++)
        enc_attr(s, &n->attrs[k], n, sc);
    put_u32(s, (uint32_t)n->n_fused);
    for (int k = 0; k < n->n_fused; k++)
        put_str(s, n->fused_names[k]);
}

static void enc_value(sink *s, const graph *g, const graph_value *v)
{
    if (!type_ok(v->type) || v->shape.rank < -1 || v->shape.rank > RN_MAX_RANK) {
        enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                 "graph encoding: graph '%s': value '%s' has type %d and rank %d",
                                 g->name, v->name, (int)v->type, v->shape.rank));
        return;
    }
    put_str(s, v->name);
    put_u32(s, (uint32_t)v->type);
    put_u32(s, (uint32_t)v->shape.rank);
    for (int i = 0; i < v->shape.rank; i++)
        put_u64(s, (uint64_t)v->shape.dims[i]);
    put_u8(s, (uint8_t)((v->is_parameter ? 1 : 0) | (v->constant != NULL ? 2 : 0) |
                        ((unsigned)v->kind & 3u) << 2));
    if (v->constant != NULL) {
        char owner[256];
        snprintf(owner, sizeof owner, "graph '%s': constant '%s'", g->name, v->name);
        enc_tensor(s, v->constant, owner);
    }
}

/* graph: name, opset, ir_version, values, outer references, nodes, inputs
 * (local ids), outputs (references). */
static void enc_graph(sink *s, const graph *g, const scope *up)
{
    scope sc = {.g = g, .up = up, .depth = up != NULL ? up->depth + 1 : 0};
    if (sc.depth > GRAPH_SERIAL_MAX_DEPTH) {
        enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                 "graph encoding: graph '%s': subgraphs nest deeper than %d",
                                 g->name, GRAPH_SERIAL_MAX_DEPTH));
        return;
    }
    outer_refs o = {0};
    char user[256];
    for (int i = 0; i < g->n_nodes && s->st == RN_OK; i++) {
        const graph_node *n = g->nodes[i];
        snprintf(user, sizeof user, "node '%s' (%s)", n->name, n->op_type);
        for (int k = 0; k < n->n_inputs && s->st == RN_OK; k++)
            outer_add(s, &sc, &o, n->inputs[k], user);
    }
    for (int i = 0; i < g->n_outputs && s->st == RN_OK; i++) {
        if (g->outputs[i] == NULL)
            enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                     "graph encoding: graph '%s': result %d is NULL", g->name, i));
        else
            outer_add(s, &sc, &o, g->outputs[i], "a result");
    }
    put_str(s, g->name);
    put_u32(s, (uint32_t)g->opset);
    put_u32(s, (uint32_t)g->ir_version);
    put_u32(s, (uint32_t)g->n_values);
    for (int i = 0; i < g->n_values && s->st == RN_OK; i++)
        enc_value(s, g, g->values[i]);
    put_u32(s, (uint32_t)o.n);
    for (int i = 0; i < o.n; i++)
        put_str(s, o.v[i]->name);
    put_u32(s, (uint32_t)g->n_nodes);
    for (int i = 0; i < g->n_nodes && s->st == RN_OK; i++)
        enc_node(s, g->nodes[i], &sc, &o);
    put_u32(s, (uint32_t)g->n_inputs);
    for (int i = 0; i < g->n_inputs && s->st == RN_OK; i++) {
        if (g->inputs[i] == NULL || !is_local(g, g->inputs[i]))
            enc_fail(s, rn_set_error(RN_INVALID_ARG,
                                     "graph encoding: graph '%s': input %d is not a value of the "
                                     "graph",
                                     g->name, i));
        else
            put_u32(s, (uint32_t)g->inputs[i]->id);
    }
    put_u32(s, (uint32_t)g->n_outputs);
    for (int i = 0; i < g->n_outputs; i++)
        put_u32(s, (uint32_t)value_ref(g, &o, g->outputs[i]));
    free(o.v);
}

#define GRAPH_SERIAL_TAG "RNGR"

/* The payload: tag, encoding version, top-level graph. */
static void enc_payload(sink *s, const graph *g)
{
    put(s, GRAPH_SERIAL_TAG, 4);
    put_u32(s, GRAPH_SERIAL_VERSION);
    enc_graph(s, g, NULL);
}

rn_status graph_serialize(const graph *g, graph_buffer *out)
{
    sink count = {0};
    enc_payload(&count, g);
    if (count.st != RN_OK)
        return count.st;
    sink w = {.data = malloc(count.size ? count.size : 1), .cap = count.size};
    if (w.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph encoding: out of memory for %zu bytes",
                            count.size);
    enc_payload(&w, g);
    if (w.st != RN_OK) {
        free(w.data);
        return w.st;
    }
    out->data = w.data;
    out->size = w.size;
    return RN_OK;
}

/* ---- decoding ---- */

/* Bytes under decoding. `base` is the offset of data[0] in the caller's
 * buffer, so messages give offsets into the whole blob. The first error
 * sticks; the getters then return zeros and the callers unwind. */
typedef struct reader {
    const uint8_t *data;
    size_t size;
    size_t pos;
    size_t base;
    const char *what; /* "serialized graph", "export blob" */
    int depth;
    rn_status st;
} reader;

/* Minimum encoded sizes, used to refuse counts the remaining bytes cannot
 * hold before allocating anything for them. */
enum {
    MIN_VALUE = 13, /* name length, type, rank, flags */
    MIN_NODE = 32,  /* 3 string lengths, opset, 4 counts */
    MIN_ATTR = 8,   /* name length, type */
    MIN_TENSOR = 8, /* type, rank (a STRING scalar adds 4, others 8) */
    MIN_GRAPH = 32, /* name length, opset, ir_version, 5 counts */
    MIN_STRING = 4, /* length */
    MIN_PROP = 8,   /* two string lengths */
};

__attribute__((format(printf, 4, 5))) static rn_status
dec_fail_at(reader *r, size_t at, rn_status st, const char *fmt, ...)
{
    if (r->st != RN_OK)
        return r->st;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->st = rn_set_error(st, "%s: %s (at byte %zu)", r->what, msg, r->base + at);
    return r->st;
}

#define dec_fail(r, ...) dec_fail_at((r), (r)->pos, RN_PARSE_ERROR, __VA_ARGS__)

/* Turns an error a graph_* call reported into this decoder's error, keeping
 * its message and adding the offset. Anything but running out of memory is
 * a malformed input here. */
static rn_status dec_fail_from(reader *r, size_t at, rn_status st)
{
    char msg[768];
    snprintf(msg, sizeof msg, "%s", rn_last_error());
    return dec_fail_at(r, at, st == RN_OUT_OF_MEMORY ? st : RN_PARSE_ERROR, "%s", msg);
}

static size_t remaining(const reader *r)
{
    return r->size - r->pos;
}

/* Points at n bytes to read, or NULL (and an error) when fewer remain. */
static const uint8_t *take(reader *r, size_t n, const char *field)
{
    if (r->st != RN_OK)
        return NULL;
    if (n > remaining(r)) {
        dec_fail(r, "truncated: %s needs %zu bytes, %zu remain", field, n, remaining(r));
        return NULL;
    }
    const uint8_t *p = r->data + r->pos;
    r->pos += n;
    return p;
}

static uint8_t get_u8(reader *r, const char *field)
{
    const uint8_t *p = take(r, 1, field);
    return p != NULL ? *p : 0;
}

static uint32_t get_u32(reader *r, const char *field)
{
    const uint8_t *p = take(r, 4, field);
    return p != NULL ? load32(p) : 0;
}

/* A presence byte: 0 or 1, anything else is corrupt. */
static bool get_flag(reader *r, const char *field)
{
    size_t at = r->pos;
    uint8_t f = get_u8(r, field);
    if (f > 1)
        dec_fail_at(r, at, RN_PARSE_ERROR, "%s is %u, not 0 or 1", field, f);
    return r->st == RN_OK && f == 1;
}

static uint64_t get_u64(reader *r, const char *field)
{
    const uint8_t *p = take(r, 8, field);
    return p != NULL ? load64(p) : 0;
}

/* A count of entries that each take at least `min_bytes`: refused when the
 * remaining bytes cannot hold them, so a corrupt count never drives an
 * allocation. */
static int get_count(reader *r, const char *field, size_t min_bytes)
{
    size_t at = r->pos;
    uint32_t n = get_u32(r, field);
    if (r->st != RN_OK)
        return 0;
    if (n > INT_MAX || (uint64_t)n * min_bytes > remaining(r)) {
        dec_fail_at(r, at, RN_PARSE_ERROR, "%s %" PRIu32 " exceeds the %zu bytes that remain",
                    field, n, remaining(r));
        return 0;
    }
    return (int)n;
}

/* A malloc'ed NUL-terminated copy of a string field, or NULL on error. */
static char *get_str(reader *r, const char *field)
{
    size_t at = r->pos;
    uint32_t n = get_u32(r, field);
    if (r->st == RN_OK && n > remaining(r))
        dec_fail_at(r, at, RN_PARSE_ERROR, "truncated: %s of %" PRIu32 " bytes, %zu remain", field,
                    n, remaining(r));
    const uint8_t *p = take(r, n, field);
    if (p == NULL)
        return NULL;
    if (memchr(p, 0, n) != NULL) {
        dec_fail_at(r, at, RN_PARSE_ERROR, "%s contains a NUL byte", field);
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (s == NULL) {
        dec_fail_at(r, at, RN_OUT_OF_MEMORY, "out of memory for %s", field);
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static graph *dec_graph(reader *r, graph *parent);

/* Reads a tensor into *t (owned); on error *t holds nothing. */
static void dec_tensor(reader *r, graph_tensor *t)
{
    memset(t, 0, sizeof *t);
    size_t at = r->pos;
    uint32_t type = get_u32(r, "tensor element type");
    uint32_t rank = get_u32(r, "tensor rank");
    if (r->st != RN_OK)
        return;
    if (!rn_element_type_is_valid((rn_element_type)type)) {
        dec_fail_at(r, at, RN_PARSE_ERROR, "tensor element type %" PRIu32 " is unknown", type);
        return;
    }
    if (rank > RN_MAX_RANK) {
        dec_fail_at(r, at + 4, RN_PARSE_ERROR, "tensor rank %" PRIu32 " exceeds %d", rank,
                    RN_MAX_RANK);
        return;
    }
    size_t dat = r->pos, count = 0;
    for (uint32_t i = 0; i < rank; i++)
        t->dims[i] = (int64_t)get_u64(r, "tensor dim");
    if (r->st != RN_OK)
        return;
    if (!dims_count((int)rank, t->dims, &count)) {
        dec_fail_at(r, dat, RN_PARSE_ERROR, "tensor dims are negative or overflow");
        return;
    }
    if (type == RN_STRING) {
        if (count > remaining(r) / MIN_STRING) {
            dec_fail(r, "%zu strings exceed the %zu bytes that remain", count, remaining(r));
            return;
        }
        char **strs = calloc(count ? count : 1, sizeof(char *));
        if (strs == NULL) {
            dec_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory for %zu strings", count);
            return;
        }
        for (size_t i = 0; i < count; i++) {
            if ((strs[i] = get_str(r, "tensor string")) == NULL) {
                for (size_t k = 0; k < i; k++)
                    free(strs[k]);
                free(strs);
                return;
            }
        }
        t->data = strs;
        t->nbytes = count * sizeof(char *);
    } else {
        size_t nat = r->pos;
        uint64_t nbytes = get_u64(r, "tensor byte count");
        size_t want;
        if (r->st != RN_OK)
            return;
        if (__builtin_mul_overflow(count, rn_element_type_size((rn_element_type)type), &want) ||
            nbytes != want) {
            dec_fail_at(r, nat, RN_PARSE_ERROR, "tensor of %zu %s elements holds %" PRIu64 " bytes",
                        count, rn_element_type_name((rn_element_type)type), nbytes);
            return;
        }
        const uint8_t *p = take(r, want, "tensor data");
        if (p == NULL)
            return;
        t->data = malloc(want ? want : 1);
        if (t->data == NULL) {
            dec_fail_at(r, nat, RN_OUT_OF_MEMORY, "out of memory for %zu bytes of tensor data",
                        want);
            return;
        }
        memcpy(t->data, p, want);
        t->nbytes = want;
    }
    t->type = (rn_element_type)type;
    t->rank = (int)rank;
}

/* Reads one attribute into *a; on error *a holds nothing. */
static void dec_attr(reader *r, graph *g, graph_attr *a)
{
    memset(a, 0, sizeof *a);
    a->name = get_str(r, "attribute name");
    size_t at = r->pos;
    uint32_t type = get_u32(r, "attribute type");
    if (r->st != RN_OK)
        goto fail;
    a->type = (graph_attr_type)type;
    switch (type) {
    case GRAPH_ATTR_UNDEFINED:
        break;
    case GRAPH_ATTR_FLOAT: {
        uint32_t bits = get_u32(r, "float attribute");
        memcpy(&a->f, &bits, 4);
        break;
    }
    case GRAPH_ATTR_INT:
        a->i = (int64_t)get_u64(r, "int attribute");
        break;
    case GRAPH_ATTR_STRING:
        if (get_flag(r, "string attribute presence"))
            a->s = get_str(r, "string attribute");
        break;
    case GRAPH_ATTR_TENSOR:
        if (get_flag(r, "tensor attribute presence")) {
            if ((a->t = calloc(1, sizeof *a->t)) == NULL)
                dec_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory for a tensor attribute");
            else
                dec_tensor(r, a->t);
        }
        break;
    case GRAPH_ATTR_GRAPH:
        if (get_flag(r, "graph attribute presence"))
            a->g = dec_graph(r, g);
        break;
    case GRAPH_ATTR_TYPE_PROTO: { /* u32 kind, u32 element type, i32 rank, i64 dims */
        size_t tat = r->pos;
        uint32_t kind = get_u32(r, "type kind"), elem = get_u32(r, "type element type");
        int32_t rank = (int32_t)get_u32(r, "type rank");
        if (r->st == RN_OK && (kind >= GRAPH_KIND_COUNT || !type_ok((rn_element_type)elem) ||
                               rank < -1 || rank > RN_MAX_RANK))
            dec_fail_at(r, tat, RN_PARSE_ERROR, "attribute '%s': malformed type", a->name);
        a->tp = (graph_type){(graph_kind)kind, (rn_element_type)elem, {.rank = rank}};
        for (int i = 0; i < rank && r->st == RN_OK; i++)
            a->tp.shape.dims[i] = (int64_t)get_u64(r, "type dim");
        break;
    }
    case GRAPH_ATTR_FLOATS:
    case GRAPH_ATTR_INTS:
    case GRAPH_ATTR_STRINGS:
    case GRAPH_ATTR_TENSORS:
    case GRAPH_ATTR_GRAPHS: {
        static const size_t min_entry[] = {
            [GRAPH_ATTR_FLOATS] = 4,           [GRAPH_ATTR_INTS] = 8,
            [GRAPH_ATTR_STRINGS] = MIN_STRING, [GRAPH_ATTR_TENSORS] = MIN_TENSOR,
            [GRAPH_ATTR_GRAPHS] = MIN_GRAPH,
        };
        int n = get_count(r, "attribute list length", min_entry[type]);
        if (r->st != RN_OK)
            break;
        size_t alloc = (size_t)n + 1;
        void *list = NULL;
        if (type == GRAPH_ATTR_FLOATS)
            list = a->floats = calloc(alloc, sizeof(float));
        else if (type == GRAPH_ATTR_INTS)
            list = a->ints = calloc(alloc, sizeof(int64_t));
        else if (type == GRAPH_ATTR_STRINGS)
            list = a->strings = calloc(alloc, sizeof(char *));
        else if (type == GRAPH_ATTR_TENSORS)
            list = a->tensors = calloc(alloc, sizeof(graph_tensor));
        else
            list = a->graphs = calloc(alloc, sizeof(graph *));
        if (list == NULL) {
            dec_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory for an attribute list");
            break;
        }
        /* count grows with the entries read, so a release after an error
         * frees exactly what was built. */
        for (int k = 0; k < n && r->st == RN_OK; k++) {
            if (type == GRAPH_ATTR_FLOATS) {
                uint32_t bits = get_u32(r, "float list entry");
                memcpy(&a->floats[k], &bits, 4);
            } else if (type == GRAPH_ATTR_INTS) {
                a->ints[k] = (int64_t)get_u64(r, "int list entry");
            } else if (type == GRAPH_ATTR_STRINGS) {
                a->strings[k] = get_str(r, "string list entry");
            } else if (type == GRAPH_ATTR_TENSORS) {
                dec_tensor(r, &a->tensors[k]);
            } else {
                a->graphs[k] = dec_graph(r, g);
            }
            if (r->st == RN_OK)
                a->count = k + 1;
        }
        break;
    }
    default:
        dec_fail_at(r, at, RN_PARSE_ERROR, "attribute '%s' has unknown type %" PRIu32,
                    a->name ? a->name : "", type);
    }
    if (r->st == RN_OK)
        return;
fail:
    graph_attr_release(a);
}

/* Resolves a value reference of graph g: -1 omitted (only where allowed),
 * a local id, or an outer reference. On a bad reference records an error. */
static graph_value *resolve_ref(reader *r, graph *g, graph_value *const *outer, int n_outer,
                                int32_t ref, size_t at, bool allow_omitted, const char *user)
{
    if (ref == -1 && allow_omitted)
        return NULL;
    if (ref >= 0 && ref < g->n_values)
        return g->values[ref];
    if (ref >= 0 && ref - g->n_values < n_outer)
        return outer[ref - g->n_values];
    dec_fail_at(r, at, RN_PARSE_ERROR,
                "%s refers to value %" PRId32 ", but graph '%s' has %d values and %d outer "
                "references",
                user, ref, g->name, g->n_values, n_outer);
    return NULL;
}

/* Reads a node's input or output references into a new array of count + 1
 * entries and returns the count. An output must be omitted (-1) or a value of
 * g that is neither an input nor a constant. */
static int dec_refs(reader *r, graph *g, graph_value *const *outer, int n_outer, bool outputs,
                    const char *user, graph_value ***out)
{
    const char *port = outputs ? "output" : "input";
    char field[32], who[400];
    snprintf(field, sizeof field, "node %s count", port);
    int n = get_count(r, field, 4);
    if (r->st == RN_OK && (*out = calloc((size_t)n + 1, sizeof **out)) == NULL)
        dec_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory");
    snprintf(field, sizeof field, "node %s", port);
    for (int k = 0; k < n && r->st == RN_OK; k++) {
        size_t at = r->pos;
        int32_t ref = (int32_t)get_u32(r, field);
        snprintf(who, sizeof who, "%s, %s %d,", user, port, k);
        graph_value *v =
            r->st == RN_OK ? resolve_ref(r, g, outer, n_outer, ref, at, true, who) : NULL;
        if (v != NULL && outputs && (v->is_parameter || v->constant != NULL))
            dec_fail_at(r, at, RN_PARSE_ERROR, "%s '%s' is a graph input or constant", who,
                        v->name);
        (*out)[k] = v;
    }
    return n;
}

static void dec_node(reader *r, graph *g, graph_value *const *outer, int n_outer)
{
    size_t at = r->pos;
    char *name = get_str(r, "node name");
    char *domain = get_str(r, "node domain");
    char *op_type = get_str(r, "node op type");
    int32_t opset = (int32_t)get_u32(r, "node opset");
    graph_value **ins = NULL, **outs = NULL;
    graph_node *n = NULL;
    char user[300];
    snprintf(user, sizeof user, "node '%s' (%s)", name ? name : "", op_type ? op_type : "");
    int n_in = dec_refs(r, g, outer, n_outer, false, user, &ins);
    int n_out = dec_refs(r, g, NULL, 0, true, user, &outs);
    if (r->st == RN_OK) {
        rn_status st = graph_add_node(g, name, domain, op_type, opset, n_in, ins, n_out, outs, &n);
        if (st != RN_OK)
            dec_fail_from(r, at, st);
    }
    free(name);
    free(domain);
    free(op_type);
    free(ins);
    free(outs);
    if (r->st != RN_OK)
        return; /* g owns the node once added and frees it with the graph */
    int n_attrs = get_count(r, "attribute count", MIN_ATTR);
    for (int k = 0; k < n_attrs && r->st == RN_OK; k++) {
        size_t aat = r->pos;
        graph_attr a;
        dec_attr(r, g, &a);
        if (r->st != RN_OK)
            break;
        rn_status st = graph_node_add_attr(n, &a); /* releases a on error */
        if (st != RN_OK)
            dec_fail_from(r, aat, st);
    }
    /* graph_add_node seeded fused_names with the node's name; the stream has
     * the real list. */
    for (int k = 0; k < n->n_fused; k++)
        free(n->fused_names[k]);
    n->n_fused = 0;
    int n_fused = get_count(r, "fused name count", MIN_STRING);
    for (int k = 0; k < n_fused && r->st == RN_OK; k++) {
        char *fused = get_str(r, "fused name");
        if (fused == NULL)
            break;
        rn_status st = graph_node_add_fused_name(n, fused);
        free(fused);
        if (st != RN_OK)
            dec_fail_from(r, r->pos, st);
    }
}

static void dec_value(reader *r, graph *g)
{
    size_t at = r->pos;
    char *name = get_str(r, "value name");
    size_t tat = r->pos;
    uint32_t type = get_u32(r, "value element type");
    int32_t rank = (int32_t)get_u32(r, "value rank");
    graph_value *v = NULL;
    if (r->st != RN_OK)
        goto done;
    if (!type_ok((rn_element_type)type)) {
        dec_fail_at(r, tat, RN_PARSE_ERROR, "value '%s' has unknown element type %" PRIu32, name,
                    type);
        goto done;
    }
    if (rank < -1 || rank > RN_MAX_RANK) {
        dec_fail_at(r, tat + 4, RN_PARSE_ERROR, "value '%s' has rank %" PRId32, name, rank);
        goto done;
    }
    rn_status st = graph_add_value(g, name, &v);
    if (st != RN_OK) {
        dec_fail_from(r, at, st);
        goto done;
    }
    v->type = (rn_element_type)type;
    v->shape.rank = rank;
    for (int i = 0; i < rank && r->st == RN_OK; i++) {
        size_t dat = r->pos;
        v->shape.dims[i] = (int64_t)get_u64(r, "value dim");
        if (r->st == RN_OK && v->shape.dims[i] < RN_DIM_DYNAMIC)
            dec_fail_at(r, dat, RN_PARSE_ERROR, "value '%s': dim %d is %" PRId64, name, i,
                        v->shape.dims[i]);
    }
    size_t fat = r->pos;
    uint8_t flags = get_u8(r, "value flags");
    if (r->st != RN_OK)
        goto done;
    if (flags & ~15u) {
        dec_fail_at(r, fat, RN_PARSE_ERROR, "value '%s' has unknown flags 0x%x", name, flags);
        goto done;
    }
    v->is_parameter = flags & 1;
    v->kind = (graph_kind)((flags >> 2) & 3u); /* bits 2-3: the value's kind (graph_kind) */
    if (flags & 2) {
        graph_tensor *t = calloc(1, sizeof *t);
        if (t == NULL) {
            dec_fail(r, "out of memory");
            goto done;
        }
        dec_tensor(r, t);
        if (r->st != RN_OK) {
            free(t);
            goto done;
        }
        v->constant = t; /* freed with the graph from here on */
    }
done:
    free(name);
}

/* Reads a graph whose enclosing graph is `parent` (NULL at the top). Returns
 * NULL after recording an error. */
static graph *dec_graph(reader *r, graph *parent)
{
    size_t at = r->pos;
    if (parent != NULL && r->depth >= GRAPH_SERIAL_MAX_DEPTH) {
        dec_fail(r, "subgraphs nest deeper than %d", GRAPH_SERIAL_MAX_DEPTH);
        return NULL;
    }
    r->depth += parent != NULL;
    graph *g = NULL;
    graph_value **outer = NULL;
    char *name = get_str(r, "graph name");
    if (name == NULL)
        goto done;
    rn_status st = graph_create(name, &g);
    free(name);
    if (st != RN_OK) {
        dec_fail_from(r, at, st);
        goto done;
    }
    g->parent = parent;
    g->opset = (int32_t)get_u32(r, "graph opset");
    g->ir_version = (int32_t)get_u32(r, "graph IR version");
    int n_values = get_count(r, "value count", MIN_VALUE);
    for (int i = 0; i < n_values && r->st == RN_OK; i++)
        dec_value(r, g);
    int n_outer = get_count(r, "outer reference count", MIN_STRING);
    if (r->st == RN_OK && (outer = calloc((size_t)n_outer + 1, sizeof *outer)) == NULL)
        dec_fail_at(r, r->pos, RN_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n_outer && r->st == RN_OK; i++) {
        size_t oat = r->pos;
        char *oname = get_str(r, "outer reference");
        if (oname == NULL)
            break;
        outer[i] = parent != NULL ? graph_find_value(parent, oname, true) : NULL;
        if (outer[i] == NULL)
            dec_fail_at(r, oat, RN_PARSE_ERROR,
                        "graph '%s' reads '%s' from an enclosing graph, which defines no such "
                        "value",
                        g->name, oname);
        free(oname);
    }
    int n_nodes = get_count(r, "node count", MIN_NODE);
    for (int i = 0; i < n_nodes && r->st == RN_OK; i++)
        dec_node(r, g, outer, n_outer);
    int n_inputs = get_count(r, "graph input count", 4);
    for (int i = 0; i < n_inputs && r->st == RN_OK; i++) {
        size_t iat = r->pos;
        int32_t id = (int32_t)get_u32(r, "graph input");
        char user[300];
        snprintf(user, sizeof user, "graph '%s': input %d", g->name, i);
        graph_value *v = r->st == RN_OK ? resolve_ref(r, g, NULL, 0, id, iat, false, user) : NULL;
        if (v == NULL)
            break;
        bool was_parameter = v->is_parameter; /* keep the encoded flag as it was */
        if ((st = graph_add_input(g, v)) != RN_OK)
            dec_fail_from(r, iat, st);
        v->is_parameter = was_parameter;
    }
    int n_outputs = get_count(r, "graph output count", 4);
    for (int i = 0; i < n_outputs && r->st == RN_OK; i++) {
        size_t oat = r->pos;
        int32_t ref = (int32_t)get_u32(r, "graph output");
        if (r->st != RN_OK)
            break;
        char user[300];
        snprintf(user, sizeof user, "graph '%s': output %d", g->name, i);
        graph_value *v = resolve_ref(r, g, outer, n_outer, ref, oat, false, user);
        if (v != NULL && (st = graph_add_output(g, v)) != RN_OK)
            dec_fail_from(r, oat, st);
    }
    if (r->st == RN_OK && (st = graph_sort(g)) != RN_OK)
        dec_fail_from(r, at, st);
done:
    free(outer);
    r->depth -= parent != NULL;
    if (r->st != RN_OK) {
        graph_free(g);
        return NULL;
    }
    return g;
}

/* Decodes a payload (tag, version, graph) that must fill all of r. */
static graph *dec_payload(reader *r)
{
    const uint8_t *tag = take(r, 4, "encoding tag");
    if (tag != NULL && memcmp(tag, GRAPH_SERIAL_TAG, 4) != 0)
        dec_fail_at(r, 0, RN_PARSE_ERROR, "not a serialized runnel graph (bad tag)");
    uint32_t version = get_u32(r, "encoding version");
    if (r->st == RN_OK && version != GRAPH_SERIAL_VERSION)
        dec_fail_at(r, r->pos - 4, RN_UNSUPPORTED,
                    "graph encoding version %" PRIu32 ", this build reads %u", version,
                    GRAPH_SERIAL_VERSION);
    graph *g = r->st == RN_OK ? dec_graph(r, NULL) : NULL;
    if (g != NULL && remaining(r) != 0)
        dec_fail(r, "%zu bytes follow the graph", remaining(r));
    if (r->st == RN_OK) {
        rn_status st = graph_validate(g);
        if (st != RN_OK)
            r->st = rn_wrap_error(st, "%s: ", r->what);
    }
    if (r->st != RN_OK) {
        graph_free(g);
        return NULL;
    }
    return g;
}

rn_status graph_deserialize(const void *data, size_t size, graph **out)
{
    if (data == NULL && size > 0)
        return rn_set_error(RN_INVALID_ARG, "serialized graph: NULL data");
    static const uint8_t empty[1];
    reader r = {.data = size > 0 ? data : empty, .size = size, .what = "serialized graph"};
    graph *g = dec_payload(&r);
    if (g == NULL)
        return r.st;
    *out = g;
    return RN_OK;
}

/* ---- the export container ---- */

static void enc_blob_header(sink *s, const graph_blob_header *h, uint64_t payload_size)
{
    put(s, GRAPH_BLOB_MAGIC, 8);
    put_u32(s, GRAPH_BLOB_FORMAT_VERSION);
    put_str(s, h->device);
    put_str(s, h->arch);
    put_u32(s, (uint32_t)h->n_props);
    for (size_t i = 0; i < h->n_props; i++) {
        put_str(s, h->keys[i]);
        put_str(s, h->values[i]);
    }
    put_u64(s, payload_size);
}

rn_status graph_blob_write(const graph_blob_header *hdr, const graph *g, graph_buffer *out)
{
    bool ok = hdr->device != NULL && hdr->arch != NULL && hdr->n_props <= UINT32_MAX &&
              (hdr->n_props == 0 || (hdr->keys != NULL && hdr->values != NULL));
    for (size_t i = 0; ok && i < hdr->n_props; i++)
        ok = hdr->keys[i] != NULL && hdr->values[i] != NULL;
    if (!ok)
        return rn_set_error(RN_INVALID_ARG, "export blob: the header needs a device, an "
                                            "architecture and a key and value per property");
    sink count = {0};
    enc_payload(&count, g);
    if (count.st != RN_OK)
        return count.st;
    size_t payload = count.size;
    enc_blob_header(&count, hdr, payload); /* count.size: payload + header */
    size_t total = count.size + 8;
    sink w = {.data = malloc(total), .cap = total};
    if (w.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "export blob: out of memory for %zu bytes", total);
    enc_blob_header(&w, hdr, payload);
    enc_payload(&w, g);
    if (w.st == RN_OK && w.size != total - 8)
        w.st = rn_set_error(RN_INTERNAL, "export blob: the write pass disagrees with the count");
    if (w.st != RN_OK) {
        free(w.data);
        return w.st;
    }
    put_u64(&w, graph_hash_bytes(w.data, w.size, 0));
    out->data = w.data;
    out->size = w.size;
    return RN_OK;
}

void graph_blob_header_release(graph_blob_header *h)
{
    if (h == NULL)
        return;
    free((char *)h->device);
    free((char *)h->arch);
    for (size_t i = 0; i < h->n_props; i++) {
        free((char *)h->keys[i]);
        free((char *)h->values[i]);
    }
    free((void *)h->keys);
    free((void *)h->values);
    memset(h, 0, sizeof *h);
}

rn_status graph_blob_read(const void *data, size_t size, const graph_blob_expect *expect,
                          graph_blob_header *hdr_out, graph **g_out)
{
    static const graph_blob_expect any = {0};
    if (expect == NULL)
        expect = &any;
    if (data == NULL && size > 0)
        return rn_set_error(RN_INVALID_ARG, "export blob: NULL data");
    const uint8_t *bytes = data;
    size_t head = size < 8 ? size : 8;
    if (head > 0 && memcmp(bytes, GRAPH_BLOB_MAGIC, head) != 0)
        return rn_set_error(RN_PARSE_ERROR,
                            "export blob: not a runnel export blob (the magic is not \"%s\")",
                            GRAPH_BLOB_MAGIC);
    if (size < 12 + 8)
        return rn_set_error(RN_PARSE_ERROR,
                            "export blob: truncated: %zu bytes, the magic, "
                            "format version and checksum alone take 20",
                            size);
    uint32_t version = load32(bytes + 8);
    if (version != GRAPH_BLOB_FORMAT_VERSION)
        return rn_set_error(RN_UNSUPPORTED,
                            "export blob: format version %" PRIu32 ", this build reads %u", version,
                            GRAPH_BLOB_FORMAT_VERSION);
    size_t body = size - 8;
    if (!expect->skip_checksum) {
        uint64_t stored = load64(bytes + body);
        uint64_t computed = graph_hash_bytes(bytes, body, 0);
        if (stored != computed)
            return rn_set_error(RN_PARSE_ERROR,
                                "export blob: checksum mismatch (stored %016" PRIx64
                                ", computed %016" PRIx64 "): the blob is corrupted or truncated",
                                stored, computed);
    }
    reader r = {.data = bytes, .size = body, .pos = 12, .what = "export blob"};
    graph_blob_header h = {.format_version = version};
    graph *g = NULL;
    h.device = get_str(&r, "device name");
    if (r.st == RN_OK && expect->device != NULL && strcmp(h.device, expect->device) != 0) {
        r.st = rn_set_error(RN_UNSUPPORTED, "export blob: blob is for device %s, not %s", h.device,
                            expect->device);
        goto fail;
    }
    h.arch = get_str(&r, "device architecture");
    if (r.st == RN_OK && expect->arch != NULL && strcmp(h.arch, expect->arch) != 0) {
        r.st = rn_set_error(RN_UNSUPPORTED,
                            "export blob: blob is for device architecture '%s', not '%s'", h.arch,
                            expect->arch);
        goto fail;
    }
    int n_props = get_count(&r, "property count", MIN_PROP);
    const char **keys = NULL, **values = NULL;
    if (r.st == RN_OK) {
        h.keys = keys = calloc((size_t)n_props + 1, sizeof(char *));
        h.values = values = calloc((size_t)n_props + 1, sizeof(char *));
        if (keys == NULL || values == NULL)
            dec_fail_at(&r, r.pos, RN_OUT_OF_MEMORY, "out of memory for %d properties", n_props);
    }
    for (int i = 0; i < n_props && r.st == RN_OK; i++) {
        h.n_props = (size_t)i + 1; /* what the release frees */
        keys[i] = get_str(&r, "property key");
        values[i] = get_str(&r, "property value");
    }
    size_t pat = r.pos;
    uint64_t payload = get_u64(&r, "payload size");
    if (r.st != RN_OK)
        goto fail;
    if (payload != remaining(&r)) {
        dec_fail_at(&r, pat, RN_PARSE_ERROR, "payload size %" PRIu64 ", but %zu bytes %s", payload,
                    remaining(&r), payload > remaining(&r) ? "remain (truncated)" : "follow");
        goto fail;
    }
    if (g_out != NULL) {
        reader pr = {.data = bytes + r.pos,
                     .size = remaining(&r),
                     .base = r.pos,
                     .what = "export blob payload"};
        if ((g = dec_payload(&pr)) == NULL) {
            r.st = pr.st;
            goto fail;
        }
    }
    if (hdr_out != NULL)
        *hdr_out = h;
    else
        graph_blob_header_release(&h);
    if (g_out != NULL)
        *g_out = g;
    return RN_OK;
fail:
    graph_blob_header_release(&h);
    return r.st;
}

/* ---- cache keys ---- */

typedef struct prop_ref {
    const char *key, *value;
} prop_ref;

static int cmp_props(const void *a, const void *b)
{
    const prop_ref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c != 0 ? c : strcmp(x->value, y->value);
}

rn_status graph_hash(const graph *g, size_t n_props, const char *const *keys,
                     const char *const *values, const char *device, const char *arch, uint64_t *out)
{
    if (n_props > 0 && (keys == NULL || values == NULL))
        return rn_set_error(RN_INVALID_ARG, "graph hash: %zu properties without keys or values",
                            n_props);
    prop_ref *props = calloc(n_props + 1, sizeof *props);
    if (props == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "graph hash: out of memory");
    for (size_t i = 0; i < n_props; i++) {
        if (keys[i] == NULL || values[i] == NULL) {
            free(props);
            return rn_set_error(RN_INVALID_ARG, "graph hash: property %zu has no key or value", i);
        }
        props[i] = (prop_ref){keys[i], values[i]};
    }
    qsort(props, n_props, sizeof *props, cmp_props);
    xxh64_state h;
    xxh64_init(&h, 0);
    sink s = {.hash = &h};
    put(&s, "RNNLHASH", 8);
    put_str(&s, device);
    put_str(&s, arch);
    put_u64(&s, n_props);
    for (size_t i = 0; i < n_props; i++) {
        put_str(&s, props[i].key);
        put_str(&s, props[i].value);
    }
    free(props);
    enc_payload(&s, g);
    if (s.st != RN_OK)
        return s.st;
    *out = xxh64_digest(&h);
    return RN_OK;
}

/* ---- cache files ---- */

rn_status graph_cache_path(const char *dir, uint64_t key, char *buf, size_t size)
{
    if (dir == NULL || dir[0] == '\0')
        return rn_set_error(RN_INVALID_ARG, "cache: no cache folder given");
    int n = snprintf(buf, size, "%s/%016" PRIx64 ".rnblob", dir, key);
    if (n < 0 || (size_t)n >= size)
        return rn_set_error(RN_INVALID_ARG, "cache: the path of an entry in '%s' is too long", dir);
    return RN_OK;
}

/* mkdir -p: creates dir and its missing parents. */
static rn_status make_dirs(const char *dir)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s", dir);
    if (n < 0 || (size_t)n >= sizeof path)
        return rn_set_error(RN_INVALID_ARG, "cache: folder path '%s' is too long", dir);
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return rn_set_error(RN_IO_ERROR, "cache: cannot create folder '%s': %s", path,
                                strerror(errno));
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rn_set_error(RN_IO_ERROR, "cache: '%s' is not a folder", dir);
    return RN_OK;
}

rn_status graph_cache_store(const char *dir, uint64_t key, const void *bytes, size_t size)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    rn_status st = graph_cache_path(dir, key, path, sizeof path);
    if (st != RN_OK)
        return st;
    /* A hidden name that graph_cache_path never produces: a reader can never
     * open a half-written temporary file as an entry. */
    int n = snprintf(tmp, sizeof tmp, "%s/.%016" PRIx64 ".rnblob.XXXXXX", dir, key);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return rn_set_error(RN_INVALID_ARG, "cache: the path of an entry in '%s' is too long", dir);
    if ((st = make_dirs(dir)) != RN_OK)
        return st;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return rn_set_error(RN_IO_ERROR, "cache: cannot create a temporary file in '%s': %s", dir,
                            strerror(errno));
    const char *what = "write";
    const uint8_t *p = bytes;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, p + done, size - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            goto fail;
        }
        done += (size_t)w;
    }
    what = "sync";
    if (fsync(fd) != 0)
        goto fail;
    what = "close";
    int rc = close(fd);
    fd = -1;
    if (rc != 0)
        goto fail;
    what = "rename";
    if (rename(tmp, path) != 0)
        goto fail;
    /* Make the rename itself durable; a failure here loses at most the entry. */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return RN_OK;
fail:;
    int err = errno ? errno : EIO;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return rn_set_error(RN_IO_ERROR, "cache: cannot %s '%s' (for entry '%s'): %s", what, tmp, path,
                        strerror(err));
}

rn_status graph_cache_load(const char *dir, uint64_t key, void **bytes, size_t *size)
{
    char path[PATH_MAX];
    rn_status st = graph_cache_path(dir, key, path, sizeof path);
    if (st != RN_OK)
        return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return rn_set_error(RN_NOT_FOUND, "cache: no entry '%s'", path);
        return rn_set_error(RN_IO_ERROR, "cache: cannot open '%s': %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return rn_set_error(RN_IO_ERROR, "cache: '%s' is not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *data = malloc(n ? n : 1);
    if (data == NULL) {
        close(fd);
        return rn_set_error(RN_OUT_OF_MEMORY, "cache: out of memory for %zu bytes of '%s'", n,
                            path);
    }
    size_t done = 0;
    while (done < n) {
        ssize_t got = read(fd, data + done, n - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            int err = got < 0 ? errno : 0;
            close(fd);
            free(data);
            return rn_set_error(RN_IO_ERROR, "cache: cannot read '%s': %s", path,
                                err ? strerror(err) : "file shrank while reading");
        }
        done += (size_t)got;
    }
    close(fd);
    *bytes = data;
    *size = n;
    return RN_OK;
}
