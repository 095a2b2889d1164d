/* The v2 codec of runnel-server: datatypes, half floats, infer requests in
 * JSON (nested and flat) and binary tensor data, responses and errors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/batch.h"
#include "server/codec.h"

static server_infer parse_ok(const char *json)
{
    server_infer infer;
    rn_status st = server_infer_parse(json, strlen(json), SIZE_MAX, &infer);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    return infer;
}

static void parse_fails(const char *body, size_t size, size_t header, const char *needle)
{
    server_infer infer;
    memset(&infer, 0x5a, sizeof infer);
    server_infer untouched = infer;
    cr_assert_eq(server_infer_parse(body, size, header, &infer), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), needle) != NULL, "message '%s' lacks '%s'", rn_last_error(),
              needle);
    cr_assert(memcmp(&infer, &untouched, sizeof infer) == 0, "out written on error");
}

Test(codec, datatypes_round_trip)
{
    const char *names[] = {"BOOL",  "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
                           "INT32", "INT64", "FP16",   "FP32",   "FP64",   "BF16", "BYTES"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        rn_element_type t = server_datatype_parse(names[i]);
        cr_assert_neq(t, RN_UNDEFINED, "%s", names[i]);
        cr_assert_str_eq(server_datatype_name(t), names[i]);
    }
    cr_assert_eq(server_datatype_parse("FLOAT32"), RN_UNDEFINED);
    cr_assert_eq(server_datatype_parse("fp32"), RN_UNDEFINED);
    cr_assert_null(server_datatype_name(RN_F8E5M2));
}

Test(codec, half_floats_match_ieee_binary16)
{
    struct {
        float f;
        uint16_t h;
    } cases[] = {{1.0f, 0x3c00},          {-2.0f, 0xc000},         {65504.0f, 0x7bff},
                 {0.0f, 0x0000},          {-0.0f, 0x8000},         {5.9604645e-8f, 0x0001},
                 {0.1f, 0x2e66},          {65520.0f, 0x7c00},      {1e-8f, 0x0000},
                 {INFINITY, 0x7c00},      {6.1035156e-5f, 0x0400}, {1.0009766f, 0x3c01},
                 {1.00048828125f, 0x3c00} /* a tie rounds to even */};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_assert_eq(server_f32_to_f16(cases[i].f), cases[i].h, "%g -> %#x, want %#x",
                     (double)cases[i].f, server_f32_to_f16(cases[i].f), cases[i].h);
    cr_assert(isnan(server_f16_to_f32(server_f32_to_f16(NAN))));
    for (uint32_t h = 0; h < 0x7c00; h++) /* every finite half survives the round trip */
        cr_assert_eq(server_f32_to_f16(server_f16_to_f32((uint16_t)h)), h, "%#x", h);
}

Test(codec, nested_and_flat_data_give_the_same_tensor)
{
    server_infer a = parse_ok("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,3],"
                              "\"data\":[[1,2,3],[4,5.5,6]]}]}");
    server_infer b = parse_ok("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,3],"
                              "\"data\":[1,2,3,4,5.5,6]}]}");
    cr_assert_eq(a.n_inputs, 1);
    cr_assert_str_eq(a.inputs[0].name, "x");
    const rn_tensor *t = a.inputs[0].tensor;
    cr_assert_eq(rn_tensor_rank(t), 2);
    cr_assert_eq(rn_tensor_dims(t)[0], 2);
    cr_assert_eq(rn_tensor_dims(t)[1], 3);
    cr_assert_eq(((float *)rn_tensor_data(t))[4], 5.5f);
    cr_assert(memcmp(rn_tensor_data(t), rn_tensor_data(b.inputs[0].tensor), 6 * sizeof(float)) ==
              0);
    server_infer_clear(&a);
    server_infer_clear(&b);
}

Test(codec, every_numeric_datatype_reads_json)
{
    server_infer in = parse_ok(
        "{\"id\":\"7\",\"inputs\":["
        "{\"name\":\"b\",\"datatype\":\"BOOL\",\"shape\":[2],\"data\":[true,false]},"
        "{\"name\":\"u8\",\"datatype\":\"UINT8\",\"shape\":[1],\"data\":[255]},"
        "{\"name\":\"i8\",\"datatype\":\"INT8\",\"shape\":[1],\"data\":[-128]},"
        "{\"name\":\"u16\",\"datatype\":\"UINT16\",\"shape\":[1],\"data\":[65535]},"
        "{\"name\":\"i16\",\"datatype\":\"INT16\",\"shape\":[1],\"data\":[-3]},"
        "{\"name\":\"u32\",\"datatype\":\"UINT32\",\"shape\":[1],\"data\":[4294967295]},"
        "{\"name\":\"i32\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[-7]},"
        "{\"name\":\"u64\",\"datatype\":\"UINT64\",\"shape\":[1],\"data\":[9007199254740993]},"
        "{\"name\":\"i64\",\"datatype\":\"INT64\",\"shape\":[1],\"data\":[-9007199254740993]},"
        "{\"name\":\"h\",\"datatype\":\"FP16\",\"shape\":[1],\"data\":[1.5]},"
        "{\"name\":\"d\",\"datatype\":\"FP64\",\"shape\":[1],\"data\":[0.1]},"
        "{\"name\":\"bf\",\"datatype\":\"BF16\",\"shape\":[1],\"data\":[-2]},"
        "{\"name\":\"s\",\"datatype\":\"BYTES\",\"shape\":[1,2],\"data\":[[\"h\\u00e9\",\"\"]]}]}");
    cr_assert_str_eq(in.id, "7");
    cr_assert_eq(in.n_inputs, 13);
    uint8_t *b = rn_tensor_data(in.inputs[0].tensor);
    cr_assert(b[0] == 1 && b[1] == 0);
    cr_assert_eq(*(uint8_t *)rn_tensor_data(in.inputs[1].tensor), 255);
    cr_assert_eq(*(int8_t *)rn_tensor_data(in.inputs[2].tensor), -128);
    cr_assert_eq(*(uint16_t *)rn_tensor_data(in.inputs[3].tensor), 65535);
    cr_assert_eq(*(int16_t *)rn_tensor_data(in.inputs[4].tensor), -3);
    cr_assert_eq(*(uint32_t *)rn_tensor_data(in.inputs[5].tensor), 4294967295u);
    cr_assert_eq(*(int32_t *)rn_tensor_data(in.inputs[6].tensor), -7);
    cr_assert_eq(*(uint64_t *)rn_tensor_data(in.inputs[7].tensor), 9007199254740993ull);
    cr_assert_eq(*(int64_t *)rn_tensor_data(in.inputs[8].tensor), -9007199254740993ll);
    cr_assert_eq(*(uint16_t *)rn_tensor_data(in.inputs[9].tensor), 0x3e00);
    cr_assert_eq(*(double *)rn_tensor_data(in.inputs[10].tensor), 0.1);
    cr_assert_eq(*(uint16_t *)rn_tensor_data(in.inputs[11].tensor), 0xc000);
    cr_assert_eq(rn_tensor_element_type(in.inputs[12].tensor), RN_STRING);
    cr_assert_str_eq(rn_tensor_get_string(in.inputs[12].tensor, 0), "h\xc3\xa9");
    cr_assert_str_eq(rn_tensor_get_string(in.inputs[12].tensor, 1), "");
    server_infer_clear(&in);
}

Test(codec, bad_json_requests_name_the_problem)
{
#define FAILS(json, needle) parse_fails(json, strlen(json), SIZE_MAX, needle)
    FAILS("{\"inputs\":[", "malformed JSON");
    FAILS("[1,2]", "JSON object");
    FAILS("{\"inputs\":[]}", "non-empty array");
    FAILS("{\"inputs\":[{\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}", "no 'name'");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FLOAT\",\"shape\":[1],\"data\":[1]}]}",
          "input 'x': unknown datatype 'FLOAT'");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,2],\"data\":[1,2,3]}]}",
          "input 'x': shape [2,2] needs 4 values, 'data' has 3");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[-1],\"data\":[1]}]}",
          "not a non-negative integer");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT8\",\"shape\":[1],\"data\":[128]}]}",
          "value 128 at index 0 is out of range for INT8");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[1.5]}]}",
          "not an integer (INT32)");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[\"a\"]}]}",
          "not a number (FP32)");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BOOL\",\"shape\":[1],\"data\":[1]}]}",
          "not a boolean");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":["
          "\"a\\u0000b\"]}]}",
          "\\u0000 is not allowed");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]},"
          "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}",
          "input 'x' is given twice");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1]}]}",
          "neither 'data' nor binary_data_size");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}],"
          "\"outputs\":[{\"name\":\"y\"},{\"name\":\"y\"}]}",
          "output 'y' is requested twice");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}],"
          "\"parameters\":{\"binary_data_output\":1}}",
          "binary_data_output must be a boolean");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}],"
          "\"parameters\":{\"timeout\":-5}}",
          "parameters.timeout must be microseconds");
    FAILS("{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[4000000000,4000000000,"
          "4000000000],\"data\":[1]}]}",
          "too many elements");
#undef FAILS
}

/* A request of a JSON header and binary tensor data, as tritonclient sends it. */
static size_t binary_request(char *buf, const char *header, const void *data, size_t n)
{
    size_t h = strlen(header);
    memcpy(buf, header, h);
    memcpy(buf + h, data, n);
    return h + n;
}

Test(codec, binary_tensor_data)
{
    const char *header = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2],"
                         "\"parameters\":{\"binary_data_size\":8}},"
                         "{\"name\":\"s\",\"datatype\":\"BYTES\",\"shape\":[2],"
                         "\"parameters\":{\"binary_data_size\":11}}],"
                         "\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":true}},"
                         "{\"name\":\"z\"}]}";
    unsigned char data[19];
    float x[2] = {1.25f, -3.0f};
    memcpy(data, x, 8);
    memcpy(data + 8, "\x02\0\0\0ab\x01\0\0\0c", 11);
    char body[1024];
    size_t size = binary_request(body, header, data, sizeof data);
    server_infer in;
    cr_assert_eq(server_infer_parse(body, size, strlen(header), &in), RN_OK, "%s", rn_last_error());
    cr_assert_eq(((float *)rn_tensor_data(in.inputs[0].tensor))[1], -3.0f);
    cr_assert_str_eq(rn_tensor_get_string(in.inputs[1].tensor, 0), "ab");
    cr_assert_str_eq(rn_tensor_get_string(in.inputs[1].tensor, 1), "c");
    cr_assert_eq(in.n_outputs, 2);
    cr_assert(in.outputs[0].binary && !in.outputs[1].binary);
    server_infer_clear(&in);

    /* One byte short, one byte over, a header length past the body. */
    parse_fails(body, size - 1, strlen(header), "only 10 bytes of binary data are left");
    char longer[1024];
    memcpy(longer, body, size);
    longer[size] = 0;
    parse_fails(longer, size + 1, strlen(header), "1 bytes of binary data are left");
    parse_fails(body, size, size + 1, "Inference-Header-Content-Length is");
}

Test(codec, binary_sizes_must_match_the_shape)
{
    const char *header = "{\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[3],"
                         "\"parameters\":{\"binary_data_size\":8}}]}";
    char body[256];
    float x[2] = {0};
    size_t size = binary_request(body, header, x, sizeof x);
    parse_fails(body, size, strlen(header),
                "input 'x': binary_data_size is 8 bytes but shape [3] of FP32 needs 12");
    const char *bytes = "{\"inputs\":[{\"name\":\"s\",\"datatype\":\"BYTES\",\"shape\":[1],"
                        "\"parameters\":{\"binary_data_size\":6}}]}";
    size = binary_request(body, bytes, "\x05\0\0\0ab", 6);
    parse_fails(body, size, strlen(bytes), "element 0 says 5 bytes but only 2 are left");
}

Test(codec, response_json_and_binary)
{
    float y[3] = {0.5f, -1.0f, 3.25f};
    int64_t dims[1] = {3};
    rn_tensor *ty, *ts;
    cr_assert_eq(rn_tensor_wrap(RN_F32, dims, 1, y, sizeof y, &ty), RN_OK);
    int64_t sdims[1] = {2};
    cr_assert_eq(rn_tensor_create(RN_STRING, sdims, 1, &ts), RN_OK);
    rn_tensor_set_string(ts, 0, "ab");
    rn_tensor_set_string(ts, 1, "");
    server_output outs[2] = {{"y", ty, 1}, {"s", ts, 0}};
    server_response r;
    cr_assert_eq(server_response_encode("m", "2", "req", outs, 2, &r), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(r.size, r.header_size + sizeof y);
    cr_assert(memcmp(r.body + r.header_size, y, sizeof y) == 0);
    char *json = strndup(r.body, r.header_size);
    cr_assert(strstr(json, "\"model_name\":\"m\"") && strstr(json, "\"model_version\":\"2\"") &&
                  strstr(json, "\"id\":\"req\""),
              "%s", json);
    cr_assert(strstr(json, "{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[3],\"parameters\":"
                           "{\"binary_data_size\":12}}"),
              "%s", json);
    cr_assert(strstr(json, "\"data\":[\"ab\",\"\"]"), "%s", json);
    free(json);
    free(r.body);

    /* All JSON: no binary section, no header size. */
    outs[0].binary = 0;
    cr_assert_eq(server_response_encode("m", "2", NULL, outs, 2, &r), RN_OK);
    cr_assert_eq(r.header_size, 0);
    cr_assert(strstr(r.body, "\"data\":[0.5,-1.0,3.25]"), "%s", r.body);
    cr_assert_null(strstr(r.body, "\"id\""));
    free(r.body);

    /* NaN has no JSON form: an error that says to ask for binary data. */
    y[1] = NAN;
    cr_assert_eq(server_response_encode("m", "2", NULL, outs, 1, &r), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "output 'y': element 1") != NULL, "%s", rn_last_error());
    rn_tensor_free(ty);
    rn_tensor_free(ts);
}

Test(codec, binary_bytes_output_is_length_prefixed)
{
    int64_t dims[1] = {2};
    rn_tensor *ts;
    cr_assert_eq(rn_tensor_create(RN_STRING, dims, 1, &ts), RN_OK);
    rn_tensor_set_string(ts, 0, "xyz");
    rn_tensor_set_string(ts, 1, "q");
    server_output out = {"s", ts, 1};
    server_response r;
    cr_assert_eq(server_response_encode("m", "1", NULL, &out, 1, &r), RN_OK);
    cr_assert_eq(r.size - r.header_size, 12);
    cr_assert(memcmp(r.body + r.header_size, "\x03\0\0\0xyz\x01\0\0\0q", 12) == 0);
    free(r.body);
    rn_tensor_free(ts);
}

Test(codec, error_body)
{
    size_t size;
    char *body = server_error_body("input 'x': \"bad\"", &size);
    cr_assert_str_eq(body, "{\"error\":\"input 'x': \\\"bad\\\"\"}");
    cr_assert_eq(size, strlen(body));
    free(body);
}

Test(batch, concat_and_slice_numbers_and_strings)
{
    float a[2][3] = {{1, 2, 3}, {4, 5, 6}}, b[1][3] = {{7, 8, 9}};
    int64_t da[2] = {2, 3}, db[2] = {1, 3};
    rn_tensor *ta, *tb, *joined, *slice;
    cr_assert_eq(rn_tensor_wrap(RN_F32, da, 2, a, sizeof a, &ta), RN_OK);
    cr_assert_eq(rn_tensor_wrap(RN_F32, db, 2, b, sizeof b, &tb), RN_OK);
    rn_tensor *parts[2] = {ta, tb};
    cr_assert_eq(server_batch_concat(parts, 2, &joined), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_dims(joined)[0], 3);
    cr_assert_eq(((float *)rn_tensor_data(joined))[7], 8.0f);
    cr_assert_eq(server_batch_slice(joined, 1, 2, &slice), RN_OK);
    cr_assert_eq(rn_tensor_dims(slice)[0], 2);
    cr_assert_eq(((float *)rn_tensor_data(slice))[0], 4.0f);
    cr_assert_eq(((float *)rn_tensor_data(slice))[5], 9.0f);
    rn_tensor_free(slice);
    cr_assert_eq(server_batch_slice(joined, 2, 2, &slice), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "rows [2, 4) are not in an output of 3 rows"), "%s",
              rn_last_error());
    rn_tensor_free(joined);

    int64_t dc[2] = {1, 2};
    float c[2] = {0};
    rn_tensor *tc;
    cr_assert_eq(rn_tensor_wrap(RN_F32, dc, 2, c, sizeof c, &tc), RN_OK);
    parts[1] = tc;
    cr_assert_eq(server_batch_concat(parts, 2, &joined), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "part 1 has shape [1,2], part 0 [2,3]"), "%s",
              rn_last_error());

    int64_t ds[1] = {2};
    rn_tensor *s1, *s2;
    cr_assert_eq(rn_tensor_create(RN_STRING, ds, 1, &s1), RN_OK);
    cr_assert_eq(rn_tensor_create(RN_STRING, ds, 1, &s2), RN_OK);
    rn_tensor_set_string(s1, 0, "a");
    rn_tensor_set_string(s1, 1, "b");
    rn_tensor_set_string(s2, 0, "c");
    rn_tensor_set_string(s2, 1, "d");
    rn_tensor *sp[2] = {s1, s2};
    cr_assert_eq(server_batch_concat(sp, 2, &joined), RN_OK);
    cr_assert_eq(server_batch_slice(joined, 1, 2, &slice), RN_OK);
    cr_assert_str_eq(rn_tensor_get_string(slice, 0), "b");
    cr_assert_str_eq(rn_tensor_get_string(slice, 1), "c");
    rn_tensor_free(slice);
    rn_tensor_free(joined);
    rn_tensor_free(s1);
    rn_tensor_free(s2);
    rn_tensor_free(ta);
    rn_tensor_free(tb);
    rn_tensor_free(tc);
}
