/* Values that are not plain tensors, and subgraphs' reads of outer values:
 * value kinds, owned sequences, the values a subgraph reads from enclosing
 * scopes (and their capture), SequenceProto / OptionalProto files, declared
 * sequence and optional types through a round trip of the graph encoding,
 * and pruning that keeps what a subgraph returns. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/onnx/onnx_reader.h"
#include "graph/ops.h"
#include "graph/serialize.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

#define TESTDATA "/usr/share/libonnx-testdata/data"

/* An owned f32 tensor of rank 1 holding n values. */
static graph_tensor vec(size_t n, const float *v)
{
    graph_tensor t = {.type = RN_F32, .rank = 1, .dims = {(int64_t)n}};
    t.nbytes = n * sizeof(float);
    t.data = malloc(t.nbytes + 1);
    cr_assert_not_null(t.data);
    memcpy(t.data, v, t.nbytes);
    return t;
}

Test(values, kinds_accept_their_optional_forms)
{
    cr_assert(graph_kind_accepts(GRAPH_KIND_TENSOR, GRAPH_KIND_TENSOR));
    cr_assert_not(graph_kind_accepts(GRAPH_KIND_TENSOR, GRAPH_KIND_SEQUENCE));
    /* a present optional is its value, an absent one the optional itself */
    cr_assert(graph_kind_accepts(GRAPH_KIND_OPTIONAL, GRAPH_KIND_TENSOR));
    cr_assert(graph_kind_accepts(GRAPH_KIND_OPTIONAL, GRAPH_KIND_OPTIONAL));
    cr_assert_not(graph_kind_accepts(GRAPH_KIND_OPTIONAL, GRAPH_KIND_SEQUENCE));
    cr_assert(graph_kind_accepts(GRAPH_KIND_OPTIONAL_SEQUENCE, GRAPH_KIND_SEQUENCE));
    cr_assert_not(graph_kind_accepts(GRAPH_KIND_SEQUENCE, GRAPH_KIND_OPTIONAL_SEQUENCE));
    cr_assert_eq(graph_kind_element(GRAPH_KIND_OPTIONAL_SEQUENCE), GRAPH_KIND_SEQUENCE);
    cr_assert_str_eq(graph_kind_name(GRAPH_KIND_OPTIONAL), "optional tensor");
}

Test(values, sequence_copies_are_deep)
{
    static const float a[] = {1, 2}, b[] = {3, 4, 5};
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE, .type = RN_F32};
    graph_tensor ta = vec(2, a), tb = vec(3, b);
    cr_assert_eq(graph_sequence_append(&seq, &ta), RN_OK);
    cr_assert_eq(graph_sequence_append(&seq, &tb), RN_OK);
    cr_assert_null(ta.data, "append takes the item over");
    cr_assert_eq(seq.n_items, 2);
    graph_tensor copy;
    cr_assert_eq(graph_tensor_copy(&copy, &seq), RN_OK);
    cr_assert_eq(copy.kind, GRAPH_KIND_SEQUENCE);
    cr_assert_eq(copy.n_items, 2);
    cr_assert_neq(copy.items[1].data, seq.items[1].data);
    ((float *)seq.items[1].data)[2] = 50;
    cr_assert_eq(((float *)copy.items[1].data)[2], 5.0f, "the copy is independent");
    cr_assert_eq(copy.items[1].dims[0], 3);
    graph_tensor_release(&seq);
    graph_tensor_release(&copy);
    cr_assert_null(copy.items);
    /* an absent optional copies as itself */
    graph_tensor none = {.kind = GRAPH_KIND_OPTIONAL_SEQUENCE, .type = RN_I64}, none2;
    cr_assert_eq(graph_tensor_copy(&none2, &none), RN_OK);
    cr_assert_eq(none2.kind, GRAPH_KIND_OPTIONAL_SEQUENCE);
    cr_assert_eq(none2.type, RN_I64);
    graph_tensor_release(&none2);
}

/* main: inputs x, y; n1 = Neg(x) -> a; an If whose then-branch reads a
 * and whose else-branch holds a nested If reading y and returning x as it
 * is. */
typedef struct nested_fixture {
    graph *main, *then_g, *else_g, *inner;
    graph_value *x, *y, *a;
    graph_node *if_node;
} nested_fixture;

static void add_value(graph *g, const char *name, graph_value **out)
{
    cr_assert_eq(graph_add_value(g, name, out), RN_OK, "%s", rn_last_error());
}

static graph_attr graph_attr_of(const char *name, graph *g)
{
    return (graph_attr){.name = strdup(name), .type = GRAPH_ATTR_GRAPH, .g = g};
}

static nested_fixture nested_build(void)
{
    nested_fixture f = {0};
    graph_value *c, *t_out, *e_out, *i_out, *r;
    cr_assert_eq(graph_create("main", &f.main), RN_OK);
    add_value(f.main, "x", &f.x);
    add_value(f.main, "y", &f.y);
    add_value(f.main, "c", &c);
    add_value(f.main, "a", &f.a);
    add_value(f.main, "r", &r);
    graph_add_input(f.main, f.x);
    graph_add_input(f.main, f.y);
    graph_add_input(f.main, c);
    graph_add_node(f.main, "n1", "", "Neg", 13, 1, &f.x, 1, &f.a, NULL);
    /* then: t = Neg(a) */
    graph_create("then", &f.then_g);
    f.then_g->parent = f.main;
    add_value(f.then_g, "t", &t_out);
    graph_add_node(f.then_g, "t1", "", "Neg", 13, 1, &f.a, 1, &t_out, NULL);
    graph_add_output(f.then_g, t_out);
    /* else: e = If(c) { inner: i = Neg(y); returns x } */
    graph_create("else", &f.else_g);
    f.else_g->parent = f.main;
    add_value(f.else_g, "e", &e_out);
    graph_create("inner", &f.inner);
    f.inner->parent = f.else_g;
    add_value(f.inner, "i", &i_out);
    graph_add_node(f.inner, "i1", "", "Neg", 13, 1, &f.y, 1, &i_out, NULL);
    graph_add_output(f.inner, f.x);
    graph_node *inner_if;
    graph_add_node(f.else_g, "e1", "", "If", 13, 1, &c, 1, &e_out, &inner_if);
    graph_attr a1 = graph_attr_of("then_branch", f.inner), a2;
    graph_node_add_attr(inner_if, &a1);
    graph *empty;
    graph_create("empty", &empty);
    empty->parent = f.else_g;
    graph_add_output(empty, f.y);
    a2 = graph_attr_of("else_branch", empty);
    graph_node_add_attr(inner_if, &a2);
    graph_add_output(f.else_g, e_out);
    graph_add_node(f.main, "if", "", "If", 13, 1, &c, 1, &r, &f.if_node);
    graph_attr b1 = graph_attr_of("then_branch", f.then_g),
               b2 = graph_attr_of("else_branch", f.else_g);
    graph_node_add_attr(f.if_node, &b1);
    graph_node_add_attr(f.if_node, &b2);
    graph_add_output(f.main, r);
    return f;
}

Test(values, outer_inputs_cover_nested_subgraphs_and_results)
{
    nested_fixture f = nested_build();
    graph_value **v;
    int n;
    cr_assert_eq(graph_outer_inputs(f.then_g, &v, &n), RN_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(v[0], f.a);
    free(v);
    /* the nested If reads y in a node and returns x: both are outer to
     * else_g; c is read by the nested If itself */
    cr_assert_eq(graph_outer_inputs(f.else_g, &v, &n), RN_OK);
    cr_assert_eq(n, 3, "%d values", n);
    cr_assert_eq(v[0]->name[0], 'c');
    cr_assert_eq(v[1], f.y);
    cr_assert_eq(v[2], f.x);
    free(v);
    cr_assert_eq(graph_node_outer_inputs(f.if_node, &v, &n), RN_OK);
    cr_assert_eq(n, 4, "a, then c, y, x: %d values", n);
    cr_assert_eq(v[0], f.a);
    free(v);
    graph_free(f.main);
}

Test(values, capture_makes_a_subgraph_self_contained)
{
    nested_fixture f = nested_build();
    f.y->type = RN_F32;
    f.y->kind = GRAPH_KIND_SEQUENCE;
    graph *copy;
    cr_assert_eq(graph_clone(f.else_g, &copy), RN_OK, "%s", rn_last_error());
    graph_value **outer, **caps;
    int n;
    cr_assert_eq(graph_capture_outer(copy, &outer, &caps, &n), RN_OK, "%s", rn_last_error());
    cr_assert_eq(n, 3);
    cr_assert_null(copy->parent);
    cr_assert_eq(outer[1], f.y, "the sources are the enclosing graph's values");
    cr_assert_eq(caps[1], graph_find_value(copy, "y", false));
    cr_assert_eq(caps[1]->kind, GRAPH_KIND_SEQUENCE, "a capture keeps the kind");
    cr_assert_eq(caps[1]->type, RN_F32);
    /* the nested subgraph now reads the captures */
    const graph *inner = copy->nodes[0]->attrs[0].g;
    cr_assert_eq(inner->nodes[0]->inputs[0], caps[1]);
    cr_assert_eq(inner->outputs[0], caps[2]);
    graph_value **again;
    int m;
    cr_assert_eq(graph_outer_inputs(copy, &again, &m), RN_OK);
    cr_assert_eq(m, 0, "nothing is read from outside any more");
    free(again);
    free(outer);
    free(caps);
    graph_free(copy);
    graph_free(f.main);
}

Test(values, prune_keeps_what_a_subgraph_returns)
{
    /* a = Neg(x) is read by no node: only the If's then-branch returns it */
    graph *g, *then_g, *else_g;
    graph_value *x, *c, *a, *r;
    cr_assert_eq(graph_create("main", &g), RN_OK);
    add_value(g, "x", &x);
    add_value(g, "c", &c);
    add_value(g, "a", &a);
    add_value(g, "r", &r);
    graph_add_input(g, x);
    graph_add_input(g, c);
    graph_add_node(g, "n1", "", "Neg", 13, 1, &x, 1, &a, NULL);
    graph_create("then", &then_g);
    then_g->parent = g;
    graph_add_output(then_g, a);
    graph_create("else", &else_g);
    else_g->parent = g;
    graph_add_output(else_g, x);
    graph_node *n;
    graph_add_node(g, "if", "", "If", 13, 1, &c, 1, &r, &n);
    graph_attr t = graph_attr_of("then_branch", then_g), e = graph_attr_of("else_branch", else_g);
    graph_node_add_attr(n, &t);
    graph_node_add_attr(n, &e);
    graph_add_output(g, r);
    cr_assert_eq(graph_sort(g), RN_OK);
    cr_assert_eq(g->nodes[0]->name[0], 'n', "the If runs after the node it reads");
    graph_prune(g);
    cr_assert_eq(g->n_nodes, 2, "n1 is kept");
    cr_assert_eq(graph_find_value(g, "a", false), a);
    graph_free(g);
}

/* ---- SequenceProto / OptionalProto ---- */

typedef struct bytes {
    uint8_t b[4096];
    size_t n;
} bytes;

static void put_varint(bytes *o, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        o->b[o->n++] = c | (v ? 0x80 : 0);
    } while (v);
}

static void put_field_bytes(bytes *o, int field, const uint8_t *p, size_t n)
{
    put_varint(o, (uint64_t)field << 3 | 2);
    put_varint(o, n);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void put_field_int(bytes *o, int field, uint64_t v)
{
    put_varint(o, (uint64_t)field << 3);
    put_varint(o, v);
}

/* A packed TensorProto of i64 values. */
static size_t pack_i64(uint8_t *buf, size_t n, const int64_t *v)
{
    Onnx__TensorProto t;
    onnx__tensor_proto__init(&t);
    t.has_data_type = 1;
    t.data_type = 7;
    int64_t dims[1] = {(int64_t)n};
    t.n_dims = 1;
    t.dims = dims;
    t.n_int64_data = n;
    t.int64_data = (int64_t *)v;
    return onnx__tensor_proto__pack(&t, buf);
}

Test(values, sequence_proto_is_read_from_its_declaration)
{
    static const int64_t a[] = {1, 2, 3}, b[] = {4};
    uint8_t t[256];
    bytes seq = {0};
    put_field_int(&seq, 2, 1); /* elem_type TENSOR */
    size_t n = pack_i64(t, 3, a);
    put_field_bytes(&seq, 3, t, n);
    n = pack_i64(t, 1, b);
    put_field_bytes(&seq, 3, t, n);
    graph_tensor v;
    cr_assert_eq(onnx_read_value_memory(seq.b, seq.n, NULL, GRAPH_KIND_SEQUENCE, &v), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(v.kind, GRAPH_KIND_SEQUENCE);
    cr_assert_eq(v.type, RN_I64);
    cr_assert_eq(v.n_items, 2);
    cr_assert_eq(v.items[0].dims[0], 3);
    cr_assert_eq(((int64_t *)v.items[0].data)[2], 3);
    cr_assert_eq(((int64_t *)v.items[1].data)[0], 4);
    graph_tensor_release(&v);
    /* the same bytes in an OptionalProto (field 5: sequence_value) */
    bytes opt = {0};
    put_field_int(&opt, 2, 3); /* elem_type SEQUENCE */
    put_field_bytes(&opt, 5, seq.b, seq.n);
    cr_assert_eq(onnx_read_value_memory(opt.b, opt.n, NULL, GRAPH_KIND_OPTIONAL_SEQUENCE, &v),
                 RN_OK, "%s", rn_last_error());
    cr_assert_eq(v.kind, GRAPH_KIND_SEQUENCE, "a present optional is its value");
    cr_assert_eq(v.n_items, 2);
    graph_tensor_release(&v);
    /* declared an optional tensor, it holds a sequence: refused */
    cr_assert_eq(onnx_read_value_memory(opt.b, opt.n, NULL, GRAPH_KIND_OPTIONAL, &v),
                 RN_TYPE_MISMATCH);
}

Test(values, empty_optional_and_malformed_bytes)
{
    bytes opt = {0};
    put_field_int(&opt, 2, 1);
    graph_tensor v;
    cr_assert_eq(onnx_read_value_memory(opt.b, opt.n, NULL, GRAPH_KIND_OPTIONAL, &v), RN_OK);
    cr_assert_eq(v.kind, GRAPH_KIND_OPTIONAL, "no value: the optional itself");
    cr_assert_null(v.data);
    /* a length that runs past the end */
    static const uint8_t bad[] = {0x1a, 0x40, 0x08};
    cr_assert_eq(onnx_read_value_memory(bad, sizeof bad, NULL, GRAPH_KIND_SEQUENCE, &v),
                 RN_PARSE_ERROR);
    /* a map inside a sequence */
    bytes m = {0};
    put_field_bytes(&m, 6, (const uint8_t *)"", 0);
    cr_assert_eq(onnx_read_value_memory(m.b, m.n, NULL, GRAPH_KIND_SEQUENCE, &v), RN_UNSUPPORTED);
}

/* ---- MapProto (ZipMap's outputs in test data) ---- */

/* A scalar f32 TensorProto (a map's value, as numpy_helper.from_dict writes it). */
static size_t pack_f32_scalar(uint8_t *buf, float v)
{
    Onnx__TensorProto t;
    onnx__tensor_proto__init(&t);
    t.has_data_type = 1;
    t.data_type = 1;
    t.n_float_data = 1;
    t.float_data = &v;
    return onnx__tensor_proto__pack(&t, buf);
}

/* MapProto with string keys (or, with `ints`, packed int64 keys 10, 20, ...)
 * mapping key i to 0.5 * i; n_values values. */
static bytes map_proto(int n_keys, int n_values, bool ints)
{
    bytes m = {0}, values = {0}, packed = {0};
    put_field_int(&m, 2, ints ? 7 : 8); /* key_type */
    for (int i = 0; i < n_keys; i++) {
        char key[8] = {(char)('a' + i), 0};
        if (ints)
            put_varint(&packed, 10 * (uint64_t)(i + 1));
        else
            put_field_bytes(&m, 4, (const uint8_t *)key, 1);
    }
    if (ints)
        put_field_bytes(&m, 3, packed.b, packed.n);
    put_field_int(&values, 2, 1); /* elem_type TENSOR */
    for (int i = 0; i < n_values; i++) {
        uint8_t t[64];
        put_field_bytes(&values, 3, t, pack_f32_scalar(t, 0.5f * (float)i));
    }
    put_field_bytes(&m, 5, values.b, values.n);
    return m;
}

Test(values, sequence_of_maps_is_read_from_map_protos)
{
    bytes a = map_proto(3, 3, false), b = map_proto(2, 2, true), seq = {0};
    put_field_int(&seq, 2, 4); /* elem_type MAP */
    put_field_bytes(&seq, 6, a.b, a.n);
    put_field_bytes(&seq, 6, a.b, a.n);
    graph_tensor v;
    cr_assert_eq(onnx_read_value_memory(seq.b, seq.n, NULL, GRAPH_KIND_SEQUENCE_MAP, &v), RN_OK,
                 "%s", rn_last_error());
    cr_assert_eq(v.kind, GRAPH_KIND_SEQUENCE_MAP);
    cr_assert_eq(v.type, RN_F32);
    cr_assert_eq(v.n_items, 2);
    const graph_tensor *m = &v.items[1];
    char why[160];
    cr_assert(graph_map_check(m, why, sizeof why), "%s", why);
    cr_assert_eq(m->items[0].type, RN_STRING);
    cr_assert_str_eq(((char **)m->items[0].data)[2], "c");
    cr_assert_eq(((float *)m->items[1].data)[2], 1.0f);
    graph_tensor copy;
    cr_assert_eq(graph_tensor_copy(&copy, &v), RN_OK);
    cr_assert_str_eq(((char **)copy.items[0].items[0].data)[1], "b", "copies are deep");
    cr_assert_neq(copy.items[0].items[0].data, v.items[0].items[0].data);
    graph_tensor_release(&copy);
    graph_tensor_release(&v);
    /* one map alone, packed int64 keys */
    cr_assert_eq(onnx_read_value_memory(b.b, b.n, NULL, GRAPH_KIND_MAP, &v), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(v.kind, GRAPH_KIND_MAP);
    cr_assert_eq(((int64_t *)v.items[0].data)[1], 20);
    graph_tensor_release(&v);
    /* maps of two key types in one sequence; declared a sequence of tensors */
    put_field_bytes(&seq, 6, b.b, b.n);
    cr_assert_eq(onnx_read_value_memory(seq.b, seq.n, NULL, GRAPH_KIND_SEQUENCE_MAP, &v),
                 RN_TYPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "sequence item 2") != NULL, "%s", rn_last_error());
    bytes one = {0};
    put_field_bytes(&one, 6, a.b, a.n);
    cr_assert_eq(onnx_read_value_memory(one.b, one.n, NULL, GRAPH_KIND_SEQUENCE, &v),
                 RN_TYPE_MISMATCH);
    /* 3 keys and 2 values; float keys */
    bytes bad = map_proto(3, 2, false);
    cr_assert_eq(onnx_read_value_memory(bad.b, bad.n, NULL, GRAPH_KIND_MAP, &v), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "3 keys and 2 values") != NULL, "%s", rn_last_error());
    bytes fkeys = {0};
    put_field_int(&fkeys, 2, 1);
    cr_assert_eq(onnx_read_value_memory(fkeys.b, fkeys.n, NULL, GRAPH_KIND_MAP, &v),
                 RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "string and int64 keys") != NULL, "%s", rn_last_error());
}

/* ---- declared kinds through the reader and the graph encoding ---- */

/* The first node of op `op` with n_inputs inputs (-1: any), depth first. */
static const graph_node *find_op_in(const graph *g, const char *op, int n_inputs)
{
    for (int i = 0; i < g->n_nodes; i++) {
        if (strcmp(g->nodes[i]->op_type, op) == 0 &&
            (n_inputs < 0 || g->nodes[i]->n_inputs == n_inputs))
            return g->nodes[i];
        for (int a = 0; a < g->nodes[i]->n_attrs; a++)
            if (g->nodes[i]->attrs[a].g != NULL) {
                const graph_node *n = find_op_in(g->nodes[i]->attrs[a].g, op, n_inputs);
                if (n != NULL)
                    return n;
            }
    }
    return NULL;
}

static const graph_node *find_op(const graph *g, const char *op)
{
    return find_op_in(g, op, -1);
}

static void check_if_opt(const graph *g)
{
    cr_assert_eq(g->outputs[0]->kind, GRAPH_KIND_OPTIONAL_SEQUENCE);
    cr_assert_eq(g->outputs[0]->type, RN_F32);
    /* then_branch: Optional[type = sequence(tensor(float[5]))]() */
    const graph_node *opt = find_op_in(g, "Optional", 0);
    cr_assert_not_null(opt);
    const graph_attr *a = graph_node_attr(opt, "type");
    cr_assert_not_null(a);
    cr_assert_eq(a->type, GRAPH_ATTR_TYPE_PROTO);
    cr_assert_eq(a->tp.kind, GRAPH_KIND_SEQUENCE);
    cr_assert_eq(a->tp.elem, RN_F32);
    cr_assert_eq(opt->outputs[0]->kind, GRAPH_KIND_OPTIONAL_SEQUENCE, "inferred");
}

Test(values, declared_kinds_survive_the_graph_encoding)
{
    graph *g;
    cr_assert_eq(onnx_read_file(TESTDATA "/node/test_if_opt/model.onnx", &g), RN_OK, "%s",
                 rn_last_error());
    check_if_opt(g);
    graph_buffer buf;
    cr_assert_eq(graph_serialize(g, &buf), RN_OK, "%s", rn_last_error());
    graph *back;
    cr_assert_eq(graph_deserialize(buf.data, buf.size, &back), RN_OK, "%s", rn_last_error());
    check_if_opt(back);
    graph_buffer_release(&buf);
    graph_free(back);
    graph_free(g);
}

Test(values, loop_outputs_take_the_kinds_of_the_body)
{
    graph *g;
    cr_assert_eq(onnx_read_file(TESTDATA "/node/test_loop13_seq/model.onnx", &g), RN_OK, "%s",
                 rn_last_error());
    const graph_node *loop = find_op(g, "Loop");
    cr_assert_eq(loop->outputs[0]->kind, GRAPH_KIND_SEQUENCE);
    cr_assert_eq(loop->outputs[0]->type, RN_F32);
    graph_free(g);
}
