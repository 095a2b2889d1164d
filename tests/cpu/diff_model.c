/* The generated models' ONNX writer (diff_model.h). */
#include "tests/cpu/diff_model.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "third_party/onnx_proto/onnx.pb-c.h"

#define DM_MAX_GRAPHS  8
#define DM_MAX_NODES   96
#define DM_MAX_INITS   64
#define DM_MAX_IO      16
#define DM_MAX_ATTRS   10
#define DM_MAX_NODE_IO 72

/* Every allocation of a model, freed together. */
typedef struct dm_block {
    struct dm_block *next;
    max_align_t data[];
} dm_block;

struct dm_graph {
    dm_model *m;
    Onnx__GraphProto proto;
    Onnx__NodeProto *nodes[DM_MAX_NODES];
    Onnx__TensorProto *inits[DM_MAX_INITS];
    Onnx__ValueInfoProto *inputs[DM_MAX_IO], *outputs[DM_MAX_IO];
};

struct dm_model {
    dm_block *blocks;
    Onnx__ModelProto proto;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    dm_graph *graphs[DM_MAX_GRAPHS];
    int n_graphs;
    int n_names;
};

static void *dm_alloc(dm_model *m, size_t size)
{
    dm_block *b = calloc(1, sizeof *b + size + 1);
    assert(b != NULL);
    b->next = m->blocks;
    m->blocks = b;
    return b->data;
}

static char *dm_strdup(dm_model *m, const char *s)
{
    size_t n = strlen(s);
    char *c = dm_alloc(m, n + 1);
    memcpy(c, s, n + 1);
    return c;
}

static dm_graph *graph_new(dm_model *m, const char *name)
{
    assert(m->n_graphs < DM_MAX_GRAPHS);
    dm_graph *g = dm_alloc(m, sizeof *g);
    g->m = m;
    onnx__graph_proto__init(&g->proto);
    g->proto.name = dm_strdup(m, name);
    g->proto.node = g->nodes;
    g->proto.initializer = g->inits;
    g->proto.input = g->inputs;
    g->proto.output = g->outputs;
    m->graphs[m->n_graphs++] = g;
    return g;
}

dm_model *dm_model_create(int opset)
{
    dm_model *m = calloc(1, sizeof *m);
    assert(m != NULL);
    onnx__model_proto__init(&m->proto);
    onnx__operator_set_id_proto__init(&m->opset);
    m->opset.domain = "";
    m->opset.has_version = 1;
    m->opset.version = opset;
    m->opsets[0] = &m->opset;
    m->proto.has_ir_version = 1;
    m->proto.ir_version = 8;
    m->proto.n_opset_import = 1;
    m->proto.opset_import = m->opsets;
    m->proto.producer_name = "runnel tests/cpu/diff_model.c";
    m->proto.graph = &graph_new(m, "cpu_diff")->proto;
    return m;
}

void dm_model_free(dm_model *m)
{
    if (m == NULL)
        return;
    for (dm_block *b = m->blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(m);
}

dm_graph *dm_main(dm_model *m)
{
    return m->graphs[0];
}

void dm_set_opset(dm_model *m, int opset)
{
    m->opset.version = opset;
}

dm_graph *dm_subgraph(dm_model *m, const char *name)
{
    return graph_new(m, name);
}

const char *dm_fresh(dm_model *m, const char *prefix)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s%d", prefix, m->n_names++);
    return dm_strdup(m, buf);
}

static Onnx__ValueInfoProto *value_info(dm_model *m, const char *name, int elem, int rank,
                                        const int64_t *dims, const char *const *params)
{
    Onnx__ValueInfoProto *vi = dm_alloc(m, sizeof *vi);
    Onnx__TypeProto *tp = dm_alloc(m, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = dm_alloc(m, sizeof *tt);
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sp = dm_alloc(m, sizeof *sp);
        onnx__tensor_shape_proto__init(sp);
        sp->n_dim = (size_t)rank;
        sp->dim = dm_alloc(m, sizeof *sp->dim * (size_t)(rank + 1));
        for (int d = 0; d < rank; d++) {
            Onnx__TensorShapeProto__Dimension *dim = dm_alloc(m, sizeof *dim);
            onnx__tensor_shape_proto__dimension__init(dim);
            if (params != NULL && params[d] != NULL) {
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                dim->dim_param = dm_strdup(m, params[d]);
            } else {
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dim->dim_value = dims[d];
            }
            sp->dim[d] = dim;
        }
        tt->shape = sp;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->name = dm_strdup(m, name);
    vi->type = tp;
    return vi;
}

void dm_input(dm_graph *g, const char *name, int elem, int rank, const int64_t *dims,
              const char *const *params)
{
    assert(g->proto.n_input < DM_MAX_IO);
    g->inputs[g->proto.n_input++] = value_info(g->m, name, elem, rank, dims, params);
}

void dm_output(dm_graph *g, const char *name, int elem)
{
    assert(g->proto.n_output < DM_MAX_IO);
    g->outputs[g->proto.n_output++] = value_info(g->m, name, elem, -1, NULL, NULL);
}

const char *dm_init(dm_graph *g, int elem, size_t elem_size, int rank, const int64_t *dims,
                    const void *data)
{
    assert(g->proto.n_initializer < DM_MAX_INITS);
    Onnx__TensorProto *t = dm_alloc(g->m, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = (char *)dm_fresh(g->m, "c");
    t->has_data_type = 1;
    t->data_type = elem;
    t->n_dims = (size_t)rank;
    t->dims = dm_alloc(g->m, sizeof(int64_t) * (size_t)(rank + 1));
    size_t n = 1;
    for (int d = 0; d < rank; d++) {
        t->dims[d] = dims[d];
        n *= (size_t)dims[d];
    }
    t->has_raw_data = 1;
    t->raw_data.len = n * elem_size;
    t->raw_data.data = dm_alloc(g->m, n * elem_size);
    if (n > 0)
        memcpy(t->raw_data.data, data, n * elem_size);
    g->inits[g->proto.n_initializer++] = t;
    return t->name;
}

const char *dm_init_i64(dm_graph *g, int rank, const int64_t *dims, const int64_t *data)
{
    return dm_init(g, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 8, rank, dims, data);
}

const char *dm_init_f32(dm_graph *g, int rank, const int64_t *dims, const float *data)
{
    return dm_init(g, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 4, rank, dims, data);
}

const char *dm_scalar_i64(dm_graph *g, int64_t v)
{
    return dm_init_i64(g, 0, NULL, &v);
}

const char *dm_vec_i64(dm_graph *g, int n, const int64_t *v)
{
    int64_t d = n;
    return dm_init_i64(g, 1, &d, v);
}

const char *dm_node(dm_graph *g, const char *op, int n_in, const char *const *ins, int n_out,
                    const char **outs)
{
    assert(g->proto.n_node < DM_MAX_NODES && n_in <= DM_MAX_NODE_IO && n_out <= DM_MAX_NODE_IO);
    dm_model *m = g->m;
    Onnx__NodeProto *n = dm_alloc(m, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = dm_strdup(m, op);
    n->name = (char *)dm_fresh(m, op);
    n->n_input = (size_t)n_in;
    n->input = dm_alloc(m, sizeof(char *) * (size_t)(n_in + 1));
    for (int i = 0; i < n_in; i++)
        n->input[i] = dm_strdup(m, ins[i]);
    n->n_output = (size_t)n_out;
    n->output = dm_alloc(m, sizeof(char *) * (size_t)(n_out + 1));
    for (int i = 0; i < n_out; i++) {
        n->output[i] = (char *)dm_fresh(m, "v");
        if (outs != NULL)
            outs[i] = n->output[i];
    }
    n->attribute = dm_alloc(m, sizeof(Onnx__AttributeProto *) * DM_MAX_ATTRS);
    g->nodes[g->proto.n_node++] = n;
    return n_out > 0 ? n->output[0] : NULL;
}

const char *dm_op1(dm_graph *g, const char *op, const char *a)
{
    return dm_node(g, op, 1, &a, 1, NULL);
}

const char *dm_op2(dm_graph *g, const char *op, const char *a, const char *b)
{
    const char *ins[2] = {a, b};
    return dm_node(g, op, 2, ins, 1, NULL);
}

static Onnx__AttributeProto *attr_new(dm_graph *g, const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    assert(g->proto.n_node > 0);
    Onnx__NodeProto *n = g->nodes[g->proto.n_node - 1];
    assert(n->n_attribute < DM_MAX_ATTRS);
    Onnx__AttributeProto *a = dm_alloc(g->m, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = dm_strdup(g->m, name);
    a->has_type = 1;
    a->type = type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

void dm_attr_int(dm_graph *g, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = attr_new(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void dm_attr_float(dm_graph *g, const char *name, float v)
{
    Onnx__AttributeProto *a = attr_new(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void dm_attr_string(dm_graph *g, const char *name, const char *s)
{
    Onnx__AttributeProto *a = attr_new(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(s);
    a->s.data = (uint8_t *)dm_strdup(g->m, s);
}

void dm_attr_ints(dm_graph *g, const char *name, int n, const int64_t *v)
{
    Onnx__AttributeProto *a = attr_new(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)n;
    a->ints = dm_alloc(g->m, sizeof(int64_t) * (size_t)(n + 1));
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
}

void dm_attr_floats(dm_graph *g, const char *name, int n, const float *v)
{
    Onnx__AttributeProto *a = attr_new(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = (size_t)n;
    a->floats = dm_alloc(g->m, sizeof(float) * (size_t)(n + 1));
    memcpy(a->floats, v, sizeof(float) * (size_t)n);
}

void dm_attr_graph(dm_graph *g, const char *name, dm_graph *sub)
{
    Onnx__AttributeProto *a = attr_new(g, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = &sub->proto;
}

uint8_t *dm_pack(dm_model *m, size_t *size)
{
    size_t n = onnx__model_proto__get_packed_size(&m->proto);
    uint8_t *buf = malloc(n + 1);
    assert(buf != NULL);
    *size = onnx__model_proto__pack(&m->proto, buf);
    return buf;
}
