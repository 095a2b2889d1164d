/* runnel-server's gRPC codec: ModelInferRequest messages (packed by
 * protobuf-c, as a client's bytes) decoded into tensors, every bad request
 * refused with a message naming the problem, and responses that unpack
 * back to the outputs. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/grpc_codec.h"
#include "server/kserve.pb-c.h"

typedef Inference__ModelInferRequest request_t;
typedef Inference__ModelInferRequest__InferInputTensor input_t;

/* A request under construction: up to 4 inputs, raw or typed. */
typedef struct builder {
    request_t r;
    input_t inputs[4];
    input_t *list[4];
    Inference__InferTensorContents contents[4];
    ProtobufCBinaryData raw[4];
    int64_t shapes[4][4];
    Inference__ModelInferRequest__ParametersEntry param;
    Inference__ModelInferRequest__ParametersEntry *params[1];
    Inference__InferParameter value;
} builder;

static void init(builder *b, const char *model)
{
    memset(b, 0, sizeof *b);
    request_t r = INFERENCE__MODEL_INFER_REQUEST__INIT;
    b->r = r;
    b->r.model_name = (char *)model;
    b->r.inputs = b->list;
}

static input_t *add_input(builder *b, const char *name, const char *datatype, const int64_t *shape,
                          size_t rank)
{
    size_t i = b->r.n_inputs++;
    input_t in = INFERENCE__MODEL_INFER_REQUEST__INFER_INPUT_TENSOR__INIT;
    in.name = (char *)name;
    in.datatype = (char *)datatype;
    memcpy(b->shapes[i], shape, rank * sizeof *shape);
    in.shape = b->shapes[i];
    in.n_shape = rank;
    b->inputs[i] = in;
    b->list[i] = &b->inputs[i];
    return &b->inputs[i];
}

static void add_raw(builder *b, const void *data, size_t size)
{
    b->raw[b->r.n_raw_input_contents++] = (ProtobufCBinaryData){size, (uint8_t *)data};
    b->r.raw_input_contents = b->raw;
}

static Inference__InferTensorContents *typed(builder *b, input_t *in)
{
    size_t i = (size_t)(in - b->inputs);
    Inference__InferTensorContents c = INFERENCE__INFER_TENSOR_CONTENTS__INIT;
    b->contents[i] = c;
    in->contents = &b->contents[i];
    return in->contents;
}

static void set_param(builder *b, const char *key, int64_t value)
{
    Inference__ModelInferRequest__ParametersEntry e =
        INFERENCE__MODEL_INFER_REQUEST__PARAMETERS_ENTRY__INIT;
    Inference__InferParameter v = INFERENCE__INFER_PARAMETER__INIT;
    v.parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
    v.int64_param = value;
    b->value = v;
    e.key = (char *)key;
    e.value = &b->value;
    b->param = e;
    b->params[0] = &b->param;
    b->r.parameters = b->params;
    b->r.n_parameters = 1;
}

/* Packs the request as a client would send it and decodes it. */
static rn_status decode(builder *b, server_grpc_infer *out)
{
    size_t size = inference__model_infer_request__get_packed_size(&b->r);
    uint8_t *bytes = malloc(size ? size : 1);
    inference__model_infer_request__pack(&b->r, bytes);
    rn_status st = server_grpc_infer_decode(bytes, size, out);
    free(bytes); /* the decoded request must not need the client's bytes */
    return st;
}

static void expect_error(builder *b, const char *needle)
{
    server_grpc_infer q;
    memset(&q, 0x5a, sizeof q);
    cr_assert_eq(decode(b, &q), RN_INVALID_ARG, "accepted; wanted an error with '%s'", needle);
    cr_assert(strstr(rn_last_error(), needle) != NULL, "'%s' lacks '%s'", rn_last_error(), needle);
    cr_assert_eq(q.message, (void *)0x5a5a5a5a5a5a5a5a, "out written on error");
}

Test(grpc_codec, raw_inputs_decode_to_tensors)
{
    builder b;
    init(&b, "add");
    b.r.model_version = "2";
    b.r.id = "req-7";
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    add_input(&b, "x", "FP32", shape, 2);
    add_raw(&b, x, sizeof x);
    const unsigned char strings[] = {3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0};
    int64_t two[1] = {2};
    add_input(&b, "s", "BYTES", two, 1);
    add_raw(&b, strings, sizeof strings);
    set_param(&b, "sequence_id", 42);
    server_grpc_infer q;
    cr_assert_eq(decode(&b, &q), RN_OK, "%s", rn_last_error());
    cr_assert_eq(q.infer.sequence_id, 42);
    server_grpc_infer_clear(&q);
    set_param(&b, "timeout", 2500);
    cr_assert_eq(decode(&b, &q), RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(q.model, "add");
    cr_assert_str_eq(q.version, "2");
    cr_assert_str_eq(q.infer.id, "req-7");
    cr_assert_eq(q.infer.timeout_us, 2500);
    cr_assert_eq(q.infer.n_inputs, 2);
    cr_assert_str_eq(q.infer.inputs[0].name, "x");
    const rn_tensor *t = q.infer.inputs[0].tensor;
    cr_assert_eq(rn_tensor_element_type(t), RN_F32);
    cr_assert_eq(rn_tensor_rank(t), 2);
    cr_assert_eq(rn_tensor_dims(t)[0], 2);
    cr_assert_eq(rn_tensor_dims(t)[1], 3);
    cr_assert_eq(memcmp(rn_tensor_data((rn_tensor *)t), x, sizeof x), 0);
    const rn_tensor *s = q.infer.inputs[1].tensor;
    cr_assert_str_eq(rn_tensor_get_string(s, 0), "abc");
    cr_assert_str_eq(rn_tensor_get_string(s, 1), "");
    cr_assert_eq(q.infer.n_outputs, 0);
    server_grpc_infer_clear(&q);
    cr_assert_null(q.message);
}

/* Packs the request into a malloc'ed buffer of *size bytes. */
static uint8_t *pack(builder *b, size_t *size)
{
    *size = inference__model_infer_request__get_packed_size(&b->r);
    uint8_t *bytes = malloc(*size + 64); /* room for fields appended by hand */
    cr_assert_not_null(bytes);
    inference__model_infer_request__pack(&b->r, bytes);
    return bytes;
}

/* A message in pieces (as gRPC's slices) decodes as the whole one: split
 * at every byte and at a few places, with a field written after the
 * raw_input_contents (which clients write last); each raw input lands
 * 64-byte aligned (a message's bytes have no alignment, kernels want it)
 * with the values sent. */
Test(grpc_codec, message_in_pieces_decodes_to_aligned_tensors)
{
    builder b;
    init(&b, "add");
    float x[6] = {1, 2, 3, 4, 5, 6};
    int32_t y[3] = {-7, 9, 11};
    int64_t shape[2] = {2, 3}, three[1] = {3};
    add_input(&b, "x", "FP32", shape, 2);
    add_raw(&b, x, sizeof x);
    add_input(&b, "y", "INT32", three, 1);
    add_raw(&b, y, sizeof y);
    size_t size;
    uint8_t *bytes = pack(&b, &size);
    const uint8_t id[] = {3 << 3 | 2, 4, 'l', 'a', 't', 'e'}; /* id = "late", field 3 */
    memcpy(bytes + size, id, sizeof id);
    size_t n_bytes = size + sizeof id;
    server_grpc_piece pieces[256];
    cr_assert(n_bytes <= 256);
    for (int split = 0; split < 3; split++) {
        size_t n = 0;
        if (split == 0) { /* one piece */
            pieces[n++] = (server_grpc_piece){bytes, n_bytes};
        } else if (split == 1) { /* every byte */
            for (size_t i = 0; i < n_bytes; i++)
                pieces[n++] = (server_grpc_piece){bytes + i, 1};
        } else { /* an empty piece, cuts after the first tag, before a length, in a tensor */
            size_t cuts[] = {0, 0, 1, size - sizeof y - 1, size - 3, n_bytes};
            for (size_t i = 0; i + 1 < sizeof cuts / sizeof *cuts; i++)
                pieces[n++] = (server_grpc_piece){bytes + cuts[i], cuts[i + 1] - cuts[i]};
        }
        server_grpc_infer q;
        cr_assert_eq(server_grpc_infer_decode_pieces(pieces, n, &q), RN_OK, "split %d: %s", split,
                     rn_last_error());
        cr_assert_str_eq(q.model, "add");
        cr_assert_str_eq(q.infer.id, "late");
        cr_assert_eq(q.infer.n_inputs, 2);
        const void *px = rn_tensor_data(q.infer.inputs[0].tensor);
        const void *py = rn_tensor_data(q.infer.inputs[1].tensor);
        cr_assert_eq((uintptr_t)px % 64, 0, "x at %p", px);
        cr_assert_eq((uintptr_t)py % 64, 0, "y at %p", py);
        cr_assert_eq(memcmp(px, x, sizeof x), 0, "split %d", split);
        cr_assert_eq(memcmp(py, y, sizeof y), 0, "split %d", split);
        server_grpc_infer_clear(&q);
    }
    free(bytes);
}

/* Messages the field walk does not take are protobuf-c's to judge: a
 * raw_input_contents that is not length-delimited, or a length past the
 * end, are refused as not a ModelInferRequest. */
Test(grpc_codec, view_decode_refuses_broken_raw_contents)
{
    builder b;
    init(&b, "add");
    float x[2] = {1, 2};
    int64_t two[1] = {2};
    add_input(&b, "x", "FP32", two, 1);
    size_t size;
    uint8_t *bytes = pack(&b, &size);
    const uint8_t varint7[] = {7 << 3 | 0, 5};
    const uint8_t too_long[] = {7 << 3 | 2, 100, 0, 0, 0, 0};
    const uint8_t *tails[] = {varint7, too_long};
    size_t lens[] = {sizeof varint7, sizeof too_long};
    for (size_t i = 0; i < 2; i++) {
        memcpy(bytes + size, tails[i], lens[i]);
        server_grpc_infer q;
        memset(&q, 0x5a, sizeof q);
        cr_assert_eq(server_grpc_infer_decode(bytes, size + lens[i], &q), RN_INVALID_ARG);
        cr_assert(strstr(rn_last_error(), "not a ModelInferRequest") != NULL, "%s",
                  rn_last_error());
        cr_assert_eq(q.message, (void *)0x5a5a5a5a5a5a5a5a, "out written on error");
    }
    /* With the contents given properly it decodes. */
    const uint8_t good[] = {7 << 3 | 2, 8};
    memcpy(bytes + size, good, sizeof good);
    memcpy(bytes + size + sizeof good, x, sizeof x);
    server_grpc_infer q;
    cr_assert_eq(server_grpc_infer_decode(bytes, size + sizeof good + sizeof x, &q), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(memcmp(rn_tensor_data(q.infer.inputs[0].tensor), x, sizeof x), 0);
    server_grpc_infer_clear(&q);
    free(bytes);
}

Test(grpc_codec, typed_contents_of_every_list)
{
    builder b;
    init(&b, "m");
    int64_t three[1] = {3};
    Inference__InferTensorContents *c = typed(&b, add_input(&b, "i8", "INT8", three, 1));
    int32_t ints[3] = {-128, 0, 127};
    c->int_contents = ints;
    c->n_int_contents = 3;
    c = typed(&b, add_input(&b, "u16", "UINT16", three, 1));
    uint32_t uints[3] = {0, 1, 65535};
    c->uint_contents = uints;
    c->n_uint_contents = 3;
    c = typed(&b, add_input(&b, "b", "BOOL", three, 1));
    protobuf_c_boolean bools[3] = {1, 0, 1};
    c->bool_contents = bools;
    c->n_bool_contents = 3;
    c = typed(&b, add_input(&b, "s", "BYTES", three, 1));
    ProtobufCBinaryData bytes[3] = {{2, (uint8_t *)"hi"}, {0, (uint8_t *)""}, {1, (uint8_t *)"z"}};
    c->bytes_contents = bytes;
    c->n_bytes_contents = 3;
    server_grpc_infer q;
    cr_assert_eq(decode(&b, &q), RN_OK, "%s", rn_last_error());
    const int8_t *i8 = rn_tensor_data(q.infer.inputs[0].tensor);
    cr_assert(i8[0] == -128 && i8[1] == 0 && i8[2] == 127);
    const uint16_t *u16 = rn_tensor_data(q.infer.inputs[1].tensor);
    cr_assert(u16[0] == 0 && u16[1] == 1 && u16[2] == 65535);
    const uint8_t *bo = rn_tensor_data(q.infer.inputs[2].tensor);
    cr_assert(bo[0] == 1 && bo[1] == 0 && bo[2] == 1);
    cr_assert_str_eq(rn_tensor_get_string(q.infer.inputs[3].tensor, 0), "hi");
    cr_assert_str_eq(rn_tensor_get_string(q.infer.inputs[3].tensor, 2), "z");
    server_grpc_infer_clear(&q);
}

Test(grpc_codec, bad_requests_are_refused_naming_the_problem)
{
    server_grpc_infer q;
    const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
    cr_assert_eq(server_grpc_infer_decode(garbage, sizeof garbage, &q), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "not a ModelInferRequest") != NULL, "%s", rn_last_error());

    builder b;
    int64_t shape[2] = {2, 3};
    float x[6] = {0};
    init(&b, "m");
    expect_error(&b, "no inputs");

    init(&b, "m");
    add_input(&b, "x", "FP33", shape, 2);
    add_raw(&b, x, sizeof x);
    expect_error(&b, "input 'x': unknown datatype 'FP33'");

    init(&b, "m");
    add_input(&b, "x", "FP32", shape, 2);
    add_raw(&b, x, sizeof x - 4);
    expect_error(&b, "input 'x': raw_input_contents has 20 bytes but shape [2,3] of FP32 needs 24");

    init(&b, "m");
    add_input(&b, "x", "FP32", shape, 2);
    add_input(&b, "y", "FP32", shape, 2);
    add_raw(&b, x, sizeof x);
    expect_error(&b, "raw_input_contents has 1 entries for 2 inputs");

    init(&b, "m");
    Inference__InferTensorContents *c = typed(&b, add_input(&b, "x", "INT32", shape, 2));
    float f[6] = {0};
    c->fp32_contents = f;
    c->n_fp32_contents = 6;
    expect_error(&b, "input 'x': datatype INT32 takes int_contents, but the contents fill "
                     "fp32_contents");

    init(&b, "m");
    c = typed(&b, add_input(&b, "x", "FP32", shape, 2));
    c->fp32_contents = f;
    c->n_fp32_contents = 5;
    expect_error(&b, "input 'x': the shape needs 6 values, fp32_contents has 5");

    init(&b, "m");
    int64_t one[1] = {1};
    c = typed(&b, add_input(&b, "x", "INT8", one, 1));
    int32_t big[1] = {300};
    c->int_contents = big;
    c->n_int_contents = 1;
    expect_error(&b, "input 'x': value 300 at index 0 is out of range for INT8");

    init(&b, "m");
    typed(&b, add_input(&b, "h", "FP16", one, 1));
    expect_error(&b, "input 'h': FP16 has no typed contents in the protocol");

    init(&b, "m");
    add_input(&b, "x", "FP32", one, 1);
    expect_error(&b, "input 'x': has no contents");

    init(&b, "m");
    typed(&b, add_input(&b, "x", "FP32", one, 1));
    add_raw(&b, x, 4);
    expect_error(&b, "input 'x': has typed contents while the request carries raw_input_contents");

    init(&b, "m");
    int64_t negative[2] = {2, -3};
    add_input(&b, "x", "FP32", negative, 2);
    add_raw(&b, x, sizeof x);
    expect_error(&b, "input 'x': shape dim 1 is not a non-negative integer");

    init(&b, "m");
    add_input(&b, "x", "FP32", one, 1);
    add_raw(&b, x, 4);
    add_input(&b, "x", "FP32", one, 1);
    add_raw(&b, x, 4);
    expect_error(&b, "input 'x' is given twice");

    init(&b, "m");
    add_input(&b, "s", "BYTES", one, 1);
    const unsigned char past[] = {9, 0, 0, 0, 'a'};
    add_raw(&b, past, sizeof past);
    expect_error(&b, "input 's': element 0 says 9 bytes but only 1 are left");

    init(&b, "m");
    c = typed(&b, add_input(&b, "s", "BYTES", one, 1));
    ProtobufCBinaryData nul[1] = {{3, (uint8_t *)"a\0b"}};
    c->bytes_contents = nul;
    c->n_bytes_contents = 1;
    expect_error(&b, "input 's': element 0 holds a NUL byte");

    init(&b, "m");
    add_input(&b, "x", "FP32", one, 1);
    add_raw(&b, x, 4);
    set_param(&b, "binary_data_output", 1);
    expect_error(&b, "request parameter 'binary_data_output' is not supported");

    init(&b, "m");
    add_input(&b, "x", "FP32", one, 1);
    add_raw(&b, x, 4);
    set_param(&b, "sequence_start", 1); /* an int64, not a bool */
    expect_error(&b, "parameter 'sequence_start' must be a bool");

    init(&b, "m");
    add_input(&b, "x", "FP32", one, 1);
    add_raw(&b, x, 4);
    set_param(&b, "timeout", -1);
    expect_error(&b, "parameter 'timeout' must be microseconds");
}

Test(grpc_codec, responses_unpack_to_the_outputs)
{
    int64_t dims[2] = {2, 2};
    rn_tensor *t, *s;
    cr_assert_eq(rn_tensor_create(RN_F32, dims, 2, &t), RN_OK);
    float *v = rn_tensor_data(t);
    for (int i = 0; i < 4; i++)
        v[i] = 0.5f * (float)i;
    int64_t two[1] = {2};
    cr_assert_eq(rn_tensor_create(RN_STRING, two, 1, &s), RN_OK);
    rn_tensor_set_string(s, 0, "xy");
    rn_tensor_set_string(s, 1, "");
    server_output outs[2] = {{"sum", t, 1}, {"text", s, 1}};
    server_response r;
    cr_assert_eq(server_grpc_response_encode("m", "3", "id-1", outs, 2, 0, &r), RN_OK);
    cr_assert_eq(r.header_size, 0);
    Inference__ModelInferResponse *m =
        inference__model_infer_response__unpack(NULL, r.size, (uint8_t *)r.body);
    cr_assert_not_null(m);
    cr_assert_str_eq(m->model_name, "m");
    cr_assert_str_eq(m->model_version, "3");
    cr_assert_str_eq(m->id, "id-1");
    cr_assert_eq(m->n_outputs, 2);
    cr_assert_eq(m->n_raw_output_contents, 2);
    cr_assert_str_eq(m->outputs[0]->name, "sum");
    cr_assert_str_eq(m->outputs[0]->datatype, "FP32");
    cr_assert_eq(m->outputs[0]->n_shape, 2);
    cr_assert_eq(m->raw_output_contents[0].len, sizeof(float) * 4);
    cr_assert_eq(memcmp(m->raw_output_contents[0].data, v, 16), 0);
    cr_assert_str_eq(m->outputs[1]->datatype, "BYTES");
    const unsigned char want[] = {2, 0, 0, 0, 'x', 'y', 0, 0, 0, 0};
    cr_assert_eq(m->raw_output_contents[1].len, sizeof want);
    cr_assert_eq(memcmp(m->raw_output_contents[1].data, want, sizeof want), 0);
    inference__model_infer_response__free_unpacked(m, NULL);
    free(r.body);

    /* in a stream: the same response inside a ModelStreamInferResponse */
    cr_assert_eq(server_grpc_response_encode("m", "3", NULL, outs, 1, 1, &r), RN_OK);
    Inference__ModelStreamInferResponse *sr =
        inference__model_stream_infer_response__unpack(NULL, r.size, (uint8_t *)r.body);
    cr_assert_not_null(sr);
    cr_assert_str_eq(sr->error_message, "");
    cr_assert_str_eq(sr->infer_response->outputs[0]->name, "sum");
    cr_assert_str_eq(sr->infer_response->id, "");
    inference__model_stream_infer_response__free_unpacked(sr, NULL);
    free(r.body);

    cr_assert_eq(server_grpc_stream_error("m", NULL, "r9", "no model 'm' is loaded", &r), RN_OK);
    sr = inference__model_stream_infer_response__unpack(NULL, r.size, (uint8_t *)r.body);
    cr_assert_str_eq(sr->error_message, "no model 'm' is loaded");
    cr_assert_str_eq(sr->infer_response->id, "r9");
    inference__model_stream_infer_response__free_unpacked(sr, NULL);
    free(r.body);
    rn_tensor_free(t);
    rn_tensor_free(s);
}

Test(grpc_codec, http_statuses_map_to_grpc_codes)
{
    cr_assert_eq(server_grpc_status_of_http(200), 0);  /* OK */
    cr_assert_eq(server_grpc_status_of_http(400), 3);  /* INVALID_ARGUMENT */
    cr_assert_eq(server_grpc_status_of_http(404), 5);  /* NOT_FOUND */
    cr_assert_eq(server_grpc_status_of_http(503), 14); /* UNAVAILABLE */
    cr_assert_eq(server_grpc_status_of_http(500), 13); /* INTERNAL */
}
