/* NumPy .npy reading and writing. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/npy.h"

typedef struct npy_type {
    const char *descr; /* without the byte-order mark */
    rn_element_type type;
} npy_type;

static const npy_type npy_types[] = {
    {"f4", RN_F32}, {"f8", RN_F64}, {"f2", RN_F16}, {"i1", RN_I8},  {"u1", RN_U8},  {"i2", RN_I16},
    {"u2", RN_U16}, {"i4", RN_I32}, {"u4", RN_U32}, {"i8", RN_I64}, {"u8", RN_U64}, {"b1", RN_BOOL},
};

#define N_TYPES (sizeof npy_types / sizeof npy_types[0])

/* Finds `'key': ` in the header dict and returns what follows, or NULL. */
static const char *dict_value(const char *header, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "'%s':", key);
    const char *p = strstr(header, pattern);
    if (p == NULL)
        return NULL;
    p += strlen(pattern);
    while (*p == ' ')
        p++;
    return p;
}

static rn_status parse_header(const char *path, const char *header, rn_element_type *type,
                              int64_t *dims, size_t *rank)
{
    const char *descr = dict_value(header, "descr");
    const char *order = dict_value(header, "fortran_order");
    const char *shape = dict_value(header, "shape");
    if (descr == NULL || order == NULL || shape == NULL || *descr != '\'' || *shape != '(')
        return rn_set_error(RN_PARSE_ERROR, "%s: malformed .npy header", path);
    if (strncmp(order, "False", 5) != 0)
        return rn_set_error(RN_UNSUPPORTED, "%s: Fortran-order arrays are not supported", path);
    descr++;
    char endian = *descr;
    if (endian == '>')
        return rn_set_error(RN_UNSUPPORTED, "%s: big-endian arrays are not supported", path);
    if (endian == '<' || endian == '|' || endian == '=')
        descr++;
    *type = RN_UNDEFINED;
    for (size_t i = 0; i < N_TYPES; i++)
        if (strncmp(descr, npy_types[i].descr, 2) == 0 && descr[2] == '\'')
            *type = npy_types[i].type;
    if (*type == RN_UNDEFINED)
        return rn_set_error(RN_UNSUPPORTED, "%s: dtype '%.8s' is not supported", path, descr);
    *rank = 0;
    const char *p = shape + 1;
    while (*p && *p != ')') {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || errno == ERANGE)
            return rn_set_error(RN_PARSE_ERROR, "%s: malformed shape in .npy header", path);
        if (*rank == RN_MAX_RANK)
            return rn_set_error(RN_UNSUPPORTED, "%s: rank above %d", path, RN_MAX_RANK);
        dims[(*rank)++] = d;
        p = end;
    }
    return RN_OK;
}

/* Refuses, before anything is allocated, a shape whose data the rest of the
 * file cannot hold (a stream that cannot seek is left to the read). */
static rn_status check_data_size(FILE *f, const char *path, rn_element_type type,
                                 const int64_t *dims, size_t rank)
{
    size_t bytes = rn_element_type_size(type);
    for (size_t d = 0; d < rank; d++)
        if (__builtin_mul_overflow(bytes, (size_t)dims[d], &bytes))
            return rn_set_error(RN_PARSE_ERROR, "%s: the shape's size overflows", path);
    long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) != 0)
        return RN_OK;
    long end = ftell(f);
    if (fseek(f, here, SEEK_SET) != 0 || end < here)
        return rn_set_error(RN_IO_ERROR, "%s: cannot seek", path);
    if (bytes > (size_t)(end - here))
        return rn_set_error(RN_PARSE_ERROR,
                            "%s: truncated data (the shape needs %zu bytes, the file holds %ld)",
                            path, bytes, end - here);
    return RN_OK;
}

rn_status npy_read(const char *path, rn_tensor **out)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "%s: cannot open", path);
    rn_status st = npy_read_stream(f, path, out);
    fclose(f);
    return st;
}

rn_status npy_read_stream(FILE *f, const char *path, rn_tensor **out)
{
    unsigned char magic[10];
    rn_status st = RN_OK;
    char *header = NULL;
    rn_tensor *t = NULL;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) {
        st = rn_set_error(RN_PARSE_ERROR, "%s: not a .npy file", path);
        goto done;
    }
    size_t header_len;
    if (magic[6] == 1) {
        unsigned char b[2];
        if (fread(b, 1, 2, f) != 2) {
            st = rn_set_error(RN_PARSE_ERROR, "%s: truncated header", path);
            goto done;
        }
        header_len = (size_t)b[0] | (size_t)b[1] << 8;
    } else if (magic[6] == 2 || magic[6] == 3) {
        unsigned char b[4];
        if (fread(b, 1, 4, f) != 4) {
            st = rn_set_error(RN_PARSE_ERROR, "%s: truncated header", path);
            goto done;
        }
        header_len = (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
    } else {
        st = rn_set_error(RN_UNSUPPORTED, "%s: .npy version %d", path, magic[6]);
        goto done;
    }
    if (header_len > (1u << 20)) {
        st = rn_set_error(RN_PARSE_ERROR, "%s: header too long", path);
        goto done;
    }
    header = calloc(1, header_len + 1);
    if (header == NULL || fread(header, 1, header_len, f) != header_len) {
        st = rn_set_error(RN_PARSE_ERROR, "%s: truncated header", path);
        goto done;
    }
    rn_element_type type = RN_UNDEFINED;
    int64_t dims[RN_MAX_RANK] = {0};
    size_t rank = 0;
    if ((st = parse_header(path, header, &type, dims, &rank)) != RN_OK)
        goto done;
    if ((st = check_data_size(f, path, type, dims, rank)) != RN_OK)
        goto done;
    if ((st = rn_tensor_create(type, dims, rank, &t)) != RN_OK)
        goto done;
    size_t bytes = rn_tensor_byte_size(t);
    if (fread(rn_tensor_data(t), 1, bytes, f) != bytes) {
        st = rn_set_error(RN_PARSE_ERROR, "%s: truncated data (expected %zu bytes)", path, bytes);
        goto done;
    }
    *out = t;
    t = NULL;
done:
    rn_tensor_free(t);
    free(header);
    return st;
}

rn_status npy_write(const char *path, const rn_tensor *tensor)
{
    const char *descr = NULL;
    for (size_t i = 0; i < N_TYPES; i++)
        if (npy_types[i].type == rn_tensor_element_type(tensor))
            descr = npy_types[i].descr;
    if (descr == NULL)
        return rn_set_error(RN_UNSUPPORTED, "%s: element type %s has no .npy dtype", path,
                            rn_element_type_name(rn_tensor_element_type(tensor)));
    char header[512];
    int len =
        snprintf(header, sizeof header, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                 descr[0] == 'b' || descr[1] == '1' ? '|' : '<', descr);
    size_t rank = rn_tensor_rank(tensor);
    const int64_t *dims = rn_tensor_dims(tensor);
    for (size_t d = 0; d < rank; d++)
        len += snprintf(header + len, sizeof header - (size_t)len, "%lld%s", (long long)dims[d],
                        rank == 1 || d + 1 < rank ? ", " : "");
    len += snprintf(header + len, sizeof header - (size_t)len, "), }");
    /* Pad with spaces so that data starts on a 64-byte boundary; end with \n. */
    size_t total = 10 + (size_t)len + 1;
    size_t pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return rn_set_error(RN_IO_ERROR, "%s: cannot create", path);
    size_t hlen = (size_t)len + pad + 1;
    unsigned char pre[10] = {0x93,
                             'N',
                             'U',
                             'M',
                             'P',
                             'Y',
                             1,
                             0,
                             (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len;
    for (size_t i = 0; ok && i < pad; i++)
        ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;
    size_t bytes = rn_tensor_byte_size(tensor);
    ok = ok && fwrite(rn_tensor_data(tensor), 1, bytes, f) == bytes;
    ok = (fclose(f) == 0) && ok;
    if (!ok)
        return rn_set_error(RN_IO_ERROR, "%s: write failed", path);
    return RN_OK;
}
