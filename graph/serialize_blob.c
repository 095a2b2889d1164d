/* The export container (docs/export.md): a header naming the device, its
 * architecture and the compile properties, the graph encoding as payload, and
 * an XXH64 checksum of everything before it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize_internal.h"

static void enc_blob_header(serial_sink *s, const graph_blob_header *h, uint64_t payload_size)
{
    serial_put(s, GRAPH_BLOB_MAGIC, 8);
    serial_put_u32(s, GRAPH_BLOB_FORMAT_VERSION);
    serial_put_str(s, h->device);
    serial_put_str(s, h->arch);
    serial_put_u32(s, (uint32_t)h->n_props);
    for (size_t i = 0; i < h->n_props; i++) {
        serial_put_str(s, h->keys[i]);
        serial_put_str(s, h->values[i]);
    }
    serial_put_u64(s, payload_size);
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
    serial_sink count = {0};
    serial_encode_payload(&count, g);
    if (count.st != RN_OK)
        return count.st;
    size_t payload = count.size;
    enc_blob_header(&count, hdr, payload); /* count.size: payload + header */
    size_t total = count.size + 8;
    serial_sink w = {.data = malloc(total), .cap = total};
    if (w.data == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "export blob: out of memory for %zu bytes", total);
    enc_blob_header(&w, hdr, payload);
    serial_encode_payload(&w, g);
    if (w.st == RN_OK && w.size != total - 8)
        w.st = rn_set_error(RN_INTERNAL, "export blob: the write pass disagrees with the count");
    if (w.st != RN_OK) {
        free(w.data);
        return w.st;
    }
    serial_put_u64(&w, graph_hash_bytes(w.data, w.size, 0));
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
    uint32_t version = serial_load32(bytes + 8);
    if (version != GRAPH_BLOB_FORMAT_VERSION)
        return rn_set_error(RN_UNSUPPORTED,
                            "export blob: format version %" PRIu32 ", this build reads %u", version,
                            GRAPH_BLOB_FORMAT_VERSION);
    size_t body = size - 8;
    if (!expect->skip_checksum) {
        uint64_t stored = serial_load64(bytes + body);
        uint64_t computed = graph_hash_bytes(bytes, body, 0);
        if (stored != computed)
            return rn_set_error(RN_PARSE_ERROR,
                                "export blob: checksum mismatch (stored %016" PRIx64
                                ", computed %016" PRIx64 "): the blob is corrupted or truncated",
                                stored, computed);
    }
    serial_reader r = {.data = bytes, .size = body, .pos = 12, .what = "export blob"};
    graph_blob_header h = {.format_version = version};
    graph *g = NULL;
    h.device = serial_get_str(&r, "device name");
    if (r.st == RN_OK && expect->device != NULL && strcmp(h.device, expect->device) != 0) {
        r.st = rn_set_error(RN_UNSUPPORTED, "export blob: blob is for device %s, not %s", h.device,
                            expect->device);
        goto fail;
    }
    h.arch = serial_get_str(&r, "device architecture");
    if (r.st == RN_OK && expect->arch != NULL && strcmp(h.arch, expect->arch) != 0) {
        r.st = rn_set_error(RN_UNSUPPORTED,
                            "export blob: blob is for device architecture '%s', not '%s'", h.arch,
                            expect->arch);
        goto fail;
    }
    int n_props = serial_get_count(&r, "property count", SERIAL_MIN_PROP);
    const char **keys = NULL, **values = NULL;
    if (r.st == RN_OK) {
        h.keys = keys = calloc((size_t)n_props + 1, sizeof(char *));
        h.values = values = calloc((size_t)n_props + 1, sizeof(char *));
        if (keys == NULL || values == NULL)
            serial_fail_at(&r, r.pos, RN_OUT_OF_MEMORY, "out of memory for %d properties", n_props);
    }
    for (int i = 0; i < n_props && r.st == RN_OK; i++) {
        h.n_props = (size_t)i + 1; /* what the release frees */
        keys[i] = serial_get_str(&r, "property key");
        values[i] = serial_get_str(&r, "property value");
    }
    size_t pat = r.pos;
    uint64_t payload = serial_get_u64(&r, "payload size");
    if (r.st != RN_OK)
        goto fail;
    if (payload != serial_remaining(&r)) {
        serial_fail_at(&r, pat, RN_PARSE_ERROR, "payload size %" PRIu64 ", but %zu bytes %s",
                       payload, serial_remaining(&r),
                       payload > serial_remaining(&r) ? "remain (truncated)" : "follow");
        goto fail;
    }
    if (g_out != NULL) {
        serial_reader pr = {.data = bytes + r.pos,
                            .size = serial_remaining(&r),
                            .base = r.pos,
                            .what = "export blob payload"};
        if ((g = serial_decode_payload(&pr)) == NULL) {
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
