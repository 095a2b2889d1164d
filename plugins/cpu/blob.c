/* The CPU device's export blobs: the generic blob (plugins/api/export.h)
 * whose graph also holds the weights as the primitives chose them (each
 * constant the plan converted into a oneDNN layout, as a u8 constant of
 * its own that no node reads), with one more header entry, CPU_BLOB, that
 * says what they are: the oneDNN version and descriptor size, the ISA the
 * primitives were created for, and per stored weight the value holding its
 * bytes, the XXH64 of the plain weight it was converted from and the two
 * oneDNN memory descriptors (plain → converted; plain C structs in oneDNN
 * 2.6, written as hexadecimal). An import then copies the stored bytes
 * where it would have reordered (layout_convert asks cpu_blob_restore
 * first), so no weight conversion runs.
 *
 * Import refuses (RN_UNSUPPORTED, naming both ISAs) a blob created for an
 * ISA this CPU lacks; ignores the stored weights of another oneDNN version
 * or descriptor size (they are converted from the graph's weights, as a
 * compile does, and a LOG_LEVEL info line says so); and refuses
 * (RN_PARSE_ERROR naming the entry) a CPU_BLOB entry that does not parse or
 * does not match its stored bytes: the blob is sealed by its checksum, so
 * that is not a blob of this device. docs/export.md, docs/cpu.md. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize.h"
#include "plugins/api/export.h"
#include "plugins/api/log.h"
#include "plugins/cpu/blob.h"

#define ENTRY_KEY   "CPU_BLOB"
#define VALUE_NAME  "runnel.cpu_blob.weights."
#define MD_HEX_SIZE (2 * sizeof(cpu_md))

static _Atomic uint64_t n_restored, n_reordered;

void cpu_blob_counters(uint64_t *restored, uint64_t *reordered)
{
    *restored = atomic_load(&n_restored);
    *reordered = atomic_load(&n_reordered);
}

void cpu_blob_count_reorder(void)
{
    atomic_fetch_add(&n_reordered, 1);
}

/* ---- text pieces ---- */

/* A growing string; NULL data after an allocation failed. */
typedef struct text {
    char *data;
    size_t len, cap;
    bool failed;
} text;

static void text_add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(text *t, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !t->failed; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data != NULL ? t->data + t->len : NULL,
                          t->data != NULL ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if (t->data != NULL && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *d = realloc(t->data, cap);
        if (d == NULL) {
            t->failed = true;
            return;
        }
        t->data = d;
        t->cap = cap;
    }
}

static void hex_add(text *t, const void *bytes, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++)
        text_add(t, "%c%c", digits[b[i] >> 4], digits[b[i] & 15]);
}

static int nibble(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool hex_read(const char *s, size_t len, void *out, size_t n)
{
    if (len != 2 * n)
        return false;
    unsigned char *b = out;
    for (size_t i = 0; i < n; i++) {
        int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        b[i] = (unsigned char)(hi << 4 | lo);
    }
    return true;
}

static const char *version_string(char *buf, size_t size)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, size, "%d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

/* ---- export ---- */

typedef struct export_ctx {
    graph *g;
    text header;
    int n;
    graph_value **borrowed; /* values whose constant data is the plan's */
    int n_borrowed, cap_borrowed;
} export_ctx;

static rn_status add_weight(void *arg, const graph_tensor *plain, const graph_tensor *converted)
{
    export_ctx *x = arg;
    if (converted->layout == NULL || converted->layout->ops != &cpu_layout_ops ||
        plain->layout != NULL)
        return RN_OK;
    cpu_md smd, dmd;
    rn_status st = cpu_convert_mds(plain, converted, &smd, &dmd);
    if (st != RN_OK)
        return st;
    size_t src_bytes = cpu_md_get_size(&smd), bytes = cpu_md_get_size(&dmd);
    if (bytes == 0 || bytes > converted->nbytes || src_bytes > plain->nbytes)
        return RN_OK; /* not one layout_convert made */
    if (dmd.format_kind != dnnl_blocked)
        return RN_OK; /* a kernel's own layout (Winograd's): the import converts it again */
    if (x->n_borrowed == x->cap_borrowed) {
        int cap = x->cap_borrowed * 2 + 16;
        graph_value **b = realloc(x->borrowed, sizeof *b * (size_t)cap);
        if (b == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory");
        x->borrowed = b;
        x->cap_borrowed = cap;
    }
    char name[64];
    int k = 0;
    do
        snprintf(name, sizeof name, VALUE_NAME "%d%.*s", x->n, k, "________________");
    while (graph_find_value(x->g, name, false) != NULL && ++k < 16);
    graph_value *v = NULL;
    graph_tensor *t = calloc(1, sizeof *t);
    if (t == NULL || (st = graph_add_value(x->g, name, &v)) != RN_OK) {
        free(t);
        return t == NULL ? rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory") : st;
    }
    /* The plan's bytes, borrowed until the blob is written. */
    *t = (graph_tensor){.type = RN_U8,
                        .rank = 1,
                        .dims = {(int64_t)bytes},
                        .strides = {1},
                        .data = converted->data,
                        .nbytes = bytes};
    v->constant = t;
    v->type = RN_U8;
    v->shape.rank = 1;
    v->shape.dims[0] = (int64_t)bytes;
    x->borrowed[x->n_borrowed++] = v;
    text_add(&x->header, "%s %016" PRIx64 " %zu ", name,
             graph_hash_bytes(plain->data, src_bytes, 0), bytes);
    cpu_md stored[2] = {cpu_md_stored(&smd), cpu_md_stored(&dmd)};
    hex_add(&x->header, &stored[0], sizeof stored[0]);
    text_add(&x->header, " ");
    hex_add(&x->header, &stored[1], sizeof stored[1]);
    text_add(&x->header, "\n");
    x->n++;
    return x->header.failed ? rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory") : RN_OK;
}

rn_status cpu_export_blob(plugin_compiled *c, const plugin_properties *props, void **data,
                          size_t *size)
{
    const plugin_plan *plan = c->plan;
    export_ctx x = {0};
    rn_status st = graph_clone(plugin_plan_graph(plan), &x.g);
    if (st != RN_OK)
        return rn_wrap_error(st, "export: ");
    st = plugin_plan_converted_constants(plan, add_weight, &x);
    text entry = {0};
    if (st == RN_OK) {
        char v[32];
        dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        text_add(&entry, "onednn %s %zu\nisa %s %x\nentries %d\n", version_string(v, sizeof v),
                 sizeof(cpu_md), cpu_isa_name(), (unsigned)isa, x.n);
        text_add(&entry, "%s", x.header.data != NULL ? x.header.data : "");
        if (entry.failed)
            st = rn_set_error(RN_OUT_OF_MEMORY, "export: out of memory");
    }
    if (st == RN_OK)
        st = plugin_export_graph(x.g, c->device->iface->info.name, c->device->architecture, props,
                                 ENTRY_KEY, entry.data, data, size);
    for (int i = 0; i < x.n_borrowed; i++)
        x.borrowed[i]->constant->data = NULL; /* the plan's */
    graph_free(x.g);
    free(x.borrowed);
    free(x.header.data);
    free(entry.data);
    return st;
}

/* ---- import ---- */

typedef struct stored_weight {
    uint64_t hash;
    size_t bytes;
    cpu_md smd, dmd;
    void *data; /* taken from the graph's constant */
    bool used;
} stored_weight;

typedef struct cpu_blob_store {
    int n;
    stored_weight *w;
} cpu_blob_store;

/* The store of the import being built in this thread (cpu_import_blob →
 * cpu_import_done). */
static _Thread_local cpu_blob_store *tls_store;

bool cpu_blob_restore(const rn_kernel_tensor *src, const cpu_md *smd, const cpu_md *dmd,
                      rn_kernel_tensor *dst)
{
    cpu_blob_store *s = tls_store;
    if (s == NULL || src->layout != NULL || src->data == NULL)
        return false;
    bool hashed = false;
    uint64_t h = 0;
    for (int i = 0; i < s->n; i++) {
        stored_weight *w = &s->w[i];
        if (w->used || !cpu_md_equal_stored(&w->dmd, dmd) || !cpu_md_equal_stored(&w->smd, smd) ||
            w->bytes > dst->nbytes || w->bytes != cpu_md_get_size(dmd))
            continue;
        if (!hashed) {
            h = graph_hash_bytes(src->data, cpu_md_get_size(smd), 0);
            hashed = true;
        }
        if (w->hash != h)
            continue;
        memcpy(dst->data, w->data, w->bytes);
        w->used = true;
        atomic_fetch_add(&n_restored, 1);
        return true;
    }
    return false;
}

static void store_free(cpu_blob_store *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->n; i++)
        free(s->w[i].data);
    free(s->w);
    free(s);
}

void cpu_import_done(void *pending)
{
    if (tls_store == pending)
        tls_store = NULL;
    store_free(pending);
}

/* The next line of *p (without its newline) in *line, *len; false at the
 * end. */
static bool next_line(const char **p, const char **line, size_t *len)
{
    if (**p == '\0')
        return false;
    const char *e = strchr(*p, '\n');
    *line = *p;
    *len = e != NULL ? (size_t)(e - *p) : strlen(*p);
    *p = e != NULL ? e + 1 : *p + *len;
    return true;
}

/* What oneDNN may be asked about: a stored descriptor is read from bytes. */
static bool md_sane(const cpu_md *md)
{
    if (md->ndims < 1 || md->ndims > DNNL_MAX_NDIMS || md->format_kind != dnnl_blocked ||
        !cpu_md_portable(md))
        return false;
    for (int d = 0; d < md->ndims; d++)
        if (md->dims[d] <= 0 || md->padded_dims[d] < md->dims[d] ||
            md->padded_dims[d] > ((int64_t)1 << 40) || md->padded_offsets[d] < 0 ||
            md->format_desc.blocking.strides[d] < 0 ||
            md->format_desc.blocking.strides[d] > ((int64_t)1 << 40))
            return false;
    const cpu_blocking *b = &md->format_desc.blocking;
    if (b->inner_nblks < 0 || b->inner_nblks > DNNL_MAX_NDIMS)
        return false;
    for (int i = 0; i < b->inner_nblks; i++)
        if (b->inner_idxs[i] < 0 || b->inner_idxs[i] >= md->ndims || b->inner_blks[i] <= 0 ||
            b->inner_blks[i] > 4096)
            return false;
    return true;
}

/* One entry line: "name hash bytes smd-hex dmd-hex". */
static rn_status read_weight(graph *g, const char *line, size_t len, int i, stored_weight *w)
{
    char name[128] = "";
    int off = 0;
    char *copy = strndup(line, len);
    if (copy == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "import: out of memory");
    const char *why = NULL;
    if (sscanf(copy, "%127s %" SCNx64 " %zu %n", name, &w->hash, &w->bytes, &off) != 3 || off <= 0)
        why = "not 'name hash bytes descriptors'";
    const char *smd = copy + off, *sp = why == NULL ? strchr(smd, ' ') : NULL;
    if (why == NULL && (sp == NULL || !hex_read(smd, (size_t)(sp - smd), &w->smd, sizeof w->smd) ||
                        !hex_read(sp + 1, strlen(sp + 1), &w->dmd, sizeof w->dmd)))
        why = "the memory descriptors are not hexadecimal descriptors of this oneDNN";
    else if (why == NULL && (!md_sane(&w->smd) || !md_sane(&w->dmd)))
        why = "a memory descriptor is not a blocked descriptor of 1 to 12 dims";
    graph_value *v = why == NULL ? graph_find_value(g, name, false) : NULL;
    if (why == NULL && (v == NULL || v->constant == NULL || v->constant->type != RN_U8 ||
                        v->constant->rank != 1 || v->constant->data == NULL))
        why = "its weights are not a u8 constant of the graph";
    else if (why == NULL && ((size_t)v->constant->dims[0] != w->bytes ||
                             !cpu_md_stored_size_ok(&w->dmd, w->bytes)))
        why = "its stored bytes are not the size of its descriptor (truncated or corrupted)";
    rn_status st = RN_OK;
    if (why != NULL) {
        st = rn_set_error(RN_PARSE_ERROR, "import: %s weight %d ('%s'): %s", ENTRY_KEY, i, name,
                          why);
    } else {
        w->data = v->constant->data; /* taken: the value is pruned */
        v->constant->data = NULL;
        v->constant->nbytes = 0;
    }
    free(copy);
    return st;
}

/* Parses the entry into a store (NULL: its weights are ignored, another
 * oneDNN); the stored weights' values leave the graph either way. */
static rn_status read_entry(graph *g, const char *entry, int log_level, cpu_blob_store **out)
{
    *out = NULL;
    const char *p = entry, *line;
    size_t len;
    char version[32], isa_name[64], mine[32];
    size_t md_size = 0;
    unsigned isa = 0;
    int n = -1;
    char head[3][160] = {{0}};
    for (int i = 0; i < 3; i++) {
        if (!next_line(&p, &line, &len))
            return rn_set_error(RN_PARSE_ERROR, "import: the %s header entry is truncated",
                                ENTRY_KEY);
        snprintf(head[i], sizeof head[i], "%.*s", (int)len, line);
    }
    if (sscanf(head[0], "onednn %31s %zu", version, &md_size) != 2 ||
        sscanf(head[1], "isa %63s %x", isa_name, &isa) != 2 ||
        sscanf(head[2], "entries %d", &n) != 1 || n < 0 || n > (1 << 24))
        return rn_set_error(RN_PARSE_ERROR,
                            "import: the %s header entry does not start with the oneDNN "
                            "version, the ISA and the entry count",
                            ENTRY_KEY);
    /* The ISA the primitives were created for: this CPU must have all of
     * it (oneDNN's ISA values include the bits of those they extend). */
    unsigned here = (unsigned)dnnl_get_effective_cpu_isa();
    if ((isa & here) != isa)
        return rn_set_error(RN_UNSUPPORTED,
                            "import: the blob was compiled for the ISA %s, which this CPU does "
                            "not have (oneDNN runs %s here): compile the model on this machine",
                            isa_name, cpu_isa_name());
    bool same =
        strcmp(version, version_string(mine, sizeof mine)) == 0 && md_size == sizeof(cpu_md);
    cpu_blob_store *s = calloc(1, sizeof *s);
    if (s == NULL || (n > 0 && (s->w = calloc((size_t)n, sizeof *s->w)) == NULL)) {
        free(s);
        return rn_set_error(RN_OUT_OF_MEMORY, "import: out of memory");
    }
    rn_status st = RN_OK;
    for (int i = 0; i < n && st == RN_OK; i++) {
        if (!next_line(&p, &line, &len)) {
            st = rn_set_error(RN_PARSE_ERROR, "import: the %s header entry lists %d of %d weights",
                              ENTRY_KEY, i, n);
            break;
        }
        if (!same)
            continue; /* the values holding the bytes are pruned below */
        st = read_weight(g, line, len, i, &s->w[i]);
        if (st == RN_OK)
            s->n = i + 1;
    }
    if (st == RN_OK)
        graph_prune(g); /* the stored weights' values: nothing reads them */
    if (st != RN_OK || !same) {
        if (st == RN_OK)
            plugin_log(log_level, PLUGIN_LOG_INFO, "CPU",
                       "import: the blob's weights are for oneDNN %s (descriptor %zu bytes), this "
                       "is %s (%zu): converting them from the graph's weights",
                       version, md_size, mine, sizeof(cpu_md));
        store_free(s);
        return st;
    }
    *out = s;
    return RN_OK;
}

rn_status cpu_import_blob(plugin_compiled *c, const void *data, size_t size,
                          const rn_property *overrides, size_t n_overrides, graph **g,
                          void **pending)
{
    plugin_properties *props = &c->props;
    *pending = NULL;
    char *entry = NULL;
    rn_status st =
        plugin_import_extra(data, size, c->device->iface->info.name, c->device->architecture,
                            overrides, n_overrides, props, g, ENTRY_KEY, &entry);
    if (st != RN_OK || entry == NULL)
        return st; /* a generic blob: converted from the graph's weights */
    cpu_blob_store *s = NULL;
    st = read_entry(*g, entry, props->log_level, &s);
    free(entry);
    if (st != RN_OK) {
        graph_free(*g);
        *g = NULL;
        return st;
    }
    tls_store = s;
    *pending = s;
    return RN_OK;
}
