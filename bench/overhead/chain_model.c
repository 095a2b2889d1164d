/* bench/overhead's model as ONNX bytes (see chain_model.h). */
#include "bench/overhead/chain_model.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing byte buffer that protobuf fields are appended to; `failed`
 * records an allocation failure, checked once at the end. */
typedef struct pb {
    uint8_t *data;
    size_t len, cap;
    bool failed;
} pb;

enum { WIRE_VARINT = 0, WIRE_BYTES = 2 };
enum { ONNX_FLOAT = 1, ONNX_IR_VERSION = 8, ONNX_OPSET = 13 };

static void pb_put(pb *b, const void *bytes, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *data = realloc(b->data, cap);
        if (data == NULL) {
            b->failed = true;
            return;
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

static void pb_varint(pb *b, uint64_t v)
{
    uint8_t bytes[10];
    size_t n = 0;
    do {
        bytes[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v != 0);
    pb_put(b, bytes, n);
}

static void pb_int(pb *b, int field, uint64_t v)
{
    pb_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
    pb_varint(b, v);
}

static void pb_bytes(pb *b, int field, const void *bytes, size_t n)
{
    pb_varint(b, (uint64_t)field << 3 | WIRE_BYTES);
    pb_varint(b, n);
    pb_put(b, bytes, n);
}

static void pb_string(pb *b, int field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

/* Appends `sub` as an embedded message and frees it. */
static void pb_message(pb *b, int field, pb *sub)
{
    b->failed |= sub->failed;
    pb_bytes(b, field, sub->data, sub->len);
    free(sub->data);
    *sub = (pb){0};
}

/* ValueInfoProto of a float vector of `width` elements. */
static void value_info(pb *graph, int field, const char *name, int width)
{
    pb dim = {0}, shape = {0}, tensor = {0}, type = {0}, info = {0};
    pb_int(&dim, 1, (uint64_t)width); /* Dimension.dim_value */
    pb_message(&shape, 1, &dim);      /* TensorShapeProto.dim */
    pb_int(&tensor, 1, ONNX_FLOAT);   /* TypeProto.Tensor.elem_type */
    pb_message(&tensor, 2, &shape);   /* TypeProto.Tensor.shape */
    pb_message(&type, 1, &tensor);    /* TypeProto.tensor_type */
    pb_string(&info, 1, name);        /* ValueInfoProto.name */
    pb_message(&info, 2, &type);      /* ValueInfoProto.type */
    pb_message(graph, field, &info);
}

float chain_constant(int i, int j)
{
    return (float)((i * 7 + j) % 16) * 0.125f;
}

uint8_t *chain_model_encode(int n_nodes, int width, size_t *size)
{
    pb graph = {0}, model = {0};
    float *values = malloc(sizeof(float) * (size_t)width);
    if (values == NULL)
        return NULL;
    char in[32], out[32], constant[32], name[32];
    for (int i = 0; i < n_nodes; i++) {
        pb node = {0}, init = {0};
        snprintf(in, sizeof in, i == 0 ? "x" : "y%d", i);
        snprintf(out, sizeof out, i == n_nodes - 1 ? "y" : "y%d", i + 1);
        snprintf(constant, sizeof constant, "c%d", i);
        snprintf(name, sizeof name, "add%d", i);
        pb_string(&node, 1, in); /* NodeProto.input */
        pb_string(&node, 1, constant);
        pb_string(&node, 2, out);   /* NodeProto.output */
        pb_string(&node, 3, name);  /* NodeProto.name */
        pb_string(&node, 4, "Add"); /* NodeProto.op_type */
        pb_message(&graph, 1, &node);

        /* raw_data is little-endian, as x86-64's and AArch64's floats are */
        for (int j = 0; j < width; j++)
            values[j] = chain_constant(i, j);
        pb_int(&init, 1, (uint64_t)width);                         /* TensorProto.dims */
        pb_int(&init, 2, ONNX_FLOAT);                              /* TensorProto.data_type */
        pb_string(&init, 8, constant);                             /* TensorProto.name */
        pb_bytes(&init, 9, values, sizeof(float) * (size_t)width); /* TensorProto.raw_data */
        pb_message(&graph, 5, &init);                              /* GraphProto.initializer */
    }
    free(values);
    pb_string(&graph, 2, "add_chain");  /* GraphProto.name */
    value_info(&graph, 11, "x", width); /* GraphProto.input */
    value_info(&graph, 12, "y", width); /* GraphProto.output */

    pb opset = {0};
    pb_string(&opset, 1, "");                      /* OperatorSetIdProto.domain */
    pb_int(&opset, 2, ONNX_OPSET);                 /* OperatorSetIdProto.version */
    pb_int(&model, 1, ONNX_IR_VERSION);            /* ModelProto.ir_version */
    pb_string(&model, 2, "runnel bench/overhead"); /* ModelProto.producer_name */
    pb_message(&model, 7, &graph);                 /* ModelProto.graph */
    pb_message(&model, 8, &opset);                 /* ModelProto.opset_import */
    if (model.failed) {
        free(model.data);
        return NULL;
    }
    *size = model.len;
    return model.data;
}
