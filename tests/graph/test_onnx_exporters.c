/* The ONNX reader on what exporters write: dim_value -1, declared shapes that
 * inference contradicts, opsets newer than the schemas, model-local functions
 * (inlined, overloads, recursion refused) and maps (ZipMap). */
#include "graph/serialize.h"
#include "tests/graph/onnx_build.h"

TestSuite(onnx_exporters, .fini = free_all);

/* ================= models as exporters write them ================= */

Test(onnx_exporters, dim_value_minus_one_is_dynamic)
{
    static const int64_t d[] = {2, 3};
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    g->input[0]->type->tensor_type->shape->dim[0]->dim_value = -1; /* paddle2onnx */
    graph *out;
    cr_assert_eq(read_built(m, NULL, &out), RN_OK, "%s", rn_last_error());
    static const int64_t want[] = {RN_DIM_DYNAMIC, 3};
    assert_shape(&graph_find_value(out, "x", false)->shape, 2, want);
    graph_free(out);
    /* any other negative dim is still malformed */
    m = add_model(&g);
    g->input[0]->type->tensor_type->shape->dim[1]->dim_value = -2;
    assert_mentions(refused(m, RN_PARSE_ERROR), "negative");
    (void)d;
}

Test(onnx_exporters, declared_shapes_that_inference_contradicts_are_warnings)
{
    static const int64_t d23[] = {2, 3}, d7[] = {7}, d32[] = {3, 2};
    Onnx__GraphProto *g = new_graph("stale");
    add_input(g, "x", 1, 2, d23);
    add_node(g, "relu", "Relu", "x", "t");
    add_node(g, "tr", "Transpose", "t", "z");
    g->value_info[g->n_value_info++] = value_info("t", 1, 1, d7); /* wrong rank */
    add_output(g, "z", 1, 2, d23);                                /* wrong dims */
    graph *out;
    cr_assert_eq(read_built(new_model(g, 13), NULL, &out), RN_OK, "%s", rn_last_error());
    assert_shape(&graph_find_value(out, "t", false)->shape, 2, d23);
    assert_shape(&graph_find_value(out, "z", false)->shape, 2, d32);
    cr_assert_eq(out->n_warnings, 2);
    assert_mentions(out->warnings[0], "'t'");
    assert_mentions(out->warnings[0], "[7]");
    assert_mentions(out->warnings[1], "'z'");
    assert_mentions(out->warnings[1], "'tr'");
    graph_free(out);
}

Test(onnx_exporters, a_declared_element_type_that_inference_contradicts_is_an_error)
{
    static const int64_t d23[] = {2, 3};
    Onnx__GraphProto *g = new_graph("wrong_type");
    add_input(g, "x", 1, 2, d23);
    add_node(g, "relu", "Relu", "x", "z");
    add_output(g, "z", 7, 2, d23); /* int64: Relu of a float cannot be */
    const char *msg = refused(new_model(g, 13), RN_TYPE_MISMATCH);
    assert_mentions(msg, "'z'");
}

Test(onnx_exporters, opsets_newer_than_the_schemas_are_refused)
{
    const char *msg = refused(new_model(add_model(NULL)->graph, 99), RN_UNSUPPORTED);
    assert_mentions(msg, "99");
    assert_mentions(msg, "'ai.onnx'");
    assert_mentions(msg, "27");
    Onnx__ModelProto *m = add_model(NULL);
    import_domain(m, "ai.onnx.ml", 6);
    msg = refused(m, RN_UNSUPPORTED);
    assert_mentions(msg, "'ai.onnx.ml'");
    assert_mentions(msg, "opset 5");
    /* the newest supported one reads, and a domain without schemas is not judged */
    m = new_model(add_model(NULL)->graph, 27);
    import_domain(m, "com.example", 1000);
    graph *out;
    cr_assert_eq(read_built(m, NULL, &out), RN_OK, "%s", rn_last_error());
    graph_free(out);
}

/* ---- model-local functions ---- */

static Onnx__FunctionProto *add_function(Onnx__ModelProto *m, const char *name, const char *ins,
                                         const char *outs, const char *attrs)
{
    if (m->functions == NULL)
        m->functions = mem(CAP * sizeof(void *));
    Onnx__FunctionProto *f = mem(sizeof *f);
    onnx__function_proto__init(f);
    f->name = str(name);
    f->domain = str("local");
    f->n_input = split(ins, &f->input);
    f->n_output = split(outs, &f->output);
    f->n_attribute = split(attrs, &f->attribute);
    f->node = mem(CAP * sizeof(void *));
    m->functions[m->n_functions++] = f;
    return f;
}

/* A node of a function body: built in a scratch graph, moved to f. */
static Onnx__NodeProto *add_body_node(Onnx__FunctionProto *f, const char *name, const char *op,
                                      const char *ins, const char *outs)
{
    Onnx__GraphProto *scratch = new_graph("scratch");
    Onnx__NodeProto *n = add_node(scratch, name, op, ins, outs);
    f->node[f->n_node++] = n;
    return n;
}

/* Scale(x) = x * alpha, alpha an attribute of the function (ref_attr_name). */
static void add_scale_function(Onnx__ModelProto *m)
{
    Onnx__FunctionProto *f = add_function(m, "Scale", "x", "y", "alpha");
    Onnx__NodeProto *c = add_body_node(f, "c", "Constant", "", "c");
    add_attr(c, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->ref_attr_name =
        str("alpha");
    add_body_node(f, "mul", "Mul", "x,c", "y");
}

static float constant_of(const graph *g, const char *name)
{
    const graph_value *v = graph_find_value(g, name, false);
    cr_assert(v != NULL && v->constant != NULL, "no constant '%s'", name);
    return *(const float *)v->constant->data;
}

Test(onnx_exporters, functions_are_inlined_with_their_attributes)
{
    static const int64_t d[] = {4};
    Onnx__GraphProto *g = new_graph("calls");
    add_input(g, "x", 1, 1, d);
    Onnx__NodeProto *s = add_node(g, "s", "Scale", "x", "y");
    s->domain = str("local");
    add_attr(s, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = 3.0f;
    /* Outer(x; k) = Scale(x; alpha = k): a nested call passing an attribute on */
    Onnx__NodeProto *o = add_node(g, "", "Outer", "y", "z");
    o->domain = str("local");
    add_attr(o, "k", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = 5.0f;
    add_output(g, "z", 1, 1, d);
    Onnx__ModelProto *m = new_model(g, 13);
    import_domain(m, "local", 1);
    add_scale_function(m);
    Onnx__FunctionProto *outer = add_function(m, "Outer", "a", "b", "k");
    Onnx__NodeProto *inner = add_body_node(outer, "inner", "Scale", "a", "b");
    inner->domain = str("local");
    add_attr(inner, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->ref_attr_name =
        str("k");
    graph *out;
    cr_assert_eq(read_built(m, NULL, &out), RN_OK, "%s", rn_last_error());
    cr_assert_eq(out->n_nodes, 2, "%d nodes", out->n_nodes);
    cr_assert_float_eq(constant_of(out, "s/c"), 3.0f, 0);
    cr_assert_float_eq(constant_of(out, "Outer_1/inner/c"), 5.0f, 0);
    bool seen_inner = false;
    for (int i = 0; i < out->n_nodes; i++) {
        cr_assert_str_eq(out->nodes[i]->op_type, "Mul");
        seen_inner |= strcmp(out->nodes[i]->name, "Outer_1/inner/mul") == 0;
    }
    cr_assert(seen_inner);
    assert_shape(&graph_find_value(out, "z", false)->shape, 1, d);
    graph_free(out);
}

Test(onnx_exporters, recursive_functions_are_refused)
{
    static const int64_t d[] = {4};
    for (int indirect = 0; indirect < 2; indirect++) {
        Onnx__GraphProto *g = new_graph("rec");
        add_input(g, "x", 1, 1, d);
        add_node(g, "call", "A", "x", "y")->domain = str("local");
        add_output(g, "y", 1, 1, d);
        Onnx__ModelProto *m = new_model(g, 13);
        import_domain(m, "local", 1);
        Onnx__FunctionProto *a = add_function(m, "A", "p", "q", "");
        add_body_node(a, "again", indirect ? "B" : "A", "p", "q")->domain = str("local");
        if (indirect) {
            Onnx__FunctionProto *b = add_function(m, "B", "p", "q", "");
            add_body_node(b, "back", "A", "p", "q")->domain = str("local");
        }
        const char *msg = refused(m, RN_UNSUPPORTED);
        assert_mentions(msg, "'A'");
        assert_mentions(msg, "calls itself");
    }
}

/* Sets an IR 10 overload string, a field Debian's schema lacks, as the
 * unknown field protobuf-c packs as it is (tag, then length and bytes). */
static void set_overload(ProtobufCMessage *m, uint32_t tag, const char *overload)
{
    ProtobufCMessageUnknownField *u = mem(sizeof *u);
    size_t n = strlen(overload);
    u->tag = tag;
    u->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    u->len = n + 1;
    u->data = mem(n + 1);
    u->data[0] = (uint8_t)n; /* a one-byte varint */
    memcpy(u->data + 1, overload, n);
    m->n_unknown_fields = 1;
    m->unknown_fields = u;
}

Test(onnx_exporters, function_overloads_pick_the_body)
{
    static const int64_t d[] = {4};
    for (int pick = 0; pick < 2; pick++) {
        Onnx__GraphProto *g = new_graph("overloads");
        add_input(g, "x", 1, 1, d);
        Onnx__NodeProto *call = add_node(g, "call", "F", "x", "y");
        call->domain = str("local");
        set_overload(&call->base, 8, pick ? "relu" : "neg");
        add_output(g, "y", 1, 1, d);
        Onnx__ModelProto *m = new_model(g, 13);
        import_domain(m, "local", 1);
        add_body_node(add_function(m, "F", "a", "b", ""), "op", "Neg", "a", "b");
        set_overload(&m->functions[0]->base, 13, "neg");
        add_body_node(add_function(m, "F", "a", "b", ""), "op", "Relu", "a", "b");
        set_overload(&m->functions[1]->base, 13, "relu");
        graph *out;
        cr_assert_eq(read_built(m, NULL, &out), RN_OK, "%s", rn_last_error());
        cr_assert_eq(out->n_nodes, 1);
        cr_assert_str_eq(out->nodes[0]->op_type, pick ? "Relu" : "Neg");
        graph_free(out);
    }
}

/* ---- maps (ZipMap, skl2onnx's default classifier output) ---- */

/* Wraps a value's tensor type into map(key, that) and, with `seq`, into
 * sequence(map(key, that)). */
static void make_map_type(Onnx__ValueInfoProto *vi, int key, bool seq)
{
    Onnx__TypeProto *value = vi->type, *map = mem(sizeof *map);
    onnx__type_proto__init(map);
    Onnx__TypeProto__Map *mt = mem(sizeof *mt);
    onnx__type_proto__map__init(mt);
    mt->has_key_type = 1;
    mt->key_type = key;
    mt->value_type = value;
    map->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
    map->map_type = mt;
    vi->type = map;
    if (!seq)
        return;
    Onnx__TypeProto *s = mem(sizeof *s);
    onnx__type_proto__init(s);
    Onnx__TypeProto__Sequence *st = mem(sizeof *st);
    onnx__type_proto__sequence__init(st);
    st->elem_type = map;
    s->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    s->sequence_type = st;
    vi->type = s;
}

/* X [N, 3] f32 -> ZipMap (int64 labels 10, 20, 30) -> Z, declared
 * sequence(map(key, tensor(f32))). */
static Onnx__ModelProto *zipmap_model(int key)
{
    Onnx__GraphProto *g = new_graph("zipmap");
    add_input(g, "X", 1, 2, (int64_t[]){-1, 3});
    add_output(g, "Z", 1, -1, NULL);
    make_map_type(g->output[0], key, true);
    Onnx__NodeProto *n = add_node(g, "zm", "ZipMap", "X", "Z");
    n->domain = str("ai.onnx.ml");
    static const int64_t labels[] = {10, 20, 30};
    Onnx__AttributeProto *a =
        add_attr(n, "classlabels_int64s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 3;
    a->ints = (int64_t *)labels;
    Onnx__ModelProto *m = new_model(g, 17);
    import_domain(m, "ai.onnx.ml", 1);
    return m;
}

Test(onnx_exporters, zipmap_output_is_a_sequence_of_maps)
{
    graph *g;
    cr_assert_eq(read_built(zipmap_model(RN_I64), NULL, &g), RN_OK, "%s", rn_last_error());
    cr_assert_eq(g->outputs[0]->kind, GRAPH_KIND_SEQUENCE_MAP);
    cr_assert_eq(g->outputs[0]->type, RN_F32, "a map kind's type is its values'");
    cr_assert_str_eq(graph_kind_name(g->outputs[0]->kind), "sequence of maps");
    /* the kind survives the graph encoding (export blobs, the model cache) */
    graph_buffer buf;
    cr_assert_eq(graph_serialize(g, &buf), RN_OK, "%s", rn_last_error());
    graph *back;
    cr_assert_eq(graph_deserialize(buf.data, buf.size, &back), RN_OK, "%s", rn_last_error());
    cr_assert_eq(back->outputs[0]->kind, GRAPH_KIND_SEQUENCE_MAP);
    graph_free(back);
    graph_buffer_release(&buf);
    graph_free(g);
}

Test(onnx_exporters, map_types_and_zipmap_misuse_are_refused_by_name)
{
    /* keys of a type ONNX Runtime's maps do not have */
    const char *msg = refused(zipmap_model(RN_F32), RN_UNSUPPORTED);
    assert_mentions(msg, "'Z'");
    assert_mentions(msg, "keys");
    /* ZipMap's output declared a sequence of tensors */
    Onnx__ModelProto *m = zipmap_model(RN_I64);
    m->graph->output[0] = value_info("Z", 1, -1, NULL);
    Onnx__TypeProto *s = mem(sizeof *s);
    onnx__type_proto__init(s);
    Onnx__TypeProto__Sequence *st = mem(sizeof *st);
    onnx__type_proto__sequence__init(st);
    st->elem_type = m->graph->output[0]->type;
    s->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    s->sequence_type = st;
    m->graph->output[0]->type = s;
    msg = refused(m, RN_TYPE_MISMATCH);
    assert_mentions(msg, "sequence of maps");
    /* three labels for four columns */
    m = zipmap_model(RN_I64);
    m->graph->input[0] = value_info("X", 1, 2, (int64_t[]){-1, 4});
    msg = refused(m, RN_SHAPE_MISMATCH);
    assert_mentions(msg, "4 columns for 3 labels");
    /* both label lists */
    m = zipmap_model(RN_I64);
    Onnx__AttributeProto *a = add_attr(m->graph->node[0], "classlabels_strings",
                                       ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = 3;
    a->strings = mem(3 * sizeof *a->strings);
    for (int i = 0; i < 3; i++)
        a->strings[i] = (ProtobufCBinaryData){1, (uint8_t *)str("abc" + i)};
    msg = refused(m, RN_INVALID_ARG);
    assert_mentions(msg, "exactly one of classlabels_strings and classlabels_int64s");
    /* a map as a graph input reads as a map */
    Onnx__GraphProto *g = new_graph("maps");
    add_input(g, "M", 1, -1, NULL);
    make_map_type(g->input[0], RN_STRING, false);
    add_output(g, "M", 1, -1, NULL);
    make_map_type(g->output[0], RN_STRING, false);
    graph *rg;
    cr_assert_eq(read_built(new_model(g, 17), NULL, &rg), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rg->inputs[0]->kind, GRAPH_KIND_MAP);
    graph_free(rg);
}
