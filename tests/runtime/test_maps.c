/* Maps through the public API: rn_tensor_create_map and its accessors,
 * sequences of maps, and skl2onnx's default classifier output (ZipMap, a
 * sequence of maps) read, compiled and run on REF, its result read with
 * rn_tensor_sequence_item and rn_tensor_map_keys / _values. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "runnel/runnel.h"

/* ---- a protobuf writer, just enough for one ZipMap model ---- */

typedef struct pb {
    uint8_t b[1024];
    size_t n;
} pb;

static void varint(pb *o, uint64_t v)
{
    do {
        cr_assert_lt(o->n, sizeof o->b);
        o->b[o->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void field_int(pb *o, int field, uint64_t v)
{
    varint(o, (uint64_t)field << 3);
    varint(o, v);
}

static void field_bytes(pb *o, int field, const void *p, size_t n)
{
    varint(o, (uint64_t)field << 3 | 2);
    varint(o, n);
    cr_assert_leq(o->n + n, sizeof o->b);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void field_str(pb *o, int field, const char *s)
{
    field_bytes(o, field, s, strlen(s));
}

static void field_msg(pb *o, int field, const pb *m)
{
    field_bytes(o, field, m->b, m->n);
}

/* X [2, 3] f32 -> ZipMap(classlabels_strings a, b, c) -> Z, declared
 * sequence(map(string, tensor(float))), as skl2onnx writes it. */
static pb zipmap_model(void)
{
    pb dim2 = {0}, dim3 = {0}, shape = {0}, xt = {0}, xtype = {0}, x = {0};
    field_int(&dim2, 1, 2);
    field_int(&dim3, 1, 3);
    field_msg(&shape, 1, &dim2);
    field_msg(&shape, 1, &dim3);
    field_int(&xt, 1, RN_F32);
    field_msg(&xt, 2, &shape);
    field_msg(&xtype, 1, &xt);
    field_str(&x, 1, "X");
    field_msg(&x, 2, &xtype);
    pb vt = {0}, vtype = {0}, mt = {0}, mtype = {0}, st = {0}, ztype = {0}, z = {0};
    field_int(&vt, 1, RN_F32);
    field_msg(&vtype, 1, &vt);
    field_int(&mt, 1, RN_STRING);
    field_msg(&mt, 2, &vtype);
    field_msg(&mtype, 5, &mt);
    field_msg(&st, 1, &mtype);
    field_msg(&ztype, 4, &st);
    field_str(&z, 1, "Z");
    field_msg(&z, 2, &ztype);
    pb attr = {0}, node = {0}, graph = {0}, onnx = {0}, ml = {0}, model = {0};
    field_str(&attr, 1, "classlabels_strings");
    field_str(&attr, 9, "a");
    field_str(&attr, 9, "b");
    field_str(&attr, 9, "c");
    field_int(&attr, 20, 8); /* STRINGS */
    field_str(&node, 1, "X");
    field_str(&node, 2, "Z");
    field_str(&node, 3, "zipmap");
    field_str(&node, 4, "ZipMap");
    field_msg(&node, 5, &attr);
    field_str(&node, 7, "ai.onnx.ml");
    field_msg(&graph, 1, &node);
    field_str(&graph, 2, "classifier");
    field_msg(&graph, 11, &x);
    field_msg(&graph, 12, &z);
    field_str(&onnx, 1, "");
    field_int(&onnx, 2, 17);
    field_str(&ml, 1, "ai.onnx.ml");
    field_int(&ml, 2, 1);
    field_int(&model, 1, 8);
    field_msg(&model, 7, &graph);
    field_msg(&model, 8, &onnx);
    field_msg(&model, 8, &ml);
    return model;
}

Test(maps, zipmap_model_runs_and_returns_a_sequence_of_maps)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    pb m = zipmap_model();
    rn_model *model;
    cr_assert_eq(rn_core_read_model_from_memory(core, m.b, m.n, NULL, &model), RN_OK, "%s",
                 rn_last_error());
    rn_port port;
    cr_assert_eq(rn_model_output(model, 0, &port), RN_OK);
    cr_assert_eq(port.kind, RN_PORT_SEQUENCE_MAP);
    cr_assert_eq(port.element_type, RN_F32);
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    rn_infer_request *req;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &req), RN_OK, "%s", rn_last_error());
    float x[] = {0.1f, 0.2f, 0.7f, 0.6f, 0.3f, 0.1f};
    rn_tensor *in;
    cr_assert_eq(rn_tensor_wrap(RN_F32, (int64_t[]){2, 3}, 2, x, sizeof x, &in), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(req, 0, in), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_infer(req), RN_OK, "%s", rn_last_error());
    rn_tensor *z;
    cr_assert_eq(rn_infer_request_get_output_tensor(req, 0, &z), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_kind(z), RN_VALUE_SEQUENCE);
    cr_assert_eq(rn_tensor_sequence_length(z), 2, "one map per row");
    static const char *const labels[] = {"a", "b", "c"};
    for (size_t row = 0; row < 2; row++) {
        rn_tensor *map, *keys, *values;
        cr_assert_eq(rn_tensor_sequence_item(z, row, &map), RN_OK);
        cr_assert_eq(rn_tensor_kind(map), RN_VALUE_MAP);
        cr_assert_eq(rn_tensor_map_key_type(map), RN_STRING);
        cr_assert_eq(rn_tensor_map_size(map), 3);
        cr_assert_eq(rn_tensor_element_type(map), RN_F32);
        cr_assert_eq(rn_tensor_map_keys(map, &keys), RN_OK);
        cr_assert_eq(rn_tensor_map_values(map, &values), RN_OK);
        const float *v = rn_tensor_data(values);
        for (size_t k = 0; k < 3; k++) {
            cr_assert_str_eq(rn_tensor_get_string(keys, k), labels[k]);
            cr_assert_eq(v[k], x[3 * row + k]);
        }
    }
    /* not a map: the accessors say so */
    rn_tensor *dummy;
    cr_assert_eq(rn_tensor_map_keys(z, &dummy), RN_INVALID_ARG);
    cr_assert_eq(rn_tensor_map_size(z), 0);
    cr_assert_eq(rn_tensor_map_key_type(in), RN_UNDEFINED);
    rn_tensor_free(in);
    rn_infer_request_free(req);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(maps, create_map_copies_and_checks_its_keys)
{
    int64_t k[] = {3, 1, 2};
    double v[] = {0.5, 1.5, 2.5};
    rn_tensor *keys, *values, *map, *map2;
    cr_assert_eq(rn_tensor_wrap(RN_I64, (int64_t[]){3}, 1, k, sizeof k, &keys), RN_OK);
    cr_assert_eq(rn_tensor_wrap(RN_F64, (int64_t[]){3}, 1, v, sizeof v, &values), RN_OK);
    cr_assert_eq(rn_tensor_create_map(keys, values, &map), RN_OK, "%s", rn_last_error());
    k[0] = 99; /* the map holds copies */
    rn_tensor *mk, *mv;
    cr_assert_eq(rn_tensor_map_keys(map, &mk), RN_OK);
    cr_assert_eq(rn_tensor_map_values(map, &mv), RN_OK);
    cr_assert_eq(((const int64_t *)rn_tensor_data(mk))[0], 3);
    cr_assert_eq(((const double *)rn_tensor_data(mv))[2], 2.5);
    cr_assert_eq(rn_tensor_element_type(map), RN_F64);
    cr_assert_eq(rn_tensor_element_count(map), 0, "a map is not a tensor of elements");
    /* a sequence of maps, and what cannot join it */
    k[0] = 4;
    cr_assert_eq(rn_tensor_create_map(keys, values, &map2), RN_OK, "%s", rn_last_error());
    rn_tensor *seq;
    cr_assert_eq(rn_tensor_create_sequence(RN_F64, (rn_tensor *[]){map, map2}, 2, &seq), RN_OK,
                 "%s", rn_last_error());
    rn_tensor_free(map2); /* the sequence holds copies */
    rn_tensor *item;
    cr_assert_eq(rn_tensor_sequence_item(seq, 1, &item), RN_OK);
    cr_assert_eq(rn_tensor_kind(item), RN_VALUE_MAP);
    cr_assert_eq(rn_tensor_map_keys(item, &mk), RN_OK);
    cr_assert_eq(((const int64_t *)rn_tensor_data(mk))[0], 4);
    rn_tensor_free(seq);
    cr_assert_eq(rn_tensor_create_sequence(RN_F64, (rn_tensor *[]){map, keys}, 2, &seq),
                 RN_INVALID_ARG, "maps and tensors do not mix");
    cr_assert_eq(rn_tensor_create_sequence(RN_F32, (rn_tensor *[]){map}, 1, &seq), RN_INVALID_ARG);
    /* repeated keys, lengths that differ, keys of another type */
    k[2] = 1;
    cr_assert_eq(rn_tensor_create_map(keys, values, &map2), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "key 2 repeats key 1") != NULL, "%s", rn_last_error());
    rn_tensor *short_values;
    cr_assert_eq(rn_tensor_wrap(RN_F64, (int64_t[]){2}, 1, v, 2 * sizeof *v, &short_values), RN_OK);
    cr_assert_eq(rn_tensor_create_map(keys, short_values, &map2), RN_INVALID_ARG);
    cr_assert_eq(rn_tensor_create_map(values, values, &map2), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "keys of element type f64") != NULL, "%s", rn_last_error());
    /* string keys must all be set */
    rn_tensor *skeys;
    cr_assert_eq(rn_tensor_create(RN_STRING, (int64_t[]){3}, 1, &skeys), RN_OK);
    cr_assert_eq(rn_tensor_set_string(skeys, 0, "x"), RN_OK);
    cr_assert_eq(rn_tensor_create_map(skeys, values, &map2), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "key 1 is not set") != NULL, "%s", rn_last_error());
    rn_tensor_free(skeys);
    rn_tensor_free(short_values);
    rn_tensor_free(map);
    rn_tensor_free(keys);
    rn_tensor_free(values);
}
