/* TensorProto -> graph_tensor: element types, inline data in raw_data or the
 * typed fields, external data files, and serialized TensorProto files. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/onnx/onnx_internal.h"
#include "graph/onnx/onnx_reader.h"

/* ---- element types ---- */

/* Names of the TensorProto.DataType numbers ONNX defines but the runtime has
 * no element type for, so that the error can say what the model asked for. */
static const char *unsupported_type_name(int32_t data_type)
{
    switch (data_type) {
    case 14:
        return "complex64";
    case 15:
        return "complex128";
    case 17:
        return "float8e4m3fn";
    case 18:
        return "float8e4m3fnuz";
    case 19:
        return "float8e5m2";
    case 20:
        return "float8e5m2fnuz";
    case 21:
        return "uint4";
    case 22:
        return "int4";
    case 23:
        return "float4e2m1";
    case 24:
        return "float8e8m0";
    case 25:
        return "uint2";
    case 26:
        return "int2";
    default:
        return NULL;
    }
}

rn_status onnx_element_type(int32_t data_type, const char *what, bool allow_undefined,
                            rn_element_type *out)
{
    if (data_type == 0) {
        if (!allow_undefined)
            return rn_set_error(RN_PARSE_ERROR, "%s: element type is undefined (0)", what);
        *out = RN_UNDEFINED;
        return RN_OK;
    }
    if (rn_element_type_is_valid((rn_element_type)data_type)) {
        *out = (rn_element_type)data_type;
        return RN_OK;
    }
    const char *name = unsupported_type_name(data_type);
    if (name != NULL)
        return rn_set_error(RN_UNSUPPORTED, "%s: element type %d (%s) is not supported", what,
                            (int)data_type, name);
    return rn_set_error(RN_PARSE_ERROR, "%s: unknown element type %d", what, (int)data_type);
}

/* ---- inline data ---- */

/* raw_data is little-endian by the spec; swap on big-endian hosts. */
static void le_to_host(void *data, size_t count, size_t size)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    unsigned char *p = data;
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char c = p[a];
            p[a] = p[b];
            p[b] = c;
        }
#else
    (void)data;
    (void)count;
    (void)size;
#endif
}

/* int32_data carries every element type narrower than 32 bits (the spec's
 * rule); values that do not fit the element type are refused rather than
 * wrapped. f16, bf16 and the float8 types travel as their bit patterns. */
static rn_status from_int32(const Onnx__TensorProto *p, const char *name, graph_tensor *t,
                            size_t count)
{
    int64_t lo, hi;
    switch (t->type) {
    case RN_I32:
        memcpy(t->data, p->int32_data, count * sizeof(int32_t));
        return RN_OK;
    case RN_I8:
        lo = INT8_MIN, hi = INT8_MAX;
        break;
    case RN_U8:
        lo = 0, hi = UINT8_MAX;
        break;
    case RN_I16:
        lo = INT16_MIN, hi = INT16_MAX;
        break;
    case RN_U16:
        lo = 0, hi = UINT16_MAX;
        break;
    case RN_BOOL:
        lo = 0, hi = 1;
        break;
    case RN_F8E4M3FN:
    case RN_F8E4M3FNUZ:
    case RN_F8E5M2:
    case RN_F8E5M2FNUZ:
        lo = 0, hi = UINT8_MAX; /* the 8-bit patterns */
        break;
    case RN_F16:
    case RN_BF16:
        lo = INT16_MIN, hi = UINT16_MAX; /* writers store the bits signed or unsigned */
        break;
    default:
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': %s data cannot be in int32_data", name,
                            rn_element_type_name(t->type));
    }
    for (size_t i = 0; i < count; i++) {
        int32_t v = p->int32_data[i];
        if (v < lo || v > hi)
            return rn_set_error(RN_PARSE_ERROR,
                                "tensor '%s': int32_data[%zu] = %" PRId32 " does not fit %s", name,
                                i, v, rn_element_type_name(t->type));
        switch (t->type) {
        case RN_I8:
            ((int8_t *)t->data)[i] = (int8_t)v;
            break;
        case RN_U8:
        case RN_BOOL:
        case RN_F8E4M3FN:
        case RN_F8E4M3FNUZ:
        case RN_F8E5M2:
        case RN_F8E5M2FNUZ:
            ((uint8_t *)t->data)[i] = (uint8_t)v;
            break;
        case RN_I16:
            ((int16_t *)t->data)[i] = (int16_t)v;
            break;
        default: /* U16, F16, BF16: the low 16 bits */
            ((uint16_t *)t->data)[i] = (uint16_t)(v & 0xffff);
            break;
        }
    }
    return RN_OK;
}

static rn_status from_uint64(const Onnx__TensorProto *p, const char *name, graph_tensor *t,
                             size_t count)
{
    if (t->type == RN_U64) {
        memcpy(t->data, p->uint64_data, count * sizeof(uint64_t));
        return RN_OK;
    }
    if (t->type != RN_U32)
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': %s data cannot be in uint64_data", name,
                            rn_element_type_name(t->type));
    for (size_t i = 0; i < count; i++) {
        if (p->uint64_data[i] > UINT32_MAX)
            return rn_set_error(RN_PARSE_ERROR,
                                "tensor '%s': uint64_data[%zu] = %" PRIu64 " does not fit u32",
                                name, i, p->uint64_data[i]);
        ((uint32_t *)t->data)[i] = (uint32_t)p->uint64_data[i];
    }
    return RN_OK;
}

/* Copies string_data into an array of NUL-terminated strings (cut at the
 * first embedded NUL, as graph_attr strings are). */
static rn_status from_strings(const Onnx__TensorProto *p, const char *name, graph_tensor *t,
                              size_t count)
{
    char **s = t->data;
    for (size_t i = 0; i < count; i++) {
        const ProtobufCBinaryData *b = &p->string_data[i];
        size_t n = b->data != NULL ? strnlen((const char *)b->data, b->len) : 0;
        s[i] = malloc(n + 1);
        if (s[i] == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "tensor '%s': out of memory copying strings",
                                name);
        if (n)
            memcpy(s[i], b->data, n);
        s[i][n] = '\0';
    }
    return RN_OK;
}

/* Checks that a typed field holds exactly `count` values. */
static rn_status check_count(const char *name, const char *field, size_t have, size_t count,
                             const graph_tensor *t)
{
    if (have == count)
        return RN_OK;
    char buf[160];
    graph_shape s = {.rank = t->rank};
    memcpy(s.dims, t->dims, sizeof s.dims);
    return rn_set_error(RN_PARSE_ERROR, "tensor '%s': %s holds %zu values, but dims %s need %zu",
                        name, field, have, graph_shape_str(&s, buf, sizeof buf), count);
}

/* ---- external data ---- */

/* Parses a non-negative decimal ("offset", "length"). */
static bool parse_size(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* External locations are plain relative paths below the model's folder: no
 * absolute path, no ".." component (with '/' or '\\' as separator). The check
 * is lexical; symbolic links inside the folder are followed, as model caches
 * use them. */
static const char *location_problem(const char *loc)
{
    if (loc[0] == '\0')
        return "is empty";
    if (loc[0] == '/' || loc[0] == '\\')
        return "is an absolute path";
    const char *c = loc;
    while (*c != '\0') {
        size_t n = strcspn(c, "/\\");
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return "leaves the model's folder";
        c += n;
        if (*c != '\0')
            c++;
    }
    return NULL;
}

/* Where a tensor's external data lies, checked against the file before any
 * buffer is allocated. */
typedef struct external_data {
    char *path; /* malloc'ed */
    int fd;
    uint64_t offset;
} external_data;

static rn_status open_external(const Onnx__TensorProto *p, const char *name, const char *base_dir,
                               size_t nbytes, external_data *out)
{
    const char *location = NULL;
    uint64_t offset = 0, length = 0;
    bool has_length = false;
    for (size_t i = 0; i < p->n_external_data; i++) {
        const char *key = p->external_data[i]->key ? p->external_data[i]->key : "";
        const char *val = p->external_data[i]->value ? p->external_data[i]->value : "";
        if (strcmp(key, "location") == 0) {
            location = val;
        } else if (strcmp(key, "offset") == 0) {
            if (!parse_size(val, &offset))
                return rn_set_error(RN_PARSE_ERROR,
                                    "tensor '%s': external data offset '%s' is not a number", name,
                                    val);
        } else if (strcmp(key, "length") == 0) {
            if (!parse_size(val, &length))
                return rn_set_error(RN_PARSE_ERROR,
                                    "tensor '%s': external data length '%s' is not a number", name,
                                    val);
            has_length = true;
        }
        /* "checksum" and unknown keys carry nothing the reader needs. */
    }
    if (location == NULL)
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': external data without a location", name);
    const char *problem = location_problem(location);
    if (problem != NULL)
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': external data location '%s' %s", name,
                            location, problem);
    if (base_dir == NULL)
        return rn_set_error(RN_INVALID_ARG,
                            "tensor '%s': external data '%s' needs the model's folder, and none "
                            "was given",
                            name, location);
    if (has_length && length != nbytes)
        return rn_set_error(RN_PARSE_ERROR,
                            "tensor '%s': external data length %" PRIu64
                            " does not match the %zu bytes its dims need",
                            name, length, nbytes);
    external_data e = {.offset = offset, .fd = -1};
    if (asprintf(&e.path, "%s/%s", base_dir, location) < 0)
        return rn_set_error(RN_OUT_OF_MEMORY, "tensor '%s': out of memory", name);
    rn_status st = RN_OK;
    struct stat sb;
    e.fd = open(e.path, O_RDONLY | O_CLOEXEC);
    if (e.fd < 0)
        st = rn_set_error(RN_IO_ERROR, "tensor '%s': cannot open external data '%s': %s", name,
                          e.path, strerror(errno));
    else if (fstat(e.fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = rn_set_error(RN_IO_ERROR, "tensor '%s': external data '%s' is not a readable file",
                          name, e.path);
    else if (offset > (uint64_t)sb.st_size || nbytes > (uint64_t)sb.st_size - offset)
        st = rn_set_error(RN_PARSE_ERROR,
                          "tensor '%s': external data '%s' holds %lld bytes, too few for %zu "
                          "at offset %" PRIu64,
                          name, e.path, (long long)sb.st_size, nbytes, offset);
    if (st != RN_OK) {
        if (e.fd >= 0)
            close(e.fd);
        free(e.path);
        return st;
    }
    *out = e;
    return RN_OK;
}

/* Reads nbytes from an opened external file and closes it. */
static rn_status read_external(external_data *e, const char *name, void *data, size_t nbytes)
{
    rn_status st = RN_OK;
    size_t done = 0;
    while (done < nbytes) {
        ssize_t r = pread(e->fd, (char *)data + done, nbytes - done, (off_t)(e->offset + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            st = rn_set_error(RN_IO_ERROR, "tensor '%s': reading external data '%s' failed: %s",
                              name, e->path, r < 0 ? strerror(errno) : "unexpected end of file");
            break;
        }
        done += (size_t)r;
    }
    close(e->fd);
    free(e->path);
    return st;
}

/* ---- the conversion ---- */

/* Number of inline data fields the proto fills. */
static int inline_fields(const Onnx__TensorProto *p)
{
    return (p->has_raw_data ? 1 : 0) + (p->n_float_data > 0) + (p->n_int32_data > 0) +
           (p->n_string_data > 0) + (p->n_int64_data > 0) + (p->n_double_data > 0) +
           (p->n_uint64_data > 0);
}

/* Reads dims and type into t; computes element count and byte size with
 * overflow checks. */
static rn_status read_header(const Onnx__TensorProto *p, const char *name, graph_tensor *t,
                             size_t *count, size_t *nbytes)
{
    char what[300];
    snprintf(what, sizeof what, "tensor '%s'", name);
    if (!p->has_data_type)
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': no element type", name);
    rn_status st = onnx_element_type(p->data_type, what, false, &t->type);
    if (st != RN_OK)
        return st;
    if (p->n_dims > RN_MAX_RANK)
        return rn_set_error(RN_UNSUPPORTED, "tensor '%s': rank %zu exceeds the maximum of %d", name,
                            p->n_dims, RN_MAX_RANK);
    t->rank = (int)p->n_dims;
    size_t n = 1;
    for (size_t i = 0; i < p->n_dims; i++) {
        if (p->dims[i] < 0)
            return rn_set_error(RN_PARSE_ERROR, "tensor '%s': dim %zu is negative (%" PRId64 ")",
                                name, i, p->dims[i]);
        t->dims[i] = p->dims[i];
        if ((uint64_t)p->dims[i] > SIZE_MAX || __builtin_mul_overflow(n, (size_t)p->dims[i], &n))
            return rn_set_error(RN_PARSE_ERROR, "tensor '%s': element count overflows", name);
    }
    size_t size = t->type == RN_STRING ? sizeof(char *) : rn_element_type_size(t->type);
    if (__builtin_mul_overflow(n, size, nbytes))
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': byte size overflows", name);
    *count = n;
    return RN_OK;
}

/* Checks that the one inline field suits the element type and holds exactly
 * the data the dims call for, before anything is allocated. */
static rn_status check_inline(const Onnx__TensorProto *p, const char *name, const graph_tensor *t,
                              size_t count, size_t nbytes)
{
    const char *tname = rn_element_type_name(t->type);
    const char *field = "the tensor";
    size_t have = 0;
    bool fits = true;
    if (p->has_raw_data) {
        if (t->type == RN_STRING)
            return rn_set_error(RN_PARSE_ERROR, "tensor '%s': string data cannot be in raw_data",
                                name);
        if (p->raw_data.len != nbytes) {
            char buf[160];
            graph_shape s = {.rank = t->rank};
            memcpy(s.dims, t->dims, sizeof s.dims);
            return rn_set_error(
                RN_PARSE_ERROR, "tensor '%s': raw_data holds %zu bytes, but dims %s of %s need %zu",
                name, p->raw_data.len, graph_shape_str(&s, buf, sizeof buf), tname, nbytes);
        }
        return RN_OK;
    } else if (p->n_float_data > 0) {
        field = "float_data", have = p->n_float_data, fits = t->type == RN_F32;
    } else if (p->n_int32_data > 0) {
        /* from_int32 refuses the types int32_data cannot carry */
        field = "int32_data", have = p->n_int32_data;
    } else if (p->n_int64_data > 0) {
        field = "int64_data", have = p->n_int64_data, fits = t->type == RN_I64;
    } else if (p->n_double_data > 0) {
        field = "double_data", have = p->n_double_data, fits = t->type == RN_F64;
    } else if (p->n_uint64_data > 0) {
        field = "uint64_data", have = p->n_uint64_data,
        fits = t->type == RN_U32 || t->type == RN_U64;
    } else if (p->n_string_data > 0) {
        field = "string_data", have = p->n_string_data, fits = t->type == RN_STRING;
    }
    if (!fits)
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': %s data cannot be in %s", name, tname,
                            field);
    return check_count(name, field, have, count, t);
}

/* Fills t->data (allocated, checked by check_inline) from the inline field. */
static rn_status read_inline(const Onnx__TensorProto *p, const char *name, graph_tensor *t,
                             size_t count, size_t nbytes)
{
    if (p->has_raw_data) {
        if (nbytes)
            memcpy(t->data, p->raw_data.data, nbytes);
        le_to_host(t->data, count, rn_element_type_size(t->type));
    } else if (p->n_float_data > 0) {
        memcpy(t->data, p->float_data, nbytes);
    } else if (p->n_int32_data > 0) {
        return from_int32(p, name, t, count);
    } else if (p->n_int64_data > 0) {
        memcpy(t->data, p->int64_data, nbytes);
    } else if (p->n_double_data > 0) {
        memcpy(t->data, p->double_data, nbytes);
    } else if (p->n_uint64_data > 0) {
        return from_uint64(p, name, t, count);
    } else if (p->n_string_data > 0) {
        return from_strings(p, name, t, count);
    }
    return RN_OK;
}

static rn_status convert(Onnx__TensorProto *p, const char *base_dir, bool take, graph_tensor *out)
{
    const char *name = p->name != NULL && p->name[0] != '\0' ? p->name : "(unnamed)";
    graph_tensor t = {0};
    size_t count = 0, nbytes = 0;
    rn_status st = read_header(p, name, &t, &count, &nbytes);
    if (st != RN_OK)
        return st;
    if (p->segment != NULL)
        return rn_set_error(RN_UNSUPPORTED, "tensor '%s': segmented tensors are not supported",
                            name);
    bool external =
        p->has_data_location && p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    int fields = inline_fields(p);
    if (external && fields > 0)
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': has both external and inline data", name);
    if (fields > 1)
        return rn_set_error(RN_PARSE_ERROR, "tensor '%s': holds data in more than one field", name);
    if (external && t.type == RN_STRING)
        return rn_set_error(RN_UNSUPPORTED, "tensor '%s': external string data is not supported",
                            name);
    t.nbytes = nbytes;
    external_data ext = {.fd = -1};
    if (external)
        st = open_external(p, name, base_dir, nbytes, &ext);
    else
        st = check_inline(p, name, &t, count, nbytes);
    if (st != RN_OK)
        return st;

    /* Take over raw_data when it already is the tensor's bytes: no copy. */
    if (take && !external && p->has_raw_data && nbytes > 0) {
        t.data = p->raw_data.data;
        p->raw_data.data = NULL;
        p->raw_data.len = 0;
        p->has_raw_data = 0;
        le_to_host(t.data, count, rn_element_type_size(t.type));
        *out = t;
        return RN_OK;
    }
    /* Every size is checked by now: the buffer is what the input justifies
     * (never NULL, even for an empty tensor, since a NULL data pointer
     * means "value unknown" to shape inference). */
    t.data = t.type == RN_STRING ? calloc(count ? count : 1, sizeof(char *))
                                 : malloc(nbytes ? nbytes : 1);
    if (t.data == NULL) {
        if (external) {
            close(ext.fd);
            free(ext.path);
        }
        return rn_set_error(RN_OUT_OF_MEMORY, "tensor '%s': out of memory for %zu bytes", name,
                            nbytes);
    }
    st = external ? read_external(&ext, name, t.data, nbytes)
                  : read_inline(p, name, &t, count, nbytes);
    if (st != RN_OK) {
        graph_tensor_release(&t);
        return st;
    }
    *out = t;
    return RN_OK;
}

rn_status onnx_tensor_from_proto(const Onnx__TensorProto *proto, const char *base_dir,
                                 graph_tensor *out)
{
    /* Without `take` the proto is only read. */
    return convert((Onnx__TensorProto *)proto, base_dir, false, out);
}

rn_status onnx_tensor_take(Onnx__TensorProto *proto, const char *base_dir, graph_tensor *out)
{
    return convert(proto, base_dir, true, out);
}

/* ---- TensorProto files ---- */

rn_status onnx_read_tensor_memory(const void *data, size_t size, const char *base_dir,
                                  graph_tensor *out)
{
    if (data == NULL && size > 0)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_tensor_memory: data is NULL");
    onnx_unpack_allocator alloc;
    onnx_unpack_allocator_init(&alloc);
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(&alloc.base, size, data);
    if (p == NULL && alloc.failed)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory unpacking a TensorProto (%zu bytes)",
                            size);
    if (p == NULL)
        return rn_set_error(RN_PARSE_ERROR, "not a valid TensorProto (%zu bytes)", size);
    graph_tensor t;
    rn_status st = onnx_tensor_take(p, base_dir, &t);
    onnx__tensor_proto__free_unpacked(p, NULL);
    if (st == RN_OK)
        *out = t;
    return st;
}

rn_status onnx_read_tensor_file(const char *path, graph_tensor *out)
{
    if (path == NULL)
        return rn_set_error(RN_INVALID_ARG, "onnx_read_tensor_file: path is NULL");
    onnx_file f;
    rn_status st = onnx_file_map(path, &f);
    if (st != RN_OK)
        return st;
    char *dir = onnx_dirname(path);
    if (dir == NULL) {
        onnx_file_unmap(&f);
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    }
    st = onnx_read_tensor_memory(f.data, f.size, dir, out);
    onnx_file_unmap(&f);
    free(dir);
    if (st != RN_OK)
        return rn_wrap_error(st, "'%s': ", path);
    return RN_OK;
}
