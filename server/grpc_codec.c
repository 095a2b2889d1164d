/* KServe v2's gRPC messages <-> server_infer and server_output (see
 * grpc_codec.h). */
#include "server/grpc_codec.h"

#include <stdlib.h>
#include <string.h>

#include "server/kserve.pb-c.h"

/* The typed list of InferTensorContents that carries each datatype. */
typedef enum contents_list {
    LIST_NONE, /* FP16, BF16: raw only */
    LIST_BOOL,
    LIST_INT,
    LIST_INT64,
    LIST_UINT,
    LIST_UINT64,
    LIST_FP32,
    LIST_FP64,
    LIST_BYTES,
} contents_list;

static const char *const list_names[] = {
    "",
    "bool_contents",
    "int_contents",
    "int64_contents",
    "uint_contents",
    "uint64_contents",
    "fp32_contents",
    "fp64_contents",
    "bytes_contents",
};

static contents_list list_of(rn_element_type type)
{
    switch (type) {
    case RN_BOOL:
        return LIST_BOOL;
    case RN_I8:
    case RN_I16:
    case RN_I32:
        return LIST_INT;
    case RN_I64:
        return LIST_INT64;
    case RN_U8:
    case RN_U16:
    case RN_U32:
        return LIST_UINT;
    case RN_U64:
        return LIST_UINT64;
    case RN_F32:
        return LIST_FP32;
    case RN_F64:
        return LIST_FP64;
    case RN_STRING:
        return LIST_BYTES;
    default:
        return LIST_NONE;
    }
}

/* How many values each list of `c` holds, indexed by contents_list. */
static void list_counts(const Inference__InferTensorContents *c, size_t counts[9])
{
    counts[LIST_NONE] = 0;
    counts[LIST_BOOL] = c->n_bool_contents;
    counts[LIST_INT] = c->n_int_contents;
    counts[LIST_INT64] = c->n_int64_contents;
    counts[LIST_UINT] = c->n_uint_contents;
    counts[LIST_UINT64] = c->n_uint64_contents;
    counts[LIST_FP32] = c->n_fp32_contents;
    counts[LIST_FP64] = c->n_fp64_contents;
    counts[LIST_BYTES] = c->n_bytes_contents;
}

/* Checks that typed contents `c` fill `count` elements of `type` from its
 * one list, before a tensor of the shape's size is made (a shape of 10^12
 * elements with two values must not allocate first). */
static rn_status check_typed(rn_element_type type, const Inference__InferTensorContents *c,
                             size_t count)
{
    const char *dt = server_datatype_name(type);
    contents_list want = list_of(type);
    if (want == LIST_NONE)
        return rn_set_error(RN_INVALID_ARG,
                            "%s has no typed contents in the protocol: send it in "
                            "raw_input_contents",
                            dt);
    size_t counts[9];
    list_counts(c, counts);
    for (int l = LIST_BOOL; l <= LIST_BYTES; l++)
        if (l != (int)want && counts[l] > 0)
            return rn_set_error(RN_INVALID_ARG, "datatype %s takes %s, but the contents fill %s",
                                dt, list_names[want], list_names[l]);
    if (counts[want] != count)
        return rn_set_error(RN_INVALID_ARG, "the shape needs %zu values, %s has %zu", count,
                            list_names[want], counts[want]);
    return RN_OK;
}

/* Fills tensor t (of `count` elements) from typed contents check_typed
 * passed. */
static rn_status fill_typed(rn_tensor *t, const Inference__InferTensorContents *c, size_t count)
{
    rn_element_type type = rn_tensor_element_type(t);
    contents_list want = list_of(type);
    void *p = rn_tensor_data(t);
    rn_status st = RN_OK;
    for (size_t i = 0; i < count && st == RN_OK; i++) {
        switch (want) {
        case LIST_BOOL:
            ((uint8_t *)p)[i] = c->bool_contents[i] ? 1 : 0;
            break;
        case LIST_INT:
            st = server_store_integer(type, c->int_contents[i], p, i);
            break;
        case LIST_INT64:
            ((int64_t *)p)[i] = c->int64_contents[i];
            break;
        case LIST_UINT:
            st = server_store_integer(type, c->uint_contents[i], p, i);
            break;
        case LIST_UINT64:
            ((uint64_t *)p)[i] = c->uint64_contents[i];
            break;
        case LIST_FP32:
            ((float *)p)[i] = c->fp32_contents[i];
            break;
        case LIST_FP64:
            ((double *)p)[i] = c->fp64_contents[i];
            break;
        case LIST_BYTES: {
            const ProtobufCBinaryData *b = &c->bytes_contents[i];
            if (b->len > 0 && memchr(b->data, 0, b->len) != NULL) /* empty: data may be NULL */
                return rn_set_error(RN_INVALID_ARG,
                                    "element %zu holds a NUL byte, which runnel's string tensors "
                                    "cannot carry",
                                    i);
            char *s = malloc(b->len + 1);
            if (s == NULL)
                return rn_set_error(RN_OUT_OF_MEMORY, "no memory for element %zu", i);
            if (b->len > 0)
                memcpy(s, b->data, b->len);
            s[b->len] = '\0';
            st = rn_tensor_set_string(t, i, s);
            free(s);
            break;
        }
        default:
            break;
        }
    }
    return st;
}

/* Makes input i's tensor from raw bytes: dense data is wrapped, not copied. */
static rn_status from_raw(rn_element_type type, const int64_t *dims, size_t rank, size_t count,
                          const ProtobufCBinaryData *raw, rn_tensor **out)
{
    if (type == RN_STRING) {
        if (count > raw->len / 4) /* each element has a 4-byte length */
            return rn_set_error(RN_INVALID_ARG,
                                "raw_input_contents has %zu bytes, too few for %zu BYTES "
                                "elements (4 bytes of length each at least)",
                                raw->len, count);
        rn_status st = rn_tensor_create(type, dims, rank, out);
        if (st == RN_OK && (st = server_bytes_read(*out, raw->data, raw->len, count)) != RN_OK) {
            rn_tensor_free(*out);
            *out = NULL;
        }
        return st;
    }
    size_t expect = count * rn_element_type_size(type);
    if (raw->len != expect) {
        char shape[128];
        server_shape_text(dims, rank, shape, sizeof shape);
        return rn_set_error(RN_INVALID_ARG,
                            "raw_input_contents has %zu bytes but shape %s of %s needs %zu",
                            raw->len, shape, server_datatype_name(type), expect);
    }
    return rn_tensor_wrap(type, dims, rank, raw->data, raw->len, out);
}

static rn_status decode_input(const Inference__ModelInferRequest *m, const ProtobufCBinaryData *raw,
                              size_t n_raw, size_t i, server_input *out)
{
    const Inference__ModelInferRequest__InferInputTensor *in = m->inputs[i];
    rn_element_type type = server_datatype_parse(in->datatype);
    if (type == RN_UNDEFINED)
        return rn_set_error(RN_INVALID_ARG, "unknown datatype '%s'", in->datatype);
    size_t count;
    rn_status st = server_shape_count(in->shape, in->n_shape, &count);
    if (st != RN_OK)
        return st;
    rn_tensor *t = NULL;
    if (n_raw > 0) {
        if (in->contents != NULL)
            return rn_set_error(RN_INVALID_ARG, "has typed contents while the request carries "
                                                "raw_input_contents (one or the other)");
        st = from_raw(type, in->shape, in->n_shape, count, &raw[i], &t);
    } else {
        if (in->contents == NULL)
            return rn_set_error(RN_INVALID_ARG,
                                "has no contents (and the request no raw_input_contents)");
        if ((st = check_typed(type, in->contents, count)) == RN_OK &&
            (st = rn_tensor_create(type, in->shape, in->n_shape, &t)) == RN_OK &&
            (st = fill_typed(t, in->contents, count)) != RN_OK) {
            rn_tensor_free(t);
            t = NULL;
        }
    }
    if (st != RN_OK)
        return st;
    if ((out->name = strdup(in->name)) == NULL) {
        rn_tensor_free(t);
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory");
    }
    out->tensor = t;
    return RN_OK;
}

static rn_status decode_parameters(const Inference__ModelInferRequest *m, server_infer *infer)
{
    for (size_t i = 0; i < m->n_parameters; i++) {
        const char *key = m->parameters[i]->key;
        const Inference__InferParameter *v = m->parameters[i]->value;
        int kind = v ? (int)v->parameter_choice_case : 0;
        int is_int = kind == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
        int is_uint = kind == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM;
        int is_bool = kind == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
        if (strcmp(key, "timeout") == 0) {
            if (!is_int || v->int64_param < 0)
                return rn_set_error(RN_INVALID_ARG,
                                    "parameter 'timeout' must be microseconds (an int64 >= 0)");
            infer->timeout_us = (uint64_t)v->int64_param;
        } else if (strcmp(key, "sequence_id") == 0) {
            if (!(is_int && v->int64_param >= 0) && !is_uint)
                return rn_set_error(RN_INVALID_ARG,
                                    "parameter 'sequence_id' must be an integer >= 0 (string ids "
                                    "are not supported)");
            infer->sequence_id = is_uint ? v->uint64_param : (uint64_t)v->int64_param;
        } else if (strcmp(key, "sequence_start") == 0 || strcmp(key, "sequence_end") == 0) {
            if (!is_bool)
                return rn_set_error(RN_INVALID_ARG, "parameter '%s' must be a bool", key);
            *(key[9] == 's' ? &infer->sequence_start : &infer->sequence_end) = v->bool_param != 0;
        } else if (strcmp(key, "priority") != 0) {
            return rn_set_error(RN_INVALID_ARG,
                                "request parameter '%s' is not supported (runnel-server reads "
                                "'timeout' and the sequence parameters, and ignores 'priority')",
                                key);
        }
    }
    return RN_OK;
}

static rn_status decode_outputs(const Inference__ModelInferRequest *m, server_infer *infer)
{
    if (m->n_outputs == 0)
        return RN_OK;
    if ((infer->outputs = calloc(m->n_outputs, sizeof *infer->outputs)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu outputs", m->n_outputs);
    for (size_t i = 0; i < m->n_outputs; i++) {
        const Inference__ModelInferRequest__InferRequestedOutputTensor *o = m->outputs[i];
        for (size_t j = 0; j < i; j++)
            if (strcmp(infer->outputs[j].name, o->name) == 0)
                return rn_set_error(RN_INVALID_ARG, "output '%s' is requested twice", o->name);
        for (size_t p = 0; p < o->n_parameters; p++)
            if (strcmp(o->parameters[p]->key, "binary_data") != 0)
                return rn_set_error(RN_INVALID_ARG, "output '%s': parameter '%s' is not supported",
                                    o->name, o->parameters[p]->key);
        if ((infer->outputs[i].name = strdup(o->name)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for output '%s'", o->name);
        infer->outputs[i].binary = 1;
        infer->n_outputs = i + 1;
    }
    return RN_OK;
}

static rn_status check_raw_count(size_t n_raw, size_t n_inputs)
{
    if (n_raw > 0 && n_raw != n_inputs)
        return rn_set_error(RN_INVALID_ARG,
                            "raw_input_contents has %zu entries for %zu inputs (one per input)",
                            n_raw, n_inputs);
    return RN_OK;
}

static rn_status decode(const Inference__ModelInferRequest *m, const ProtobufCBinaryData *raw,
                        size_t n_raw, server_infer *infer)
{
    if (m->n_inputs == 0)
        return rn_set_error(RN_INVALID_ARG, "the request has no inputs");
    rn_status st = check_raw_count(n_raw, m->n_inputs);
    if (st != RN_OK)
        return st;
    if (*m->id != '\0' && (infer->id = strdup(m->id)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for the id");
    st = decode_parameters(m, infer);
    if (st != RN_OK)
        return st;
    if ((infer->inputs = calloc(m->n_inputs, sizeof *infer->inputs)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu inputs", m->n_inputs);
    for (size_t i = 0; i < m->n_inputs; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->inputs[j]->name, m->inputs[i]->name) == 0)
                return rn_set_error(RN_INVALID_ARG, "input '%s' is given twice",
                                    m->inputs[i]->name);
        if ((st = decode_input(m, raw, n_raw, i, &infer->inputs[i])) != RN_OK)
            return rn_wrap_error(st, "input '%s': ", m->inputs[i]->name);
        infer->n_inputs = i + 1;
    }
    return decode_outputs(m, infer);
}

/* ---- raw_input_contents in one copy ----
 *
 * protobuf-c copies every bytes field it unpacks into a block of its own,
 * and gRPC hands a message over as several slices that its reader would
 * first join into one: two copies of the tensors (most of the message). The
 * decoder walks the message's top-level fields over the pieces instead,
 * copies each raw_input_contents once, from the pieces, to a 64-byte aligned
 * place in one block the request keeps (r->owned: what its tensors wrap;
 * the bytes of a message have no alignment, and the kernels want their
 * element type's), and gathers the other fields (names, shapes, parameters:
 * a few hundred bytes) for protobuf-c. Anything it does not expect (a group,
 * a field 7 that is not length-delimited, a bad varint or length) leaves the
 * whole message to protobuf-c, which decides. */

#define RAW_INPUT_CONTENTS 7
#define RAW_ALIGN          64

/* A read position in the pieces. */
typedef struct cursor {
    const server_grpc_piece *pieces;
    size_t n, i, off; /* piece i, offset in it */
    size_t left;      /* bytes from here to the end */
} cursor;

static int next_byte(cursor *c, uint8_t *out)
{
    while (c->i < c->n && c->off == c->pieces[c->i].size) {
        c->i++;
        c->off = 0;
    }
    if (c->left == 0 || c->i == c->n)
        return 0;
    *out = c->pieces[c->i].data[c->off++];
    c->left--;
    return 1;
}

/* Copies (to `to`, or skips when NULL) n bytes; the caller checked n <= left. */
static void take(cursor *c, uint8_t *to, size_t n)
{
    c->left -= n;
    while (n > 0) {
        size_t here = c->pieces[c->i].size - c->off;
        if (here == 0) {
            c->i++;
            c->off = 0;
            continue;
        }
        size_t k = here < n ? here : n;
        if (to != NULL) {
            memcpy(to, c->pieces[c->i].data + c->off, k);
            to += k;
        }
        c->off += k;
        n -= k;
    }
}

/* Reads a varint, appending its bytes to head (*n of them). */
static int read_varint(cursor *c, uint64_t *out, uint8_t *head, size_t *n)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b;
        if (!next_byte(c, &b))
            return 0;
        head[(*n)++] = b;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

static size_t round_up(size_t n)
{
    return (n + RAW_ALIGN - 1) / RAW_ALIGN * RAW_ALIGN;
}

/* What a walk found, or (with `copy`) filled: the raw contents' views into
 * owned, and the other fields' bytes in rest. */
typedef struct walk {
    size_t n_raw, raw_size, rest_size;
    ProtobufCBinaryData *raw;
    uint8_t *owned, *rest;
} walk;

enum { COUNT = 0, COPY_REST = 1, COPY_RAW = 2 };

/* Walks every top-level field: counts (COUNT), or copies the other fields
 * (COPY_REST) or the raw contents (COPY_RAW) into the blocks a counting
 * walk sized. 0: not a message it walks. */
static int walk_fields(cursor c, walk *w, int copy)
{
    size_t k = 0, raw_off = 0, rest_off = 0;
    while (c.left > 0) {
        uint8_t head[20]; /* the tag, and a varint value or a length */
        size_t nh = 0;
        uint64_t tag, len = 0;
        if (!read_varint(&c, &tag, head, &nh) || tag >> 3 == 0 || tag >> 32 != 0)
            return 0;
        unsigned wire = (unsigned)(tag & 7);
        int raw = tag >> 3 == RAW_INPUT_CONTENTS;
        if (raw && wire != 2)
            return 0;
        if (wire == 1 || wire == 5)
            len = wire == 1 ? 8 : 4;
        else if (wire > 2 || !read_varint(&c, &len, head, &nh))
            return 0; /* groups (protobuf-c's to refuse), or a bad varint */
        else if (wire == 0)
            len = 0; /* the value is in head */
        if (len > c.left)
            return 0;
        if (raw) {
            if (copy & COPY_RAW) {
                w->raw[k] = (ProtobufCBinaryData){(size_t)len, w->owned + raw_off};
                take(&c, w->owned + raw_off, (size_t)len);
            } else {
                take(&c, NULL, (size_t)len);
            }
            k++;
            raw_off += round_up((size_t)len);
        } else {
            if (copy & COPY_REST) {
                memcpy(w->rest + rest_off, head, nh);
                take(&c, w->rest + rest_off + nh, (size_t)len);
            } else {
                take(&c, NULL, (size_t)len);
            }
            rest_off += nh + (size_t)len;
        }
    }
    w->n_raw = k;
    w->raw_size = raw_off;
    w->rest_size = rest_off;
    return 1;
}

/* The message's other fields, in w->rest (and the sizes of its raw
 * contents). 0: not a message it walks (w untouched), or no memory
 * (*no_memory set). */
static int split(cursor c, walk *w, int *no_memory)
{
    walk sized = {0};
    if (!walk_fields(c, &sized, COUNT))
        return 0;
    if ((sized.rest = malloc(sized.rest_size ? sized.rest_size : 1)) == NULL) {
        *no_memory = 1;
        return 0;
    }
    walk_fields(c, &sized, COPY_REST);
    *w = sized;
    return 1;
}

/* Copies the raw contents split() sized to w->owned, w->raw their views.
 * Only once the message is known to have as many inputs: each takes up to
 * 63 bytes of padding, which a message of many tiny ones must not get. */
static rn_status fill_raw(cursor c, walk *w)
{
    w->raw = calloc(w->n_raw ? w->n_raw : 1, sizeof *w->raw);
    w->owned = aligned_alloc(RAW_ALIGN, w->raw_size ? w->raw_size : RAW_ALIGN);
    if (w->raw == NULL || w->owned == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu bytes of raw_input_contents",
                            w->raw_size);
    walk_fields(c, w, COPY_RAW);
    return RN_OK;
}

/* The pieces joined (a message split() would not walk goes whole to
 * protobuf-c). */
static uint8_t *join(const server_grpc_piece *pieces, size_t n, size_t size)
{
    uint8_t *all = malloc(size ? size : 1);
    for (size_t i = 0, at = 0; all != NULL && i < n; at += pieces[i].size, i++)
        if (pieces[i].size > 0)
            memcpy(all + at, pieces[i].data, pieces[i].size);
    return all;
}

rn_status server_grpc_infer_decode_pieces(const server_grpc_piece *pieces, size_t n_pieces,
                                          server_grpc_infer *out)
{
    size_t size = 0;
    for (size_t i = 0; i < n_pieces; i++)
        size += pieces[i].size;
    cursor c = {pieces, n_pieces, 0, 0, size};
    walk w = {0};
    int no_memory = 0, walked = split(c, &w, &no_memory);
    if (!walked) {
        if (no_memory || (w.rest = join(pieces, n_pieces, size)) == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "no memory for a %zu-byte request", size);
        w.rest_size = size;
    }
    Inference__ModelInferRequest *m =
        inference__model_infer_request__unpack(NULL, w.rest_size, w.rest);
    free(w.rest); /* protobuf-c copied what it keeps */
    if (m == NULL)
        return rn_set_error(RN_INVALID_ARG, "the message (%zu bytes) is not a ModelInferRequest",
                            size);
    /* No inputs: decode() says so, with nothing copied. */
    rn_status st = RN_OK;
    if (walked && m->n_inputs > 0 && (st = check_raw_count(w.n_raw, m->n_inputs)) == RN_OK)
        st = fill_raw(c, &w);
    server_grpc_infer r = {m, m->model_name, m->model_version, {0}, w.raw, w.owned};
    const ProtobufCBinaryData *raw = walked ? w.raw : m->raw_input_contents;
    size_t n_raw = walked ? w.n_raw : m->n_raw_input_contents;
    if (st == RN_OK)
        st = decode(m, raw, n_raw, &r.infer);
    if (st != RN_OK) {
        server_grpc_infer_clear(&r);
        return st;
    }
    *out = r;
    return RN_OK;
}

rn_status server_grpc_infer_decode(const uint8_t *data, size_t size, server_grpc_infer *out)
{
    server_grpc_piece one = {data, size};
    return server_grpc_infer_decode_pieces(&one, 1, out);
}

void server_grpc_infer_clear(server_grpc_infer *r)
{
    if (r == NULL)
        return;
    server_infer_clear(&r->infer); /* the wrappers go before the bytes they wrap */
    if (r->message != NULL)
        inference__model_infer_request__free_unpacked(r->message, NULL);
    free(r->raw);
    free(r->owned);
    memset(r, 0, sizeof *r);
}

rn_status server_grpc_pack(const ProtobufCMessage *message, server_response *out)
{
    size_t size = protobuf_c_message_get_packed_size(message);
    uint8_t *body = malloc(size ? size : 1);
    if (body == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "no memory for a %zu-byte response", size);
    protobuf_c_message_pack(message, body);
    *out = (server_response){(char *)body, size, 0};
    return RN_OK;
}

typedef Inference__ModelInferResponse__InferOutputTensor output_tensor;

rn_status server_grpc_response_encode(const char *model, const char *version, const char *id,
                                      const server_output *outputs, size_t n, int stream,
                                      server_response *out)
{
    Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
    r.model_name = (char *)model;
    r.model_version = (char *)version;
    if (id != NULL)
        r.id = (char *)id;
    output_tensor *tensors = calloc(n ? n : 1, sizeof *tensors);
    output_tensor **list = calloc(n ? n : 1, sizeof *list);
    ProtobufCBinaryData *raw = calloc(n ? n : 1, sizeof *raw);
    unsigned char **strings = calloc(n ? n : 1, sizeof *strings); /* BYTES outputs, encoded */
    rn_status st = tensors && list && raw && strings
                       ? RN_OK
                       : rn_set_error(RN_OUT_OF_MEMORY, "no memory for %zu outputs", n);
    for (size_t i = 0; i < n && st == RN_OK; i++) {
        const rn_tensor *t = outputs[i].tensor;
        const char *dt = server_datatype_name(rn_tensor_element_type(t));
        if (dt == NULL) {
            st = rn_set_error(RN_INVALID_ARG, "output '%s': element type %s has no v2 datatype",
                              outputs[i].name, rn_element_type_name(rn_tensor_element_type(t)));
            break;
        }
        output_tensor o = INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
        o.name = (char *)outputs[i].name;
        o.datatype = (char *)dt;
        o.n_shape = rn_tensor_rank(t);
        o.shape = (int64_t *)rn_tensor_dims(t);
        tensors[i] = o;
        list[i] = &tensors[i];
        if (rn_tensor_element_type(t) == RN_STRING) {
            size_t size = server_bytes_size(t);
            if ((strings[i] = malloc(size ? size : 1)) == NULL) {
                st = rn_set_error(RN_OUT_OF_MEMORY, "output '%s': no memory", outputs[i].name);
                break;
            }
            server_bytes_write(t, strings[i]);
            raw[i] = (ProtobufCBinaryData){size, strings[i]};
        } else {
            static uint8_t none[1]; /* an empty tensor may have no data pointer */
            size_t size = rn_tensor_byte_size(t);
            raw[i] = (ProtobufCBinaryData){size, size ? rn_tensor_data((rn_tensor *)t) : none};
        }
    }
    if (st == RN_OK) {
        r.n_outputs = r.n_raw_output_contents = n;
        r.outputs = list;
        r.raw_output_contents = raw;
        Inference__ModelStreamInferResponse s = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
        s.infer_response = &r;
        st = server_grpc_pack(stream ? &s.base : &r.base, out);
    }
    for (size_t i = 0; strings && i < n; i++)
        free(strings[i]);
    free(strings);
    free(raw);
    free(list);
    free(tensors);
    return st;
}

rn_status server_grpc_stream_error(const char *model, const char *version, const char *id,
                                   const char *message, server_response *out)
{
    Inference__ModelInferResponse r = INFERENCE__MODEL_INFER_RESPONSE__INIT;
    if (model != NULL)
        r.model_name = (char *)model;
    if (version != NULL)
        r.model_version = (char *)version;
    if (id != NULL)
        r.id = (char *)id;
    Inference__ModelStreamInferResponse s = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
    s.error_message = (char *)message;
    s.infer_response = &r;
    return server_grpc_pack(&s.base, out);
}

int server_grpc_status_of_http(int http_status)
{
    switch (http_status) {
    case 200:
        return 0; /* GRPC_STATUS_OK */
    case 400:
    case 413:
        return 3; /* GRPC_STATUS_INVALID_ARGUMENT */
    case 404:
        return 5; /* GRPC_STATUS_NOT_FOUND */
    case 503:
        return 14; /* GRPC_STATUS_UNAVAILABLE */
    default:
        return 13; /* GRPC_STATUS_INTERNAL */
    }
}
