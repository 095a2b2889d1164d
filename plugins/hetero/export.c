/* Export and import of a HETERO compiled model: the split (devices, each
 * part's sources, the model's outputs), the model's graph for its inputs and
 * outputs, and each part's own blob from its device. Layout (little-endian):
 *
 *   "RNHETERO" u32 version
 *   u32 n_devices, each: str name          (str: u32 length + bytes)
 *   bytes model graph (graph_serialize)    (bytes: u64 length + bytes)
 *   u32 n_forward, each: str key, str value
 *   u32 n_parts, each: i32 device, u32 n_inputs, (i32 part, i32 index)*, bytes blob
 *   u32 n_outputs, (i32 part, i32 index)*
 *   u64 FNV-1a of everything before it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize.h"
#include "plugins/hetero/hetero.h"

#define HETERO_MAGIC   "RNHETERO"
#define HETERO_VERSION 1u

typedef struct writer {
    uint8_t *data;
    size_t size, cap;
    bool failed;
} writer;

static void put(writer *w, const void *bytes, size_t n)
{
    if (w->failed)
        return;
    if (w->size + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->size + n)
            cap *= 2;
        uint8_t *d = realloc(w->data, cap);
        if (d == NULL) {
            w->failed = true;
            return;
        }
        w->data = d;
        w->cap = cap;
    }
    memcpy(w->data + w->size, bytes, n);
    w->size += n;
}

static void put_u32(writer *w, uint32_t v)
{
    put(w, &v, sizeof v);
}

static void put_u64(writer *w, uint64_t v)
{
    put(w, &v, sizeof v);
}

static void put_str(writer *w, const char *s)
{
    put_u32(w, (uint32_t)strlen(s));
    put(w, s, strlen(s));
}

static void put_bytes(writer *w, const void *bytes, size_t n)
{
    put_u64(w, n);
    put(w, bytes, n);
}

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

rn_status hetero_export(hetero_compiled *c, void **data, size_t *size)
{
    writer w = {0};
    put(&w, HETERO_MAGIC, 8);
    put_u32(&w, HETERO_VERSION);
    put_u32(&w, (uint32_t)c->devs.n);
    for (int d = 0; d < c->devs.n; d++)
        put_str(&w, c->devs.at[d].name);
    graph_buffer model = {0};
    rn_status st = graph_serialize(c->io, &model);
    if (st != RN_OK) {
        free(w.data);
        return st;
    }
    put_bytes(&w, model.data, model.size);
    graph_buffer_release(&model);
    put_u32(&w, (uint32_t)c->s.n_forward);
    for (size_t i = 0; i < c->s.n_forward; i++) {
        put_str(&w, c->s.forward[i].key);
        put_str(&w, c->s.forward[i].value);
    }
    put_u32(&w, (uint32_t)c->split.n_parts);
    for (int p = 0; p < c->split.n_parts && st == RN_OK; p++) {
        const hetero_part *part = &c->split.parts[p];
        if (part->ops->export_model == NULL) {
            st = rn_set_error(RN_NOT_IMPLEMENTED, "HETERO: %s cannot export its part",
                              c->devs.at[part->device].name);
            break;
        }
        put_u32(&w, (uint32_t)part->device);
        put_u32(&w, (uint32_t)part->n_inputs);
        for (int k = 0; k < part->n_inputs; k++) {
            put_u32(&w, (uint32_t)part->inputs[k].part);
            put_u32(&w, (uint32_t)part->inputs[k].index);
        }
        void *blob;
        size_t blob_size;
        if ((st = part->ops->export_model(part->compiled, &blob, &blob_size)) != RN_OK) {
            rn_wrap_error(st, "HETERO: exporting part %d: ", p);
            break;
        }
        put_bytes(&w, blob, blob_size);
        free(blob);
    }
    put_u32(&w, (uint32_t)c->split.n_outputs);
    for (int o = 0; o < c->split.n_outputs; o++) {
        put_u32(&w, (uint32_t)c->split.outputs[o].part);
        put_u32(&w, (uint32_t)c->split.outputs[o].index);
    }
    if (!w.failed)
        put_u64(&w, fnv1a(w.data, w.size));
    if (st == RN_OK && w.failed)
        st = rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory exporting");
    if (st != RN_OK) {
        free(w.data);
        return st;
    }
    *data = w.data;
    *size = w.size;
    return RN_OK;
}

typedef struct reader {
    const uint8_t *p;
    size_t left, size;
    const char *failed; /* the field that did not fit */
} reader;

static bool get(reader *r, void *out, size_t n, const char *what)
{
    if (r->failed != NULL)
        return false;
    if (n > r->left) {
        r->failed = what;
        return false;
    }
    memcpy(out, r->p, n);
    r->p += n;
    r->left -= n;
    return true;
}

static uint32_t get_u32(reader *r, const char *what)
{
    uint32_t v = 0;
    get(r, &v, sizeof v, what);
    return v;
}

static int32_t get_i32(reader *r, const char *what)
{
    return (int32_t)get_u32(r, what);
}

/* A string into buf (NUL-terminated), refused when longer than cap-1. */
static void get_str(reader *r, char *buf, size_t cap, const char *what)
{
    uint32_t n = get_u32(r, what);
    if (r->failed == NULL && n >= cap)
        r->failed = what;
    if (get(r, buf, r->failed == NULL ? n : 0, what))
        buf[n] = '\0';
}

/* The bytes of a "bytes" field, in place. */
static const uint8_t *get_bytes(reader *r, size_t *n, const char *what)
{
    uint64_t len = 0;
    get(r, &len, sizeof len, what);
    if (r->failed != NULL)
        return NULL;
    if (len > r->left) {
        r->failed = what;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += len;
    r->left -= len;
    *n = (size_t)len;
    return at;
}

/* Checks the container and the split's indices. */
static rn_status read_split(hetero_plugin *plugin, reader *r, hetero_compiled *c)
{
    char magic[8];
    if (!get(r, magic, 8, "magic") || memcmp(magic, HETERO_MAGIC, 8) != 0)
        return rn_set_error(RN_INVALID_ARG, "HETERO import: not a HETERO blob (bad magic)");
    uint32_t version = get_u32(r, "version");
    if (r->failed == NULL && version != HETERO_VERSION)
        return rn_set_error(RN_INVALID_ARG,
                            "HETERO import: format version %u, this runtime reads %u", version,
                            HETERO_VERSION);
    uint64_t stored = 0;
    if (r->size < 8 + 4 + 8)
        return rn_set_error(RN_INVALID_ARG, "HETERO import: truncated blob");
    memcpy(&stored, r->p - 12 + (r->size - 8), sizeof stored);
    if (stored != fnv1a(r->p - 12, r->size - 8))
        return rn_set_error(RN_INVALID_ARG, "HETERO import: checksum mismatch (corrupt blob)");
    uint32_t n_devices = get_u32(r, "device count");
    if (r->failed == NULL && (n_devices == 0 || n_devices > PLUGIN_MAX_DEVICES))
        return rn_set_error(RN_INVALID_ARG, "HETERO import: bad device count %u", n_devices);
    char list[512] = "";
    size_t used = 0;
    for (uint32_t d = 0; d < n_devices && r->failed == NULL; d++) {
        char name[PLUGIN_DEVICE_NAME_MAX];
        get_str(r, name, sizeof name, "device name");
        if (r->failed == NULL)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", d ? "," : "", name);
    }
    if (r->failed != NULL)
        return rn_set_error(RN_INVALID_ARG, "HETERO import: truncated at the %s", r->failed);
    rn_status st = plugin_devices_resolve(plugin->meta.core, "HETERO", list, &c->devs);
    if (st != RN_OK)
        return st;
    size_t n_model;
    const uint8_t *model = get_bytes(r, &n_model, "model graph");
    if (r->failed != NULL)
        return rn_set_error(RN_INVALID_ARG, "HETERO import: truncated at the %s", r->failed);
    if ((st = graph_deserialize(model, n_model, &c->io)) != RN_OK)
        return rn_wrap_error(st, "HETERO import: the model graph: ");
    uint32_t n_forward = get_u32(r, "property count");
    if (r->failed == NULL && n_forward > 32)
        return rn_set_error(RN_INVALID_ARG, "HETERO import: %u properties", n_forward);
    rn_property stored_props[32];
    char keys[32][64], values[32][128];
    for (uint32_t i = 0; i < n_forward && r->failed == NULL; i++) {
        get_str(r, keys[i], sizeof keys[i], "property key");
        get_str(r, values[i], sizeof values[i], "property value");
        stored_props[i] = (rn_property){keys[i], values[i]};
    }
    if (r->failed == NULL && (st = hetero_compiled_apply(c, stored_props, n_forward)) != RN_OK)
        return st;
    uint32_t n_parts = get_u32(r, "part count");
    if (r->failed == NULL && (n_parts == 0 || n_parts > 4096))
        return rn_set_error(RN_INVALID_ARG, "HETERO import: bad part count %u", n_parts);
    if (r->failed == NULL && (c->split.parts = calloc(n_parts, sizeof *c->split.parts)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
    for (uint32_t p = 0; p < n_parts && r->failed == NULL; p++) {
        hetero_part *part = &c->split.parts[p];
        c->split.n_parts = (int)p + 1;
        part->device = get_i32(r, "part device");
        uint32_t n_in = get_u32(r, "part input count");
        if (r->failed != NULL)
            break;
        if (part->device < 0 || part->device >= c->devs.n || n_in > 65536)
            return rn_set_error(RN_INVALID_ARG, "HETERO import: part %u: bad device or inputs", p);
        if ((part->inputs = calloc((size_t)n_in + 1, sizeof *part->inputs)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
        part->n_inputs = (int)n_in;
        for (uint32_t k = 0; k < n_in; k++) {
            part->inputs[k].part = get_i32(r, "part source");
            part->inputs[k].index = get_i32(r, "part source");
            if (part->inputs[k].part >= (int)p || part->inputs[k].part < -1 ||
                (part->inputs[k].part < 0 && part->inputs[k].index >= c->io->n_inputs))
                return rn_set_error(RN_INVALID_ARG, "HETERO import: part %u: bad source %u", p, k);
        }
        size_t n_blob;
        const uint8_t *blob = get_bytes(r, &n_blob, "part blob");
        if (r->failed != NULL)
            break;
        const plugin_device *dev = &c->devs.at[part->device];
        if (dev->ops->import_model == NULL)
            return rn_set_error(RN_NOT_IMPLEMENTED, "HETERO import: %s cannot import", dev->name);
        const rn_graph *io;
        st = dev->ops->import_model(dev->plugin, blob, n_blob, NULL, c->s.forward, c->s.n_forward,
                                    &part->ops, &part->compiled, &io);
        if (st != RN_OK) {
            part->compiled = NULL;
            return rn_wrap_error(st, "HETERO import: part %u on %s: ", p, dev->name);
        }
        part->io = io;
        for (int k = 0; k < part->n_inputs; k++) {
            hetero_source src = part->inputs[k];
            if (k >= io->n_inputs ||
                (src.part >= 0 && src.index >= c->split.parts[src.part].io->n_outputs))
                return rn_set_error(RN_INVALID_ARG, "HETERO import: part %u: bad source %d", p, k);
        }
    }
    uint32_t n_outputs = get_u32(r, "output count");
    if (r->failed == NULL && n_outputs != (uint32_t)c->io->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "HETERO import: %u outputs for a model of %d",
                            n_outputs, c->io->n_outputs);
    if (r->failed == NULL &&
        (c->split.outputs = calloc((size_t)n_outputs + 1, sizeof *c->split.outputs)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
    c->split.n_outputs = (int)n_outputs;
    for (uint32_t o = 0; o < n_outputs && r->failed == NULL; o++) {
        c->split.outputs[o].part = get_i32(r, "output source");
        c->split.outputs[o].index = get_i32(r, "output source");
        hetero_source src = c->split.outputs[o];
        if (r->failed == NULL && (src.part < 0 || src.part >= c->split.n_parts || src.index < 0 ||
                                  src.index >= c->split.parts[src.part].io->n_outputs))
            return rn_set_error(RN_INVALID_ARG, "HETERO import: bad source of output %u", o);
    }
    if (r->failed != NULL)
        return rn_set_error(RN_INVALID_ARG, "HETERO import: truncated at the %s", r->failed);
    return RN_OK;
}

rn_status hetero_import(hetero_plugin *p, const void *data, size_t size,
                        const rn_property *properties, size_t n, hetero_compiled **out)
{
    hetero_compiled *c = hetero_compiled_new(p);
    if (c == NULL)
        return RN_OUT_OF_MEMORY;
    reader r = {data, size, size, NULL};
    rn_status st = read_split(p, &r, c);
    if (st == RN_OK)
        st = hetero_compiled_apply(c, properties, n);
    if (st == RN_OK &&
        (c->device_of = calloc((size_t)c->io->n_nodes + 1, sizeof *c->device_of)) == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "HETERO: out of memory");
    if (st == RN_OK)
        st = hetero_compiled_finish(c);
    if (st != RN_OK) {
        hetero_compiled_free(c);
        return st;
    }
    *out = c;
    return RN_OK;
}
