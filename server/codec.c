/* The v2 tensor codec: datatypes, infer requests (JSON and binary tensor
 * data) and infer responses (see codec.h). */
#include "server/codec.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* X(v2 name, element type) */
#define SERVER_DATATYPE_MAP(X)                                                                     \
    X("BOOL", RN_BOOL)                                                                             \
    X("UINT8", RN_U8)                                                                              \
    X("UINT16", RN_U16)                                                                            \
    X("UINT32", RN_U32)                                                                            \
    X("UINT64", RN_U64)                                                                            \
    X("INT8", RN_I8)                                                                               \
    X("INT16", RN_I16)                                                                             \
    X("INT32", RN_I32)                                                                             \
    X("INT64", RN_I64)                                                                             \
    X("FP16", RN_F16)                                                                              \
    X("FP32", RN_F32)                                                                              \
    X("FP64", RN_F64)                                                                              \
    X("BF16", RN_BF16)                                                                             \
    X("BYTES", RN_STRING)

const char *server_datatype_name(rn_element_type type)
{
#define SERVER_DATATYPE_NAME_(name, t)                                                             \
    if (type == t)                                                                                 \
        return name;
    SERVER_DATATYPE_MAP(SERVER_DATATYPE_NAME_)
#undef SERVER_DATATYPE_NAME_
    return NULL;
}

rn_element_type server_datatype_parse(const char *name)
{
#define SERVER_DATATYPE_PARSE_(text, t)                                                            \
    if (strcmp(name, text) == 0)                                                                   \
        return t;
    SERVER_DATATYPE_MAP(SERVER_DATATYPE_PARSE_)
#undef SERVER_DATATYPE_PARSE_
    return RN_UNDEFINED;
}

uint16_t server_f32_to_f16(float value)
{
    uint32_t x;
    memcpy(&x, &value, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu) /* infinity, or NaN kept quiet */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal or zero: shift the mantissa with its hidden bit */
        if (e < -10)
            return sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rest = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        half++; /* a carry into the exponent rounds up to the next binade or infinity */
    return (uint16_t)(sign | half);
}

float server_f16_to_f32(uint16_t half)
{
    uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
    uint32_t exp = (half >> 10) & 0x1fu;
    uint32_t mant = half & 0x3ffu;
    uint32_t x;
    if (exp == 0x1fu) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp != 0) {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    } else if (mant == 0) {
        x = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            mant <<= 1;
        } while ((mant & 0x400u) == 0);
        x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float value)
{
    uint32_t x;
    memcpy(&x, &value, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* NaN stays NaN */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t value)
{
    uint32_t x = (uint32_t)value << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* ---- requests ---- */

void server_shape_text(const int64_t *dims, size_t rank, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < rank && used < size; d++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "," : "", (long long)dims[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

/* Counts the leaves of nested "data" arrays. */
static rn_status count_values(const json_t *data, size_t depth, size_t *count)
{
    if (!json_is_array(data)) {
        (*count)++;
        return RN_OK;
    }
    if (depth > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, "data is nested deeper than %d levels", RN_MAX_RANK);
    size_t i;
    const json_t *item;
    json_array_foreach(data, i, item)
    {
        rn_status st = count_values(item, depth + 1, count);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

rn_status server_store_integer(rn_element_type type, long long v, void *p, size_t i)
{
    long long lo, hi;
    switch (type) {
    case RN_U8:
        lo = 0, hi = UINT8_MAX;
        break;
    case RN_U16:
        lo = 0, hi = UINT16_MAX;
        break;
    case RN_U32:
        lo = 0, hi = UINT32_MAX;
        break;
    case RN_U64:
        lo = 0, hi = LLONG_MAX;
        break;
    case RN_I8:
        lo = INT8_MIN, hi = INT8_MAX;
        break;
    case RN_I16:
        lo = INT16_MIN, hi = INT16_MAX;
        break;
    case RN_I32:
        lo = INT32_MIN, hi = INT32_MAX;
        break;
    default:
        lo = LLONG_MIN, hi = LLONG_MAX;
        break;
    }
    if (v < lo || v > hi)
        return rn_set_error(RN_INVALID_ARG, "value %lld at index %zu is out of range for %s",
                            (long long)v, i, server_datatype_name(type));
    switch (type) {
    case RN_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case RN_U16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case RN_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case RN_U64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    case RN_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case RN_I16:
        ((int16_t *)p)[i] = (int16_t)v;
        break;
    case RN_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    default:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    }
    return RN_OK;
}

static rn_status store_value(rn_tensor *t, const json_t *v, size_t i)
{
    rn_element_type type = rn_tensor_element_type(t);
    void *p = rn_tensor_data(t);
    const char *dt = server_datatype_name(type);
    switch (type) {
    case RN_BOOL:
        if (!json_is_boolean(v))
            return rn_set_error(RN_INVALID_ARG, "value at index %zu is not a boolean (BOOL)", i);
        ((uint8_t *)p)[i] = json_is_true(v) ? 1 : 0;
        return RN_OK;
    case RN_F16:
    case RN_F32:
    case RN_F64:
    case RN_BF16: {
        if (!json_is_number(v))
            return rn_set_error(RN_INVALID_ARG, "value at index %zu is not a number (%s)", i, dt);
        double x = json_number_value(v);
        if (type == RN_F64)
            ((double *)p)[i] = x;
        else if (type == RN_F32)
            ((float *)p)[i] = (float)x;
        else if (type == RN_F16)
            ((uint16_t *)p)[i] = server_f32_to_f16((float)x);
        else
            ((uint16_t *)p)[i] = f32_to_bf16((float)x);
        return RN_OK;
    }
    case RN_STRING: {
        if (!json_is_string(v))
            return rn_set_error(RN_INVALID_ARG, "value at index %zu is not a string (BYTES)", i);
        const char *s = json_string_value(v); /* jansson refuses \u0000 while parsing */
        return rn_tensor_set_string(t, i, s);
    }
    default:
        if (!json_is_integer(v))
            return rn_set_error(RN_INVALID_ARG, "value at index %zu is not an integer (%s)", i, dt);
        return server_store_integer(type, json_integer_value(v), p, i);
    }
}

static rn_status fill_values(rn_tensor *t, const json_t *data, size_t *index)
{
    if (!json_is_array(data))
        return store_value(t, data, (*index)++);
    size_t i;
    const json_t *item;
    json_array_foreach(data, i, item)
    {
        rn_status st = fill_values(t, item, index);
        if (st != RN_OK)
            return st;
    }
    return RN_OK;
}

rn_status server_bytes_read(rn_tensor *t, const unsigned char *p, size_t size, size_t count)
{
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        if (size - at < 4)
            return rn_set_error(RN_INVALID_ARG,
                                "binary data ends inside the length of element %zu of %zu", i,
                                count);
        uint32_t len = (uint32_t)p[at] | (uint32_t)p[at + 1] << 8 | (uint32_t)p[at + 2] << 16 |
                       (uint32_t)p[at + 3] << 24;
        at += 4;
        if (size - at < len)
            return rn_set_error(RN_INVALID_ARG,
                                "element %zu says %u bytes but only %zu are left in its binary "
                                "data",
                                i, len, size - at);
        if (memchr(p + at, 0, len) != NULL)
            return rn_set_error(RN_INVALID_ARG,
                                "element %zu holds a NUL byte, which runnel's string tensors "
                                "cannot carry",
                                i);
        char *s = malloc((size_t)len + 1);
        if (s == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for element %zu", i);
        memcpy(s, p + at, len);
        s[len] = '\0';
        rn_status st = rn_tensor_set_string(t, i, s);
        free(s);
        if (st != RN_OK)
            return st;
        at += len;
    }
    if (at != size)
        return rn_set_error(RN_INVALID_ARG,
                            "%zu bytes of binary data follow the last of %zu "
                            "elements",
                            size - at, count);
    return RN_OK;
}

/* The binary section of a request: what is left of it. */
typedef struct binary_cursor {
    const unsigned char *at;
    size_t left;
} binary_cursor;

static rn_status parse_shape(const json_t *shape, int64_t *dims, size_t *rank, size_t *count)
{
    if (!json_is_array(shape))
        return rn_set_error(RN_INVALID_ARG, "'shape' must be an array of integers");
    if (json_array_size(shape) > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, "shape has rank %zu, more than runnel's %d",
                            json_array_size(shape), RN_MAX_RANK);
    size_t i;
    const json_t *dim;
    json_array_foreach(shape, i, dim)
    {
        if (!json_is_integer(dim))
            return rn_set_error(RN_INVALID_ARG, "shape dim %zu is not a non-negative integer", i);
        dims[i] = json_integer_value(dim);
    }
    *rank = json_array_size(shape);
    return server_shape_count(dims, *rank, count);
}

rn_status server_shape_count(const int64_t *dims, size_t rank, size_t *count)
{
    if (rank > RN_MAX_RANK)
        return rn_set_error(RN_INVALID_ARG, "shape has rank %zu, more than runnel's %d", rank,
                            RN_MAX_RANK);
    size_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return rn_set_error(RN_INVALID_ARG, "shape dim %zu is not a non-negative integer", i);
        if (dims[i] > 0 && n > (SIZE_MAX / 16) / (size_t)dims[i])
            return rn_set_error(RN_INVALID_ARG, "shape has too many elements");
        n *= (size_t)dims[i];
    }
    *count = n;
    return RN_OK;
}

static rn_status parse_input_data(const json_t *input, rn_element_type type, const int64_t *dims,
                                  size_t rank, size_t count, binary_cursor *binary, rn_tensor **out)
{
    const json_t *params = json_object_get(input, "parameters");
    const json_t *bsize = params ? json_object_get(params, "binary_data_size") : NULL;
    const json_t *data = json_object_get(input, "data");
    char shape[128];
    server_shape_text(dims, rank, shape, sizeof shape);
    if (bsize != NULL) {
        if (data != NULL)
            return rn_set_error(RN_INVALID_ARG, "has both 'data' and binary_data_size");
        if (!json_is_integer(bsize) || json_integer_value(bsize) < 0)
            return rn_set_error(RN_INVALID_ARG, "binary_data_size must be a non-negative integer");
        size_t n = (size_t)json_integer_value(bsize);
        if (n > binary->left)
            return rn_set_error(RN_INVALID_ARG,
                                "binary_data_size is %zu but only %zu bytes of binary data are "
                                "left in the body",
                                n, binary->left);
        size_t expect = count * rn_element_type_size(type);
        if (type != RN_STRING && n != expect)
            return rn_set_error(RN_INVALID_ARG,
                                "binary_data_size is %zu bytes but shape %s of %s needs %zu", n,
                                shape, server_datatype_name(type), expect);
        rn_tensor *t;
        rn_status st = rn_tensor_create(type, dims, rank, &t);
        if (st != RN_OK)
            return st;
        if (type == RN_STRING)
            st = server_bytes_read(t, binary->at, n, count);
        else if (n > 0)
            memcpy(rn_tensor_data(t), binary->at, n);
        if (st != RN_OK) {
            rn_tensor_free(t);
            return st;
        }
        binary->at += n;
        binary->left -= n;
        *out = t;
        return RN_OK;
    }
    if (data == NULL)
        return rn_set_error(RN_INVALID_ARG, "has neither 'data' nor binary_data_size");
    size_t n = 0;
    rn_status st = count_values(data, 0, &n);
    if (st != RN_OK)
        return st;
    if (n != count)
        return rn_set_error(RN_INVALID_ARG, "shape %s needs %zu values, 'data' has %zu", shape,
                            count, n);
    rn_tensor *t;
    if ((st = rn_tensor_create(type, dims, rank, &t)) != RN_OK)
        return st;
    size_t index = 0;
    if ((st = fill_values(t, data, &index)) != RN_OK) {
        rn_tensor_free(t);
        return st;
    }
    *out = t;
    return RN_OK;
}

static rn_status parse_input(const json_t *input, binary_cursor *binary, server_input *out)
{
    if (!json_is_object(input))
        return rn_set_error(RN_INVALID_ARG, "every entry of 'inputs' must be an object");
    const char *name = json_string_value(json_object_get(input, "name"));
    if (name == NULL)
        return rn_set_error(RN_INVALID_ARG, "an input has no 'name' string");
    const char *datatype = json_string_value(json_object_get(input, "datatype"));
    if (datatype == NULL)
        return rn_set_error(RN_INVALID_ARG, "input '%s': no 'datatype' string", name);
    rn_element_type type = server_datatype_parse(datatype);
    if (type == RN_UNDEFINED)
        return rn_set_error(RN_INVALID_ARG, "input '%s': unknown datatype '%s'", name, datatype);
    int64_t dims[RN_MAX_RANK];
    size_t rank = 0, count = 0;
    rn_status st = parse_shape(json_object_get(input, "shape"), dims, &rank, &count);
    rn_tensor *t = NULL;
    if (st == RN_OK)
        st = parse_input_data(input, type, dims, rank, count, binary, &t);
    if (st != RN_OK)
        return rn_wrap_error(st, "input '%s': ", name);
    char *copy = strdup(name);
    if (copy == NULL) {
        rn_tensor_free(t);
        return rn_set_error(RN_OUT_OF_MEMORY, "input '%s': no memory", name);
    }
    out->name = copy;
    out->tensor = t;
    return RN_OK;
}

static rn_status parse_outputs(const json_t *outputs, server_infer *infer)
{
    if (!json_is_array(outputs))
        return rn_set_error(RN_INVALID_ARG, "'outputs' must be an array");
    size_t n = json_array_size(outputs);
    if (n == 0)
        return RN_OK;
    infer->outputs = calloc(n, sizeof *infer->outputs);
    if (infer->outputs == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu outputs", n);
    size_t i;
    const json_t *output;
    json_array_foreach(outputs, i, output)
    {
        const char *name = json_string_value(json_object_get(output, "name"));
        if (name == NULL)
            return rn_set_error(RN_INVALID_ARG, "requested output %zu has no 'name' string", i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(infer->outputs[j].name, name) == 0)
                return rn_set_error(RN_INVALID_ARG, "output '%s' is requested twice", name);
        const json_t *params = json_object_get(output, "parameters");
        const json_t *binary = params ? json_object_get(params, "binary_data") : NULL;
        if (binary != NULL && !json_is_boolean(binary))
            return rn_set_error(RN_INVALID_ARG, "output '%s': binary_data must be a boolean", name);
        if ((infer->outputs[i].name = strdup(name)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for output '%s'", name);
        infer->outputs[i].binary = binary ? json_is_true(binary) : infer->binary_output;
        infer->n_outputs = i + 1;
    }
    return RN_OK;
}

static rn_status parse_root(const json_t *root, const char *body, size_t size, size_t header_size,
                            server_infer *infer)
{
    if (!json_is_object(root))
        return rn_set_error(RN_INVALID_ARG, "the request must be a JSON object");
    const json_t *id = json_object_get(root, "id");
    if (id != NULL) {
        if (!json_is_string(id))
            return rn_set_error(RN_INVALID_ARG, "'id' must be a string");
        if ((infer->id = strdup(json_string_value(id))) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the id");
    }
    const json_t *params = json_object_get(root, "parameters");
    const json_t *bout = params ? json_object_get(params, "binary_data_output") : NULL;
    if (bout != NULL && !json_is_boolean(bout))
        return rn_set_error(RN_INVALID_ARG, "binary_data_output must be a boolean");
    infer->binary_output = bout != NULL && json_is_true(bout);
    const json_t *timeout = params ? json_object_get(params, "timeout") : NULL;
    if (timeout != NULL && (!json_is_integer(timeout) || json_integer_value(timeout) < 0))
        return rn_set_error(RN_INVALID_ARG, "parameters.timeout must be microseconds (an integer "
                                            ">= 0)");
    infer->timeout_us = timeout ? (uint64_t)json_integer_value(timeout) : 0;
    const json_t *sequence = params ? json_object_get(params, "sequence_id") : NULL;
    if (sequence != NULL && (!json_is_integer(sequence) || json_integer_value(sequence) < 0))
        return rn_set_error(RN_INVALID_ARG, "parameters.sequence_id must be an integer >= 0");
    infer->sequence_id = sequence ? (uint64_t)json_integer_value(sequence) : 0;
    static const char *const flags[2] = {"sequence_start", "sequence_end"};
    for (int f = 0; f < 2; f++) {
        const json_t *flag = params ? json_object_get(params, flags[f]) : NULL;
        if (flag != NULL && !json_is_boolean(flag))
            return rn_set_error(RN_INVALID_ARG, "parameters.%s must be a boolean", flags[f]);
        *(f ? &infer->sequence_end : &infer->sequence_start) = flag && json_is_true(flag);
    }

    const json_t *inputs = json_object_get(root, "inputs");
    if (!json_is_array(inputs) || json_array_size(inputs) == 0)
        return rn_set_error(RN_INVALID_ARG, "'inputs' must be a non-empty array");
    size_t n = json_array_size(inputs);
    if ((infer->inputs = calloc(n, sizeof *infer->inputs)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu inputs", n);
    binary_cursor binary = {(const unsigned char *)body + header_size, size - header_size};
    for (size_t i = 0; i < n; i++) {
        rn_status st = parse_input(json_array_get(inputs, i), &binary, &infer->inputs[i]);
        if (st != RN_OK)
            return st;
        infer->n_inputs = i + 1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(infer->inputs[j].name, infer->inputs[i].name) == 0)
                return rn_set_error(RN_INVALID_ARG, "input '%s' is given twice",
                                    infer->inputs[i].name);
    }
    if (binary.left != 0)
        return rn_set_error(RN_INVALID_ARG,
                            "%zu bytes of binary data are left after the inputs' "
                            "binary_data_size",
                            binary.left);
    const json_t *outputs = json_object_get(root, "outputs");
    return outputs ? parse_outputs(outputs, infer) : RN_OK;
}

rn_status server_infer_parse(const char *body, size_t size, size_t header_size, server_infer *out)
{
    if (body == NULL || out == NULL)
        return rn_set_error(RN_INVALID_ARG, "infer request: body and out must be set");
    if (header_size == SIZE_MAX)
        header_size = size;
    if (header_size > size)
        return rn_set_error(RN_INVALID_ARG,
                            "Inference-Header-Content-Length is %zu but the body has %zu bytes",
                            header_size, size);
    json_error_t error;
    json_t *root = json_loadb(body, header_size, JSON_REJECT_DUPLICATES, &error);
    if (root == NULL)
        return rn_set_error(RN_INVALID_ARG, "malformed JSON at line %d, column %d: %s", error.line,
                            error.column, error.text);
    server_infer infer = {0};
    rn_status st = parse_root(root, body, size, header_size, &infer);
    json_decref(root);
    if (st != RN_OK) {
        server_infer_clear(&infer);
        return st;
    }
    *out = infer;
    return RN_OK;
}

void server_infer_clear(server_infer *infer)
{
    if (infer == NULL)
        return;
    for (size_t i = 0; i < infer->n_inputs; i++) {
        free(infer->inputs[i].name);
        rn_tensor_free(infer->inputs[i].tensor);
    }
    for (size_t i = 0; i < infer->n_outputs; i++)
        free(infer->outputs[i].name);
    free(infer->inputs);
    free(infer->outputs);
    free(infer->id);
    memset(infer, 0, sizeof *infer);
}

/* ---- responses ---- */

static json_t *json_value(const rn_tensor *t, size_t i)
{
    const void *p = rn_tensor_data(t);
    switch (rn_tensor_element_type(t)) {
    case RN_BOOL:
        return json_boolean(((const uint8_t *)p)[i] != 0);
    case RN_U8:
        return json_integer(((const uint8_t *)p)[i]);
    case RN_U16:
        return json_integer(((const uint16_t *)p)[i]);
    case RN_U32:
        return json_integer(((const uint32_t *)p)[i]);
    case RN_U64: {
        uint64_t v = ((const uint64_t *)p)[i];
        return v > (uint64_t)LLONG_MAX ? NULL : json_integer((json_int_t)v);
    }
    case RN_I8:
        return json_integer(((const int8_t *)p)[i]);
    case RN_I16:
        return json_integer(((const int16_t *)p)[i]);
    case RN_I32:
        return json_integer(((const int32_t *)p)[i]);
    case RN_I64:
        return json_integer(((const int64_t *)p)[i]);
    case RN_F16:
        return json_real(server_f16_to_f32(((const uint16_t *)p)[i]));
    case RN_BF16:
        return json_real(bf16_to_f32(((const uint16_t *)p)[i]));
    case RN_F32:
        return json_real(((const float *)p)[i]);
    case RN_F64:
        return json_real(((const double *)p)[i]);
    case RN_STRING: {
        const char *s = rn_tensor_get_string(t, i);
        return json_string(s ? s : "");
    }
    default:
        return NULL;
    }
}

size_t server_bytes_size(const rn_tensor *t)
{
    if (rn_tensor_element_type(t) != RN_STRING)
        return rn_tensor_byte_size(t);
    size_t n = 0;
    for (size_t i = 0; i < rn_tensor_element_count(t); i++) {
        const char *s = rn_tensor_get_string(t, i);
        n += 4 + (s ? strlen(s) : 0);
    }
    return n;
}

void server_bytes_write(const rn_tensor *t, unsigned char *p)
{
    if (rn_tensor_element_type(t) != RN_STRING) {
        if (rn_tensor_byte_size(t) > 0)
            memcpy(p, rn_tensor_data(t), rn_tensor_byte_size(t));
        return;
    }
    for (size_t i = 0; i < rn_tensor_element_count(t); i++) {
        const char *s = rn_tensor_get_string(t, i);
        uint32_t len = s ? (uint32_t)strlen(s) : 0;
        for (int b = 0; b < 4; b++)
            *p++ = (unsigned char)(len >> (8 * b));
        memcpy(p, s ? s : "", len);
        p += len;
    }
}

static rn_status encode_output(const server_output *o, json_t *entry)
{
    const rn_tensor *t = o->tensor;
    if (rn_tensor_kind(t) != RN_VALUE_TENSOR)
        return rn_set_error(RN_NOT_IMPLEMENTED,
                            "output '%s' is a sequence or optional, which v2 tensors cannot carry",
                            o->name);
    const char *dt = server_datatype_name(rn_tensor_element_type(t));
    if (dt == NULL)
        return rn_set_error(RN_NOT_IMPLEMENTED, "output '%s': element type %s has no v2 datatype",
                            o->name, rn_element_type_name(rn_tensor_element_type(t)));
    json_t *shape = json_array();
    for (size_t d = 0; d < rn_tensor_rank(t); d++)
        json_array_append_new(shape, json_integer(rn_tensor_dims(t)[d]));
    json_object_set_new(entry, "name", json_string(o->name));
    json_object_set_new(entry, "datatype", json_string(dt));
    json_object_set_new(entry, "shape", shape);
    if (o->binary) {
        json_t *params = json_object();
        json_object_set_new(params, "binary_data_size",
                            json_integer((json_int_t)server_bytes_size(t)));
        json_object_set_new(entry, "parameters", params);
        return RN_OK;
    }
    json_t *data = json_array();
    json_object_set_new(entry, "data", data);
    size_t n = rn_tensor_element_count(t);
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_value(t, i);
        if (v == NULL)
            return rn_set_error(RN_INVALID_ARG,
                                "output '%s': element %zu cannot be written as JSON (NaN, "
                                "infinity, a UINT64 past 2^63 or a string that is not UTF-8); "
                                "ask for binary_data",
                                o->name, i);
        json_array_append_new(data, v);
    }
    return RN_OK;
}

rn_status server_response_encode(const char *model, const char *version, const char *id,
                                 const server_output *outputs, size_t n_outputs,
                                 server_response *out)
{
    json_t *root = json_object();
    json_object_set_new(root, "model_name", json_string(model));
    json_object_set_new(root, "model_version", json_string(version));
    if (id != NULL)
        json_object_set_new(root, "id", json_string(id));
    json_t *list = json_array();
    json_object_set_new(root, "outputs", list);
    size_t binary = 0;
    rn_status st = RN_OK;
    for (size_t i = 0; i < n_outputs && st == RN_OK; i++) {
        json_t *entry = json_object();
        json_array_append_new(list, entry);
        st = encode_output(&outputs[i], entry);
        if (outputs[i].binary)
            binary += server_bytes_size(outputs[i].tensor);
    }
    char *header = st == RN_OK ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    if (st != RN_OK)
        return st;
    if (header == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the response");
    size_t header_size = strlen(header);
    char *body = realloc(header, header_size + binary + 1);
    if (body == NULL) {
        free(header);
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu bytes of binary outputs", binary);
    }
    unsigned char *p = (unsigned char *)body + header_size;
    for (size_t i = 0; i < n_outputs; i++)
        if (outputs[i].binary) {
            server_bytes_write(outputs[i].tensor, p);
            p += server_bytes_size(outputs[i].tensor);
        }
    out->body = body;
    out->size = header_size + binary;
    out->header_size = 0;
    for (size_t i = 0; i < n_outputs; i++)
        if (outputs[i].binary)
            out->header_size = header_size;
    return RN_OK;
}

char *server_error_body(const char *message, size_t *size)
{
    json_t *root = json_object();
    json_t *text = json_string(message ? message : "unknown error");
    json_object_set_new(root, "error",
                        text ? text : json_string("(an error message that is not UTF-8)"));
    char *body = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (body != NULL)
        *size = strlen(body);
    return body;
}
