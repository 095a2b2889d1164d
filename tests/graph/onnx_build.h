/* Builders of ONNX protos for the reader tests (test_onnx_reader.c,
 * test_onnx_exporters.c): an arena freed after each test, graphs, nodes,
 * attributes, tensors and models built with protobuf-c, reading a built model
 * from memory, temporary files and shape assertions. Each test binary includes
 * it once. */
#ifndef RN_TESTS_GRAPH_ONNX_BUILD_H
#define RN_TESTS_GRAPH_ONNX_BUILD_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/onnx/onnx_reader.h"
#include "graph/ops.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* ---- an arena for the protos built here (each test runs in its own process) ---- */

#define MAX_ALLOCS 16384
static void *allocs[MAX_ALLOCS];
static int n_allocs;

static inline void *mem(size_t n)
{
    cr_assert_lt(n_allocs, MAX_ALLOCS);
    void *p = calloc(1, n ? n : 1);
    cr_assert_not_null(p);
    allocs[n_allocs++] = p;
    return p;
}

static inline char *str(const char *s)
{
    char *p = mem(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

static inline void free_all(void)
{
    for (int i = 0; i < n_allocs; i++)
        free(allocs[i]);
    n_allocs = 0;
}

/* ---- proto builders ---- */

#define CAP 64 /* entries of every repeated field built here */

static inline Onnx__GraphProto *new_graph(const char *name)
{
    Onnx__GraphProto *g = mem(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = str(name);
    g->node = mem(CAP * sizeof(void *));
    g->input = mem(CAP * sizeof(void *));
    g->output = mem(CAP * sizeof(void *));
    g->initializer = mem(CAP * sizeof(void *));
    g->value_info = mem(CAP * sizeof(void *));
    return g;
}

/* A tensor type of `elem`; rank -1 leaves the shape out; a dim of -1 is a
 * dim_param "N". */
static inline Onnx__ValueInfoProto *value_info(const char *name, int elem, int rank,
                                               const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = mem(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = str(name);
    Onnx__TypeProto *tp = mem(sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = mem(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = mem(sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        sh->n_dim = (size_t)rank;
        sh->dim = mem((size_t)rank * sizeof(void *));
        for (int i = 0; i < rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = mem(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] >= 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = str("N");
            }
            sh->dim[i] = d;
        }
        tt->shape = sh;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

static inline void add_input(Onnx__GraphProto *g, const char *name, int elem, int rank,
                             const int64_t *dims)
{
    g->input[g->n_input++] = value_info(name, elem, rank, dims);
}

static inline void add_output(Onnx__GraphProto *g, const char *name, int elem, int rank,
                              const int64_t *dims)
{
    g->output[g->n_output++] = value_info(name, elem, rank, dims);
}

/* Splits "a,b,,c" into names ("" entries are omitted optional values). */
static inline size_t split(const char *list, char ***out)
{
    char **v = mem(CAP * sizeof(char *));
    size_t n = 0;
    if (list[0] != '\0') {
        const char *p = list;
        for (;;) {
            size_t len = strcspn(p, ",");
            v[n] = mem(len + 1);
            memcpy(v[n++], p, len);
            if (p[len] == '\0')
                break;
            p += len + 1;
        }
    }
    *out = v;
    return n;
}

static inline Onnx__NodeProto *add_node(Onnx__GraphProto *g, const char *name, const char *op,
                                        const char *ins, const char *outs)
{
    Onnx__NodeProto *n = mem(sizeof *n);
    onnx__node_proto__init(n);
    n->name = str(name);
    n->op_type = str(op);
    n->n_input = split(ins, &n->input);
    n->n_output = split(outs, &n->output);
    n->attribute = mem(CAP * sizeof(void *));
    g->node[g->n_node++] = n;
    return n;
}

static inline Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = mem(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = str(name);
    a->has_type = 1;
    a->type = type;
    /* proto2 optional scalars are packed only when marked present */
    a->has_f = type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    a->has_i = type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_s = type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    n->attribute[n->n_attribute++] = a;
    return a;
}

/* A tensor proto with dims and no data yet. */
static inline Onnx__TensorProto *tensor(const char *name, int type, int rank, const int64_t *dims)
{
    Onnx__TensorProto *t = mem(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = str(name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)rank;
    t->dims = mem((size_t)(rank + 1) * sizeof(int64_t));
    memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
    return t;
}

static inline Onnx__TensorProto *tensor_raw(const char *name, int type, int rank,
                                            const int64_t *dims, const void *data, size_t nbytes)
{
    Onnx__TensorProto *t = tensor(name, type, rank, dims);
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = mem(nbytes);
    memcpy(t->raw_data.data, data, nbytes);
    return t;
}

static inline Onnx__ModelProto *new_model(Onnx__GraphProto *g, int opset)
{
    Onnx__ModelProto *m = mem(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->graph = g;
    m->opset_import = mem(4 * sizeof(void *));
    Onnx__OperatorSetIdProto *o = mem(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = str("");
    o->has_version = 1;
    o->version = opset;
    m->opset_import[m->n_opset_import++] = o;
    return m;
}

static inline void import_domain(Onnx__ModelProto *m, const char *domain, int version)
{
    Onnx__OperatorSetIdProto *o = mem(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = str(domain);
    o->has_version = 1;
    o->version = version;
    m->opset_import[m->n_opset_import++] = o;
}

static inline void *pack(const Onnx__ModelProto *m, size_t *size)
{
    *size = onnx__model_proto__get_packed_size(m);
    void *buf = mem(*size);
    onnx__model_proto__pack(m, buf);
    return buf;
}

/* Reads a built model from memory; *out stays the sentinel on failure. */
static graph *const SENTINEL = (graph *)&allocs;

static inline rn_status read_built(const Onnx__ModelProto *m, const char *base_dir, graph **out)
{
    size_t size;
    void *buf = pack(m, &size);
    *out = SENTINEL;
    rn_status st = onnx_read_memory(buf, size, base_dir, out);
    if (st != RN_OK)
        cr_assert_eq(*out, SENTINEL, "the out parameter was written on failure");
    return st;
}

/* Reads a built model that must be refused with `want`; returns the message. */
static inline const char *refused(const Onnx__ModelProto *m, rn_status want)
{
    graph *g;
    rn_status st = read_built(m, NULL, &g);
    if (st == RN_OK)
        graph_free(g);
    cr_assert_eq(st, want, "status %s, expected %s: %s", rn_status_name(st), rn_status_name(want),
                 rn_last_error());
    return rn_last_error();
}

#define assert_mentions(msg, word)                                                                 \
    cr_assert_not_null(strstr((msg), (word)), "message '%s' does not mention '%s'", (msg), (word))

/* ---- temporary files ---- */

static inline const char *temp_dir(void)
{
    static char dir[1024];
    const char *base = getenv("TEST_TMPDIR");
    snprintf(dir, sizeof dir, "%s/onnx_reader_XXXXXX", base != NULL ? base : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static inline void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static inline void *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = mem((size_t)n);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static inline void assert_shape(const graph_shape *s, int rank, const int64_t *dims)
{
    char buf[128];
    cr_assert_eq(s->rank, rank, "rank %d, expected %d (%s)", s->rank, rank,
                 graph_shape_str(s, buf, sizeof buf));
    for (int i = 0; i < rank; i++)
        cr_assert_eq(s->dims[i], dims[i], "dim %d is %lld, expected %lld", i, (long long)s->dims[i],
                     (long long)dims[i]);
}

static inline void assert_tensor_dims(const graph_tensor *t, int rank, const int64_t *dims)
{
    graph_shape s = {.rank = t->rank};
    memcpy(s.dims, t->dims, sizeof s.dims);
    assert_shape(&s, rank, dims);
}

/* A small valid model: Add(x, y) -> z over f32 [2,3]. */
static inline Onnx__ModelProto *add_model(Onnx__GraphProto **gp)
{
    static const int64_t d23[] = {2, 3};
    Onnx__GraphProto *g = new_graph("main");
    add_input(g, "x", 1, 2, d23);
    add_input(g, "y", 1, 2, d23);
    add_node(g, "add", "Add", "x,y", "z");
    add_output(g, "z", 1, 2, d23);
    if (gp != NULL)
        *gp = g;
    return new_model(g, 13);
}

#endif
