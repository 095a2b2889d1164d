/* A pre-scan of protobuf wire data that bounds message nesting.
 *
 * protobuf-c unpacks nested messages by recursion without a depth limit, so a
 * few megabytes of crafted input (a graph in a node in an attribute in a
 * graph ...) overflow the C stack. This scan walks the same bytes guided by
 * the generated descriptors, recursing at most `max_depth` levels, and only
 * says whether the nesting is too deep: everything else about the bytes,
 * malformed or not, is left to protobuf-c to judge. */
#include <stdint.h>
#include <stdlib.h>

#include "graph/onnx/onnx_internal.h"

static void *unpack_alloc(void *data, size_t size)
{
    void *p = malloc(size);
    if (p == NULL)
        ((onnx_unpack_allocator *)data)->failed = true;
    return p;
}

static void unpack_free(void *data, void *p)
{
    (void)data;
    free(p);
}

void onnx_unpack_allocator_init(onnx_unpack_allocator *a)
{
    a->base = (ProtobufCAllocator){.alloc = unpack_alloc, .free = unpack_free, .allocator_data = a};
    a->failed = false;
}

bool onnx_read_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && *pos < len; shift += 7) {
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

typedef enum { SCAN_OK, SCAN_TOO_DEEP, SCAN_STOP } scan_result;

static scan_result scan(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len,
                        int depth_left)
{
    size_t pos = 0;
    while (pos < len) {
        uint64_t key, n;
        if (!onnx_read_varint(p, len, &pos, &key))
            return SCAN_STOP;
        switch (key & 7) {
        case 0: /* varint */
            if (!onnx_read_varint(p, len, &pos, &n))
                return SCAN_STOP;
            break;
        case 1: /* 64-bit */
            if (len - pos < 8)
                return SCAN_STOP;
            pos += 8;
            break;
        case 5: /* 32-bit */
            if (len - pos < 4)
                return SCAN_STOP;
            pos += 4;
            break;
        case 2: { /* length-delimited: bytes, strings, packed arrays, messages */
            if (!onnx_read_varint(p, len, &pos, &n) || n > len - pos)
                return SCAN_STOP;
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3))
                    : NULL;
            if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth_left == 0)
                    return SCAN_TOO_DEEP;
                scan_result r = scan(f->descriptor, p + pos, (size_t)n, depth_left - 1);
                if (r == SCAN_TOO_DEEP)
                    return r;
                /* SCAN_STOP inside a message: protobuf-c will refuse it */
            }
            pos += (size_t)n;
            break;
        }
        default: /* groups and invalid wire types: protobuf-c refuses them */
            return SCAN_STOP;
        }
    }
    return SCAN_OK;
}

bool onnx_wire_depth_ok(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
                        int max_depth)
{
    return scan(desc, data, len, max_depth) != SCAN_TOO_DEEP;
}
