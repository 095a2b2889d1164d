/* The ONNX reader: real models from libonnx-testdata, models built here with
 * protobuf-c (good ones and every kind of bad input), tensors and their data
 * fields, external data. */
#include "graph/serialize.h"
#include "tests/graph/onnx_build.h"

TestSuite(onnx_reader, .fini = free_all);

/* ================= real models ================= */

Test(onnx_reader, reads_add_model)
{
    graph *g = NULL;
    rn_status st = onnx_read_file(TESTDATA "/node/test_add/model.onnx", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    static const int64_t d[] = {3, 4, 5};
    cr_assert_eq(g->opset, 14);
    cr_assert_eq(g->ir_version, 7);
    cr_assert_null(g->parent);
    cr_assert_eq(g->n_inputs, 2);
    cr_assert_str_eq(g->inputs[0]->name, "x");
    cr_assert_str_eq(g->inputs[1]->name, "y");
    for (int i = 0; i < 2; i++) {
        cr_assert(g->inputs[i]->is_parameter);
        cr_assert_eq(g->inputs[i]->type, RN_F32);
        assert_shape(&g->inputs[i]->shape, 3, d);
    }
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(n->op_type, "Add");
    cr_assert_str_eq(n->domain, "");
    cr_assert_eq(n->opset, 14);
    cr_assert_eq(n->n_inputs, 2);
    cr_assert_eq(n->inputs[0], g->inputs[0]);
    cr_assert_eq(n->inputs[1], g->inputs[1]);
    cr_assert_eq(g->n_outputs, 1);
    cr_assert_str_eq(g->outputs[0]->name, "sum");
    cr_assert_eq(g->outputs[0]->producer, n);
    cr_assert_eq(g->outputs[0]->type, RN_F32);
    assert_shape(&g->outputs[0]->shape, 3, d);
    graph_free(g);
}

Test(onnx_reader, graph_input_with_initializer_is_a_constant)
{
    /* Inputs "0" and "1"; "1" also has an initializer {1,2,3,4} (i64 [2,2]). */
    graph *g = NULL;
    rn_status st =
        onnx_read_file(TESTDATA "/pytorch-operator/test_operator_non_float_params/model.onnx", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    static const int64_t d22[] = {2, 2};
    cr_assert_eq(g->opset, 6);
    cr_assert_eq(g->n_inputs, 1);
    cr_assert_str_eq(g->inputs[0]->name, "0");
    graph_value *w = graph_find_value(g, "1", false);
    cr_assert_not_null(w);
    cr_assert_not(w->is_parameter);
    cr_assert_not_null(w->constant);
    cr_assert_eq(w->constant->type, RN_I64);
    assert_tensor_dims(w->constant, 2, d22);
    cr_assert_eq(w->constant->nbytes, 4 * sizeof(int64_t));
    const int64_t *v = w->constant->data;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(v[i], i + 1);
    cr_assert_eq(w->type, RN_I64);
    assert_shape(&w->shape, 2, d22);
    cr_assert_eq(g->n_nodes, 2);
    cr_assert_eq(g->outputs[0]->type, RN_I64);
    assert_shape(&g->outputs[0]->shape, 2, d22);
    graph_free(g);
}

Test(onnx_reader, conv_model_with_weights)
{
    cr_assert_not_null(graph_op_find("", "Conv"), "the schema table has no Conv");
    graph *g = NULL;
    rn_status st = onnx_read_file(TESTDATA "/pytorch-converted/test_Conv2d/model.onnx", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    static const int64_t dw[] = {4, 3, 3, 2}, db[] = {4}, dy[] = {2, 4, 5, 4};
    cr_assert_eq(g->n_inputs, 1);
    graph_value *w = graph_find_value(g, "1", false), *b = graph_find_value(g, "2", false);
    cr_assert(w != NULL && w->constant != NULL && b != NULL && b->constant != NULL);
    assert_tensor_dims(w->constant, 4, dw);
    assert_tensor_dims(b->constant, 1, db);
    cr_assert_eq(w->constant->nbytes, 72 * sizeof(float));
    cr_assert_eq(g->n_nodes, 1);
    const int64_t *ks;
    cr_assert_eq(graph_node_attr_ints(g->nodes[0], "kernel_shape", &ks), 2);
    cr_assert(ks[0] == 3 && ks[1] == 2);
    cr_assert_eq(graph_node_attr_int(g->nodes[0], "group", -1), 1);
    assert_shape(&g->outputs[0]->shape, 4, dy);
    graph_free(g);
}

Test(onnx_reader, constant_nodes_become_constant_values)
{
    /* Constant -> Reshape -> Transpose -> Constant -> Reshape. */
    graph *g = NULL;
    rn_status st = onnx_read_file(TESTDATA "/pytorch-converted/test_PixelShuffle/model.onnx", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    cr_assert_eq(g->n_nodes, 3);
    for (int i = 0; i < g->n_nodes; i++)
        cr_assert_str_neq(g->nodes[i]->op_type, "Constant");
    graph_value *shape = graph_find_value(g, "1", false);
    cr_assert(shape != NULL && shape->constant != NULL);
    cr_assert_null(shape->producer);
    cr_assert_not(shape->is_parameter);
    static const int64_t d6[] = {6}, want[] = {1, 1, 3, 3, 4, 4}, dout[] = {1, 1, 12, 12};
    cr_assert_eq(shape->constant->type, RN_I64);
    assert_tensor_dims(shape->constant, 1, d6);
    cr_assert_arr_eq(shape->constant->data, want, sizeof want);
    assert_shape(&g->outputs[0]->shape, 4, dout);
    graph_free(g);
}

Test(onnx_reader, constant_only_model_matches_its_expected_output)
{
    /* The Constant's tensor (float_data) must equal output_0.pb (raw_data). */
    graph *g = NULL;
    rn_status st = onnx_read_file(TESTDATA "/node/test_constant/model.onnx", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    cr_assert_eq(g->n_nodes, 0);
    cr_assert_eq(g->n_inputs, 0);
    cr_assert_eq(g->n_outputs, 1);
    const graph_tensor *c = g->outputs[0]->constant;
    cr_assert_not_null(c);
    graph_tensor expected;
    st = onnx_read_tensor_file(TESTDATA "/node/test_constant/test_data_set_0/output_0.pb",
                               &expected);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    static const int64_t d55[] = {5, 5};
    cr_assert_eq(c->type, RN_F32);
    assert_tensor_dims(c, 2, d55);
    assert_tensor_dims(&expected, 2, d55);
    cr_assert_eq(expected.nbytes, c->nbytes);
    cr_assert_arr_eq(expected.data, c->data, c->nbytes);
    graph_tensor_release(&expected);
    graph_free(g);
}

Test(onnx_reader, tensor_files_of_a_backend_test)
{
    const char *dir = TESTDATA "/node/test_add/test_data_set_0";
    char path[512];
    graph_tensor t[3];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir,
                 i == 0   ? "input_0.pb"
                 : i == 1 ? "input_1.pb"
                          : "output_0.pb");
        rn_status st = onnx_read_tensor_file(path, &t[i]);
        cr_assert_eq(st, RN_OK, "%s", rn_last_error());
        static const int64_t d[] = {3, 4, 5};
        cr_assert_eq(t[i].type, RN_F32);
        assert_tensor_dims(&t[i], 3, d);
        cr_assert_eq(t[i].nbytes, 60 * sizeof(float));
        cr_assert_eq(graph_tensor_count(&t[i]), 60);
    }
    /* The test's output is the sum of its inputs. */
    const float *a = t[0].data, *b = t[1].data, *sum = t[2].data;
    for (int i = 0; i < 60; i++)
        cr_assert_eq(sum[i], a[i] + b[i], "element %d", i);
    for (int i = 0; i < 3; i++)
        graph_tensor_release(&t[i]);
}

/* ================= models built here ================= */

Test(onnx_reader, reads_a_built_model)
{
    graph *g;
    rn_status st = read_built(add_model(NULL), NULL, &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    cr_assert_eq(g->opset, 13);
    cr_assert_eq(g->ir_version, 8);
    cr_assert_str_eq(g->name, "main");
    cr_assert_eq(g->n_values, 3);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_str_eq(g->nodes[0]->name, "add");
    cr_assert_eq(g->nodes[0]->n_fused, 1);
    cr_assert_str_eq(g->nodes[0]->fused_names[0], "add");
    graph_free(g);
}

Test(onnx_reader, unnamed_nodes_get_unique_made_up_names)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = new_graph("names");
    add_input(g, "x", 1, 1, d);
    add_node(g, "", "Add", "x,x", "a");      /* would be Add_0: taken by a real name below */
    add_node(g, "Add_0", "Add", "a,x", "b"); /* a real name, kept */
    add_node(g, "", "Add", "b,x", "c");      /* Add_2 */
    add_node(g, "dup", "Add", "c,x", "e");
    add_node(g, "dup", "Add", "e,x", "f"); /* a repeated real name */
    add_node(g, "", "Add", "f,x", "h");
    add_output(g, "h", 1, 1, d);
    Onnx__ModelProto *m = new_model(g, 13);
    graph *a, *b;
    cr_assert_eq(read_built(m, NULL, &a), RN_OK, "%s", rn_last_error());
    cr_assert_eq(read_built(m, NULL, &b), RN_OK, "%s", rn_last_error());
    cr_assert_eq(a->n_nodes, 6);
    cr_assert_str_eq(a->nodes[1]->name, "Add_0");
    cr_assert_str_eq(a->nodes[3]->name, "dup");
    cr_assert_str_eq(a->nodes[2]->name, "Add_2");
    for (int i = 0; i < a->n_nodes; i++) {
        cr_assert_neq(a->nodes[i]->name[0], '\0');
        /* stable: the same file gives the same names */
        cr_assert_str_eq(a->nodes[i]->name, b->nodes[i]->name);
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(a->nodes[i]->name, a->nodes[j]->name);
    }
    cr_assert_eq(strncmp(a->nodes[0]->name, "Add_0", 5), 0, "%s", a->nodes[0]->name);
    cr_assert_eq(strncmp(a->nodes[4]->name, "dup_", 4), 0, "%s", a->nodes[4]->name);
    graph_free(a);
    graph_free(b);
}

Test(onnx_reader, nodes_out_of_order_are_sorted)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = new_graph("order");
    add_input(g, "x", 1, 1, d);
    add_node(g, "second", "Add", "a,x", "b");
    add_node(g, "first", "Add", "x,x", "a");
    add_output(g, "b", 1, 1, d);
    graph *out;
    cr_assert_eq(read_built(new_model(g, 13), NULL, &out), RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(out->nodes[0]->name, "first");
    cr_assert_str_eq(out->nodes[1]->name, "second");
    graph_free(out);
}

Test(onnx_reader, dims_params_and_missing_shapes)
{
    static const int64_t dx[] = {-1, 3};
    Onnx__GraphProto *g = new_graph("dyn");
    add_input(g, "x", 1, 2, dx);
    add_input(g, "y", 1, -1, NULL);
    /* a dim with neither value nor param */
    Onnx__TensorShapeProto *sh = g->input[0]->type->tensor_type->shape;
    sh->dim[1]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET;
    add_node(g, "add", "Add", "x,y", "z");
    add_output(g, "z", 1, -1, NULL);
    graph *out;
    cr_assert_eq(read_built(new_model(g, 13), NULL, &out), RN_OK, "%s", rn_last_error());
    graph_value *x = graph_find_value(out, "x", false), *y = graph_find_value(out, "y", false);
    static const int64_t want[] = {RN_DIM_DYNAMIC, RN_DIM_DYNAMIC};
    assert_shape(&x->shape, 2, want);
    cr_assert_eq(y->shape.rank, -1);
    cr_assert_eq(y->type, RN_F32);
    graph_free(out);
}

Test(onnx_reader, value_info_declares_intermediate_shapes)
{
    static const int64_t d[] = {-1, 4}, d4[] = {7, 4};
    Onnx__GraphProto *g = new_graph("vi");
    add_input(g, "x", 1, 2, d);
    add_node(g, "a", "Add", "x,x", "t");
    add_node(g, "b", "Add", "t,x", "z");
    g->value_info[g->n_value_info++] = value_info("t", 1, 2, d4);
    g->value_info[g->n_value_info++] = value_info("stale", 1, 1, d4); /* ignored */
    add_output(g, "z", 1, 2, d);
    graph *out;
    cr_assert_eq(read_built(new_model(g, 13), NULL, &out), RN_OK, "%s", rn_last_error());
    graph_value *t = graph_find_value(out, "t", false);
    cr_assert_eq(t->type, RN_F32);
    cr_assert_eq(t->shape.rank, 2);
    cr_assert_eq(t->shape.dims[1], 4);
    cr_assert_null(graph_find_value(out, "stale", false));
    graph_free(out);
}

Test(onnx_reader, attributes_of_every_type)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = new_graph("attrs");
    add_input(g, "x", 1, 1, d);
    Onnx__NodeProto *n = add_node(g, "n", "Add", "x,x", "z");
    add_output(g, "z", 1, 1, d);
    add_attr(n, "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = 0.5f;
    add_attr(n, "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->i = -7;
    Onnx__AttributeProto *s = add_attr(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    s->s.data = (uint8_t *)str("hello");
    s->s.len = 5;
    static const float fl[] = {1.5f, -2.0f};
    Onnx__AttributeProto *fs = add_attr(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    fs->n_floats = 2;
    fs->floats = (float *)fl;
    static const int64_t il[] = {3, 4, 5};
    Onnx__AttributeProto *is = add_attr(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    is->n_ints = 3;
    is->ints = (int64_t *)il;
    add_attr(n, "empty", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    Onnx__AttributeProto *ss = add_attr(n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    ss->n_strings = 2;
    ss->strings = mem(2 * sizeof *ss->strings);
    ss->strings[0] = (ProtobufCBinaryData){.len = 1, .data = (uint8_t *)str("a")};
    ss->strings[1] = (ProtobufCBinaryData){.len = 2, .data = (uint8_t *)str("bc")};
    static const float tv[] = {9.0f, 8.0f};
    Onnx__AttributeProto *t = add_attr(n, "t", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    t->t = tensor_raw("tv", 1, 1, d, tv, sizeof tv);
    Onnx__AttributeProto *ts = add_attr(n, "ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
    ts->n_tensors = 2;
    ts->tensors = mem(2 * sizeof(void *));
    ts->tensors[0] = tensor_raw("t0", 1, 1, d, tv, sizeof tv);
    ts->tensors[1] = tensor_raw("t1", 1, 1, d, tv, sizeof tv);
    /* An attribute without `type` (IR 1 writers): inferred from the field. */
    Onnx__AttributeProto *old = add_attr(n, "old", 0);
    old->has_type = 0;
    old->has_i = 1;
    old->i = 42;

    graph *out;
    cr_assert_eq(read_built(new_model(g, 13), NULL, &out), RN_OK, "%s", rn_last_error());
    const graph_node *r = out->nodes[0];
    cr_assert_eq(r->n_attrs, 10);
    cr_assert_float_eq(graph_node_attr_float(r, "f", 0), 0.5f, 0);
    cr_assert_eq(graph_node_attr_int(r, "i", 0), -7);
    cr_assert_str_eq(graph_node_attr_string(r, "s", ""), "hello");
    const float *fv;
    cr_assert_eq(graph_node_attr_floats(r, "fs", &fv), 2);
    cr_assert(fv[0] == 1.5f && fv[1] == -2.0f);
    const int64_t *iv;
    cr_assert_eq(graph_node_attr_ints(r, "is", &iv), 3);
    cr_assert(iv[0] == 3 && iv[1] == 4 && iv[2] == 5);
    cr_assert_eq(graph_node_attr_ints(r, "empty", &iv), 0);
    const graph_attr *a = graph_node_attr(r, "ss");
    cr_assert(a != NULL && a->type == GRAPH_ATTR_STRINGS && a->count == 2);
    cr_assert_str_eq(a->strings[0], "a");
    cr_assert_str_eq(a->strings[1], "bc");
    a = graph_node_attr(r, "t");
    cr_assert(a != NULL && a->type == GRAPH_ATTR_TENSOR && a->t != NULL);
    cr_assert_eq(a->t->type, RN_F32);
    cr_assert_arr_eq(a->t->data, tv, sizeof tv);
    a = graph_node_attr(r, "ts");
    cr_assert(a != NULL && a->type == GRAPH_ATTR_TENSORS && a->count == 2);
    cr_assert_arr_eq(a->tensors[1].data, tv, sizeof tv);
    cr_assert_eq(graph_node_attr_int(r, "old", 0), 42);
    graph_free(out);
}

Test(onnx_reader, subgraphs_resolve_outer_names)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = new_graph("outer");
    add_input(g, "x", 1, 1, d);
    add_node(g, "pre", "Add", "x,x", "twice");
    Onnx__NodeProto *n = add_node(g, "holder", "Add", "twice,x", "z");
    add_output(g, "z", 1, 1, d);
    /* body: its own input "p", outer "twice" and "x", a nested subgraph. */
    Onnx__GraphProto *body = new_graph("body");
    add_input(body, "p", 1, 1, d);
    add_node(body, "", "Add", "p,twice", "q");
    Onnx__NodeProto *bn = add_node(body, "inner_holder", "Add", "q,x", "r");
    add_output(body, "r", 1, 1, d);
    add_output(body, "x", 1, 1, d); /* an outer value as a result */
    Onnx__GraphProto *inner = new_graph("inner");
    add_node(inner, "deep", "Add", "q,twice", "s");
    add_output(inner, "s", 1, 1, d);
    add_attr(bn, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = inner;
    add_attr(n, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = body;
    Onnx__AttributeProto *gs = add_attr(n, "bodies", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
    gs->n_graphs = 1;
    gs->graphs = mem(sizeof(void *));
    gs->graphs[0] = inner; /* read again, now directly under "outer": q is unknown there */

    const char *msg = refused(new_model(g, 13), RN_PARSE_ERROR);
    assert_mentions(msg, "'q'");
    assert_mentions(msg, "deep");
    gs->n_graphs = 0;
    n->n_attribute = 1;

    graph *out;
    cr_assert_eq(read_built(new_model(g, 13), NULL, &out), RN_OK, "%s", rn_last_error());
    const graph_attr *a = graph_node_attr(graph_find_value(out, "z", false)->producer, "body");
    cr_assert(a != NULL && a->type == GRAPH_ATTR_GRAPH);
    graph *sub = a->g;
    cr_assert_eq(sub->parent, out);
    cr_assert_eq(sub->opset, 13);
    cr_assert_eq(sub->n_inputs, 1);
    cr_assert(sub->inputs[0]->is_parameter);
    cr_assert_eq(sub->n_nodes, 2);
    graph_value *twice = graph_find_value(out, "twice", false);
    cr_assert_null(graph_find_value(sub, "twice", false));
    cr_assert_eq(sub->nodes[0]->inputs[1], twice, "outer name resolves to the outer value");
    cr_assert_eq(sub->outputs[1], graph_find_value(out, "x", false));
    const graph_attr *ia = graph_node_attr(sub->nodes[1], "g");
    cr_assert(ia != NULL && ia->g != NULL);
    cr_assert_eq(ia->g->parent, sub);
    cr_assert_eq(ia->g->nodes[0]->inputs[0], graph_find_value(sub, "q", false));
    cr_assert_eq(ia->g->nodes[0]->inputs[1], twice);
    graph_free(out);
}

Test(onnx_reader, subgraphs_nested_too_deep_are_refused)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = new_graph("top");
    add_input(g, "x", 1, 1, d);
    Onnx__NodeProto *n = add_node(g, "n0", "Add", "x,x", "z");
    add_output(g, "z", 1, 1, d);
    for (int level = 1; level <= 70; level++) {
        Onnx__GraphProto *sub = new_graph("sub");
        char name[32];
        snprintf(name, sizeof name, "n%d", level);
        Onnx__NodeProto *sn = add_node(sub, name, "Add", "x,x", "y");
        add_output(sub, "y", 1, 1, d);
        add_attr(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = sub;
        n = sn;
    }
    assert_mentions(refused(new_model(g, 13), RN_UNSUPPORTED), "deeper");
}

Test(onnx_reader, every_constant_form)
{
    Onnx__GraphProto *g = new_graph("consts");
    Onnx__NodeProto *n;
    n = add_node(g, "", "Constant", "", "vf");
    add_attr(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = 2.5f;
    n = add_node(g, "", "Constant", "", "vfs");
    static const float fl[] = {1, 2, 3};
    Onnx__AttributeProto *a =
        add_attr(n, "value_floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = 3;
    a->floats = (float *)fl;
    n = add_node(g, "", "Constant", "", "vi");
    add_attr(n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->i = -3;
    n = add_node(g, "", "Constant", "", "vis");
    static const int64_t il[] = {4, 5};
    a = add_attr(n, "value_ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = 2;
    a->ints = (int64_t *)il;
    n = add_node(g, "", "Constant", "", "vs");
    a = add_attr(n, "value_string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->s = (ProtobufCBinaryData){.len = 3, .data = (uint8_t *)str("abc")};
    n = add_node(g, "", "Constant", "", "vss");
    a = add_attr(n, "value_strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->n_strings = 2;
    a->strings = mem(2 * sizeof *a->strings);
    a->strings[0] = (ProtobufCBinaryData){.len = 1, .data = (uint8_t *)str("x")};
    a->strings[1] = (ProtobufCBinaryData){.len = 2, .data = (uint8_t *)str("yz")};
    const char *names[] = {"vf", "vfs", "vi", "vis", "vs", "vss"};
    for (int i = 0; i < 6; i++)
        add_output(g, names[i], 0, -1, NULL);
    graph *out;
    cr_assert_eq(read_built(new_model(g, 13), NULL, &out), RN_OK, "%s", rn_last_error());
    cr_assert_eq(out->n_nodes, 0);
    const graph_tensor *t[6];
    for (int i = 0; i < 6; i++) {
        t[i] = out->outputs[i]->constant;
        cr_assert_not_null(t[i], "%s", names[i]);
    }
    static const int64_t d3[] = {3}, d2[] = {2};
    cr_assert(t[0]->type == RN_F32 && t[0]->rank == 0 && *(float *)t[0]->data == 2.5f);
    cr_assert(t[1]->type == RN_F32);
    assert_tensor_dims(t[1], 1, d3);
    cr_assert_arr_eq(t[1]->data, fl, sizeof fl);
    cr_assert(t[2]->type == RN_I64 && t[2]->rank == 0 && *(int64_t *)t[2]->data == -3);
    cr_assert(t[3]->type == RN_I64);
    assert_tensor_dims(t[3], 1, d2);
    cr_assert_arr_eq(t[3]->data, il, sizeof il);
    cr_assert(t[4]->type == RN_STRING && t[4]->rank == 0);
    cr_assert_str_eq(((char **)t[4]->data)[0], "abc");
    cr_assert(t[5]->type == RN_STRING);
    assert_tensor_dims(t[5], 1, d2);
    cr_assert_str_eq(((char **)t[5]->data)[1], "yz");
    cr_assert_eq(out->outputs[3]->type, RN_I64);
    assert_shape(&out->outputs[3]->shape, 1, d2);
    graph_free(out);
}

Test(onnx_reader, bad_constant_nodes)
{
    Onnx__GraphProto *g = new_graph("c");
    Onnx__NodeProto *n = add_node(g, "two", "Constant", "", "v");
    add_attr(n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->i = 1;
    add_attr(n, "value_float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = 1;
    add_output(g, "v", 0, -1, NULL);
    Onnx__ModelProto *m = new_model(g, 13);
    assert_mentions(refused(m, RN_PARSE_ERROR), "two");
    /* sparse_value: refused as unsupported */
    n->n_attribute = 0;
    Onnx__AttributeProto *a =
        add_attr(n, "sparse_value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
    a->sparse_tensor = mem(sizeof *a->sparse_tensor);
    onnx__sparse_tensor_proto__init(a->sparse_tensor);
    assert_mentions(refused(m, RN_UNSUPPORTED), "sparse");
    /* value_int declared with the wrong type */
    n->n_attribute = 0;
    add_attr(n, "value_int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = 1;
    assert_mentions(refused(m, RN_PARSE_ERROR), "value_int");
}

/* ================= tensors and their data fields ================= */

Test(onnx_reader, typed_data_fields)
{
    static const int64_t d2[] = {2}, d3[] = {3};
    graph_tensor t;
    Onnx__TensorProto *p;

    p = tensor("f", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d2);
    static float fv[] = {0.25f, -1.0f};
    p->n_float_data = 2;
    p->float_data = fv;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
    cr_assert(t.type == RN_F32 && t.nbytes == 8);
    cr_assert_arr_eq(t.data, fv, sizeof fv);
    graph_tensor_release(&t);

    struct {
        int type;
        rn_element_type rt;
        int32_t values[3];
    } narrow[] = {
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT8, RN_I8, {-128, 7, 127}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, RN_U8, {0, 200, 255}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT16, RN_I16, {-300, 0, 32767}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__UINT16, RN_U16, {0, 1, 65535}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, RN_BOOL, {1, 0, 1}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, RN_F16, {0x3c00, 0xc000, 0}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, RN_BF16, {0x3f80, 0xbf80, 0x7f80}},
        {ONNX__TENSOR_PROTO__DATA_TYPE__INT32, RN_I32, {-5, 7, 1}},
    };
    for (size_t k = 0; k < sizeof narrow / sizeof narrow[0]; k++) {
        p = tensor("n", narrow[k].type, 1, d3);
        p->n_int32_data = 3;
        p->int32_data = narrow[k].values;
        cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
        cr_assert_eq(t.type, narrow[k].rt);
        size_t size = rn_element_type_size(narrow[k].rt);
        cr_assert_eq(t.nbytes, 3 * size);
        for (int i = 0; i < 3; i++) {
            int64_t got;
            switch (narrow[k].rt) {
            case RN_I8:
                got = ((int8_t *)t.data)[i];
                break;
            case RN_U8:
            case RN_BOOL:
                got = ((uint8_t *)t.data)[i];
                break;
            case RN_I16:
                got = ((int16_t *)t.data)[i];
                break;
            case RN_I32:
                got = ((int32_t *)t.data)[i];
                break;
            default:
                got = ((uint16_t *)t.data)[i];
                break;
            }
            cr_assert_eq(got, narrow[k].values[i], "type %d element %d", narrow[k].type, i);
        }
        graph_tensor_release(&t);
    }

    p = tensor("i64", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, d2);
    static int64_t lv[] = {INT64_MIN, 9};
    p->n_int64_data = 2;
    p->int64_data = lv;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
    cr_assert_arr_eq(t.data, lv, sizeof lv);
    graph_tensor_release(&t);

    p = tensor("f64", ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE, 1, d2);
    static double dv[] = {1e300, -0.5};
    p->n_double_data = 2;
    p->double_data = dv;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
    cr_assert(t.type == RN_F64);
    cr_assert_arr_eq(t.data, dv, sizeof dv);
    graph_tensor_release(&t);

    static uint64_t uv[] = {UINT32_MAX, 3};
    p = tensor("u32", ONNX__TENSOR_PROTO__DATA_TYPE__UINT32, 1, d2);
    p->n_uint64_data = 2;
    p->uint64_data = uv;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
    cr_assert(t.type == RN_U32 && ((uint32_t *)t.data)[0] == UINT32_MAX);
    graph_tensor_release(&t);
    p->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT64;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
    cr_assert_arr_eq(t.data, uv, sizeof uv);
    graph_tensor_release(&t);

    p = tensor("s", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, 1, d2);
    p->n_string_data = 2;
    p->string_data = mem(2 * sizeof *p->string_data);
    p->string_data[0] = (ProtobufCBinaryData){.len = 2, .data = (uint8_t *)str("hi")};
    p->string_data[1] = (ProtobufCBinaryData){.len = 0, .data = NULL};
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
    cr_assert(t.type == RN_STRING);
    cr_assert_str_eq(((char **)t.data)[0], "hi");
    cr_assert_str_eq(((char **)t.data)[1], "");
    graph_tensor_release(&t);

    /* Empty tensors need no data, and still get a buffer. */
    static const int64_t d0[] = {0, 4};
    p = tensor("empty", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d0);
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_OK, "%s", rn_last_error());
    cr_assert(t.nbytes == 0 && t.data != NULL && t.rank == 2);
    graph_tensor_release(&t);
}

Test(onnx_reader, bad_tensor_data)
{
    static const int64_t d2[] = {2}, d22[] = {2, 2};
    graph_tensor t = {.data = (void *)1};
    Onnx__TensorProto *p;

    static int32_t big[] = {3, 256};
    p = tensor("u8w", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 1, d2);
    p->n_int32_data = 2;
    p->int32_data = big;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_PARSE_ERROR);
    assert_mentions(rn_last_error(), "u8w");
    assert_mentions(rn_last_error(), "256");
    cr_assert_eq(t.data, (void *)1, "out written on failure");

    static float three[] = {1, 2, 3};
    p = tensor("short", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, d22);
    p->n_float_data = 3;
    p->float_data = three;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_PARSE_ERROR);
    assert_mentions(rn_last_error(), "short");
    assert_mentions(rn_last_error(), "float_data");

    p = tensor("wrongfield", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, d2);
    p->n_float_data = 2;
    p->float_data = three;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_PARSE_ERROR);
    assert_mentions(rn_last_error(), "wrongfield");

    /* Sizes are checked before anything is allocated: a terabyte of dims
     * with two values is a parse error, not an attempt to allocate. */
    p = tensor("vast", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2,
               (const int64_t[]){1 << 20, 1 << 20});
    p->n_float_data = 3;
    p->float_data = three;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_PARSE_ERROR, "%s", rn_last_error());
    assert_mentions(rn_last_error(), "vast");

    p = tensor("nodata", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d2);
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_PARSE_ERROR);
    assert_mentions(rn_last_error(), "nodata");

    p = tensor("neg", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (const int64_t[]){-2});
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_PARSE_ERROR);
    assert_mentions(rn_last_error(), "neg");

    p = tensor("c64", 14, 1, d2);
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_UNSUPPORTED);
    assert_mentions(rn_last_error(), "complex64");

    p = tensor("huge", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2,
               (const int64_t[]){INT64_MAX, INT64_MAX});
    p->has_raw_data = 1;
    cr_assert_eq(onnx_tensor_from_proto(p, NULL, &t), RN_PARSE_ERROR);
    assert_mentions(rn_last_error(), "huge");
    cr_assert_eq(t.data, (void *)1);
}

Test(onnx_reader, initializer_length_must_match_dims)
{
    static const int64_t d22[] = {2, 2};
    static const float three[] = {1, 2, 3};
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    g->initializer[g->n_initializer++] = tensor_raw("y", 1, 2, d22, three, sizeof three);
    const char *msg = refused(m, RN_PARSE_ERROR);
    assert_mentions(msg, "'y'");
    assert_mentions(msg, "raw_data");
    assert_mentions(msg, "12 bytes");
}

Test(onnx_reader, initializer_type_must_match_declared_input)
{
    static const int64_t d23[] = {2, 3};
    static const int64_t six[6] = {0};
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    g->initializer[g->n_initializer++] = tensor_raw("y", 7, 2, d23, six, sizeof six);
    const char *msg = refused(m, RN_TYPE_MISMATCH);
    assert_mentions(msg, "'y'");
}

/* ================= external data ================= */

/* A model Add(x, w) whose initializer w (f32 [2,3]) lives in `location` at
 * byte 8, as ONNX's external data keys describe it. */
static Onnx__ModelProto *external_model(const char *location, const char *length)
{
    static const int64_t d23[] = {2, 3};
    Onnx__GraphProto *g = new_graph("ext");
    add_input(g, "x", 1, 2, d23);
    add_node(g, "add", "Add", "x,w", "z");
    add_output(g, "z", 1, 2, d23);
    Onnx__TensorProto *w = tensor("w", 1, 2, d23);
    w->has_data_location = 1;
    w->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    w->external_data = mem(4 * sizeof(void *));
    const char *kv[][2] = {{"location", location}, {"offset", "8"}, {"length", length}};
    for (int i = 0; i < 3; i++) {
        Onnx__StringStringEntryProto *e = mem(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = str(kv[i][0]);
        e->value = str(kv[i][1]);
        w->external_data[w->n_external_data++] = e;
    }
    g->initializer[g->n_initializer++] = w;
    return new_model(g, 13);
}

static const float WEIGHTS[6] = {1, -2, 3.5f, 4, 5, -6};

/* Writes model.onnx and data/w.bin (8 junk bytes, then the weights) into a
 * new folder; returns the model's path. */
static const char *write_external(const Onnx__ModelProto *m, size_t weight_bytes)
{
    const char *dir = temp_dir();
    char path[1200];
    snprintf(path, sizeof path, "%s/data", dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    unsigned char blob[8 + sizeof WEIGHTS];
    memset(blob, 0xee, 8);
    memcpy(blob + 8, WEIGHTS, sizeof WEIGHTS);
    snprintf(path, sizeof path, "%s/data/w.bin", dir);
    write_file(path, blob, 8 + weight_bytes);
    size_t size;
    void *buf = pack(m, &size);
    char *model = mem(1200);
    snprintf(model, 1200, "%s/model.onnx", dir);
    write_file(model, buf, size);
    return model;
}

Test(onnx_reader, external_data)
{
    const char *model = write_external(external_model("data/w.bin", "24"), sizeof WEIGHTS);
    graph *g = NULL;
    rn_status st = onnx_read_file(model, &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    graph_value *w = graph_find_value(g, "w", false);
    cr_assert(w != NULL && w->constant != NULL);
    cr_assert_eq(w->constant->nbytes, sizeof WEIGHTS);
    cr_assert_arr_eq(w->constant->data, WEIGHTS, sizeof WEIGHTS);
    graph_free(g);
}

Test(onnx_reader, external_data_that_is_too_short)
{
    const char *model = write_external(external_model("data/w.bin", "24"), sizeof WEIGHTS - 4);
    graph *g = SENTINEL;
    cr_assert_eq(onnx_read_file(model, &g), RN_PARSE_ERROR);
    cr_assert_eq(g, SENTINEL);
    assert_mentions(rn_last_error(), "'w'");
    assert_mentions(rn_last_error(), "w.bin");
}

Test(onnx_reader, external_data_paths_stay_in_the_model_folder)
{
    const char *bad[] = {"../w.bin", "data/../../w.bin", "/etc/passwd", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *model = write_external(external_model(bad[i], "24"), sizeof WEIGHTS);
        graph *g = SENTINEL;
        cr_assert_eq(onnx_read_file(model, &g), RN_PARSE_ERROR, "location '%s': %s", bad[i],
                     rn_last_error());
        cr_assert_eq(g, SENTINEL);
        assert_mentions(rn_last_error(), "'w'");
    }
    /* A length key that disagrees with the dims. */
    const char *model = write_external(external_model("data/w.bin", "20"), sizeof WEIGHTS);
    graph *g;
    cr_assert_eq(onnx_read_file(model, &g), RN_PARSE_ERROR);
    assert_mentions(rn_last_error(), "length");
    /* In memory without a folder, external data cannot be found. */
    assert_mentions(refused(external_model("data/w.bin", "24"), RN_INVALID_ARG), "'w'");
}

/* ================= bad files ================= */

Test(onnx_reader, missing_file)
{
    graph *g = SENTINEL;
    const char *path = "/nonexistent/folder/model.onnx";
    cr_assert_eq(onnx_read_file(path, &g), RN_IO_ERROR);
    cr_assert_eq(g, SENTINEL);
    assert_mentions(rn_last_error(), path);
    graph_tensor t;
    cr_assert_eq(onnx_read_tensor_file("/nonexistent/input_0.pb", &t), RN_IO_ERROR);
    assert_mentions(rn_last_error(), "/nonexistent/input_0.pb");
    cr_assert_eq(onnx_read_file(TESTDATA "/node/test_add", &g), RN_IO_ERROR);
    cr_assert_eq(g, SENTINEL);
}

Test(onnx_reader, null_arguments)
{
    graph *g;
    cr_assert_eq(onnx_read_file(NULL, &g), RN_INVALID_ARG);
    cr_assert_eq(onnx_read_memory(NULL, 10, NULL, &g), RN_INVALID_ARG);
}

Test(onnx_reader, empty_file)
{
    const char *dir = temp_dir();
    char path[1200];
    snprintf(path, sizeof path, "%s/empty.onnx", dir);
    write_file(path, "", 0);
    graph *g = SENTINEL;
    cr_assert_eq(onnx_read_file(path, &g), RN_PARSE_ERROR);
    cr_assert_eq(g, SENTINEL);
    assert_mentions(rn_last_error(), path);
    assert_mentions(rn_last_error(), "empty");
}

Test(onnx_reader, random_bytes)
{
    /* A fixed seed: the same bytes on every run. */
    unsigned int seed = 12345;
    unsigned char *buf = mem(4096);
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 1 + (size_t)(rand_r(&seed) % 4096);
        for (size_t i = 0; i < n; i++)
            buf[i] = (unsigned char)rand_r(&seed);
        graph *g = SENTINEL;
        rn_status st = onnx_read_memory(buf, n, NULL, &g);
        cr_assert_neq(st, RN_OK, "trial %d: random bytes read as a model", trial);
        cr_assert_eq(g, SENTINEL);
        cr_assert_neq(rn_last_error()[0], '\0');
        graph_tensor t;
        if (onnx_read_tensor_memory(buf, n, NULL, &t) == RN_OK)
            graph_tensor_release(&t); /* a TensorProto is easy to hit; it must be sound */
    }
}

Test(onnx_reader, truncated_model)
{
    size_t size;
    const unsigned char *buf = slurp(TESTDATA "/node/test_add/model.onnx", &size);
    for (size_t n = 0; n < size; n++) {
        graph *g = SENTINEL;
        rn_status st = onnx_read_memory(buf, n, NULL, &g);
        cr_assert_neq(st, RN_OK, "a model cut to %zu of %zu bytes was read", n, size);
        cr_assert_eq(g, SENTINEL);
    }
    graph *g;
    cr_assert_eq(onnx_read_memory(buf, size, NULL, &g), RN_OK, "%s", rn_last_error());
    graph_free(g);
}

/* Writes a varint ending just before `end`; returns where it starts. */
static unsigned char *put_varint_before(unsigned char *end, uint64_t v)
{
    unsigned char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    end -= n;
    memcpy(end, tmp, (size_t)n);
    return end;
}

Test(onnx_reader, deeply_nested_messages_do_not_overflow_the_stack)
{
    /* graph { node { attribute { g { node { attribute { g ... } } } } } }, a
     * hundred thousand levels: protobuf-c alone would recurse off the stack. */
    size_t cap = 4u << 20;
    unsigned char *buf = mem(cap);
    unsigned char *end = buf + cap, *p = end;
    static const int fields[] = {6, 5,
                                 1}; /* AttributeProto.g, NodeProto.attribute, GraphProto.node */
    for (int level = 0; level < 100000; level++) {
        for (int k = 0; k < 3; k++) {
            p = put_varint_before(p, (uint64_t)(end - p));
            p = put_varint_before(p, (uint64_t)(fields[k] << 3 | 2));
        }
    }
    p = put_varint_before(p, (uint64_t)(end - p));
    p = put_varint_before(p, 7 << 3 | 2); /* ModelProto.graph */
    graph *g = SENTINEL;
    cr_assert_eq(onnx_read_memory(p, (size_t)(end - p), NULL, &g), RN_PARSE_ERROR, "%s",
                 rn_last_error());
    cr_assert_eq(g, SENTINEL);
    assert_mentions(rn_last_error(), "nest");
}

/* Every single-byte change of a real model: read or refused, never a crash
 * (run under the sanitizers to see memory errors and undefined behaviour). */
static void corrupt_every_byte(const char *path)
{
    size_t size;
    const unsigned char *orig = slurp(path, &size);
    unsigned char *buf = mem(size);
    static const unsigned char flips[] = {0x00, 0xff, 0x80, 0x01};
    int ok = 0;
    for (size_t i = 0; i < size; i++) {
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(buf, orig, size);
            buf[i] ^= flips[f] ? flips[f] : buf[i];
            graph *g = NULL;
            if (onnx_read_memory(buf, size, NULL, &g) == RN_OK) {
                ok++;
                graph_free(g);
            }
        }
    }
    cr_assert_lt(ok, (int)(4 * size), "%s: every corruption was accepted", path);
}

Test(onnx_reader, corrupted_models_never_crash)
{
    corrupt_every_byte(TESTDATA "/node/test_add/model.onnx");
    corrupt_every_byte(TESTDATA "/pytorch-operator/test_operator_addconstant/model.onnx");
    corrupt_every_byte(TESTDATA "/pytorch-operator/test_operator_non_float_params/model.onnx");
}

/* Corrupted Reshape shapes reach the Reshape schema's inference with huge
 * dims: separate, so that a failure there names the op, not the reader. */
Test(onnx_reader, corrupted_reshape_model_never_crashes)
{
    corrupt_every_byte(TESTDATA "/pytorch-converted/test_PixelShuffle/model.onnx");
}

/* ================= bad graphs ================= */

Test(onnx_reader, model_without_graph)
{
    Onnx__ModelProto *m = add_model(NULL);
    m->graph = NULL;
    assert_mentions(refused(m, RN_PARSE_ERROR), "no graph");
}

Test(onnx_reader, model_without_default_opset)
{
    Onnx__ModelProto *m = add_model(NULL);
    m->opset_import[0]->domain = str("com.example");
    const char *msg = refused(m, RN_PARSE_ERROR);
    assert_mentions(msg, "opset");
    assert_mentions(msg, "'add'");
}

Test(onnx_reader, undefined_value)
{
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    g->node[0]->input[1] = str("nowhere");
    const char *msg = refused(m, RN_PARSE_ERROR);
    assert_mentions(msg, "'add'");
    assert_mentions(msg, "'nowhere'");
    /* an undefined graph output */
    g->node[0]->input[1] = str("y");
    g->output[0]->name = str("ghost");
    assert_mentions(refused(m, RN_PARSE_ERROR), "'ghost'");
}

Test(onnx_reader, value_defined_twice)
{
    static const int64_t d23[] = {2, 3};
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    Onnx__NodeProto *n = add_node(g, "again", "Add", "x,x", "z");
    const char *msg = refused(m, RN_PARSE_ERROR);
    assert_mentions(msg, "'z'");
    assert_mentions(msg, "twice");
    assert_mentions(msg, "again");
    /* a node output that is also a graph input */
    n->output[0] = str("x");
    assert_mentions(refused(m, RN_PARSE_ERROR), "'x'");
    /* two initializers of one name */
    g->n_node = 1;
    static const float six[6] = {0};
    g->initializer[g->n_initializer++] = tensor_raw("w", 1, 2, d23, six, sizeof six);
    g->initializer[g->n_initializer++] = tensor_raw("w", 1, 2, d23, six, sizeof six);
    assert_mentions(refused(m, RN_PARSE_ERROR), "'w'");
    /* a graph input listed twice */
    g->n_initializer = 0;
    add_input(g, "x", 1, 2, d23);
    assert_mentions(refused(m, RN_PARSE_ERROR), "'x'");
}

Test(onnx_reader, unknown_element_type)
{
    static const int64_t d23[] = {2, 3};
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    g->input[1]->type->tensor_type->elem_type = 99;
    const char *msg = refused(m, RN_PARSE_ERROR);
    assert_mentions(msg, "'y'");
    assert_mentions(msg, "99");
    g->input[1]->type->tensor_type->elem_type = 15;
    assert_mentions(refused(m, RN_UNSUPPORTED), "complex128");
    g->input[1]->type->tensor_type->elem_type = 1;
    static const float six[6] = {0};
    g->initializer[g->n_initializer++] = tensor_raw("w", 1234, 2, d23, six, sizeof six);
    msg = refused(m, RN_PARSE_ERROR);
    assert_mentions(msg, "'w'");
    assert_mentions(msg, "1234");
}

/* Sequences of tensors and optionals are read (graph_kind); maps and
 * sequences of sequences are not. */
Test(onnx_reader, map_and_nested_sequence_types_are_unsupported)
{
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    Onnx__TypeProto *tp = g->input[0]->type;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
    tp->map_type = mem(sizeof *tp->map_type);
    onnx__type_proto__map__init(tp->map_type);
    const char *msg = refused(m, RN_UNSUPPORTED);
    assert_mentions(msg, "'x'");
    assert_mentions(msg, "map");
    Onnx__TypeProto *inner = mem(sizeof *inner);
    onnx__type_proto__init(inner);
    inner->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    inner->sequence_type = mem(sizeof *inner->sequence_type);
    onnx__type_proto__sequence__init(inner->sequence_type);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = mem(sizeof *tp->sequence_type);
    onnx__type_proto__sequence__init(tp->sequence_type);
    tp->sequence_type->elem_type = inner;
    msg = refused(m, RN_UNSUPPORTED);
    assert_mentions(msg, "'x'");
    assert_mentions(msg, "sequence");
}

Test(onnx_reader, sequence_and_optional_types_are_read)
{
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    /* x: sequence(tensor(float)) */
    Onnx__TypeProto *tp = g->input[0]->type;
    Onnx__TypeProto *elem = mem(sizeof *elem);
    onnx__type_proto__init(elem);
    elem->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    elem->tensor_type = mem(sizeof *elem->tensor_type);
    onnx__type_proto__tensor__init(elem->tensor_type);
    elem->tensor_type->has_elem_type = 1;
    elem->tensor_type->elem_type = 1;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = mem(sizeof *tp->sequence_type);
    onnx__type_proto__sequence__init(tp->sequence_type);
    tp->sequence_type->elem_type = elem;
    graph *out;
    cr_assert_eq(read_built(m, NULL, &out), RN_OK, "%s", rn_last_error());
    const graph_value *x = graph_find_value(out, "x", false);
    cr_assert_not_null(x);
    cr_assert_eq(x->kind, GRAPH_KIND_SEQUENCE);
    cr_assert_eq(x->type, RN_F32);
    cr_assert_eq(x->shape.rank, -1, "a sequence has no shape of its own");
    graph_free(out);
    /* x: optional(sequence(tensor(float))) */
    Onnx__TypeProto *seq = mem(sizeof *seq);
    *seq = *tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
    tp->optional_type = mem(sizeof *tp->optional_type);
    onnx__type_proto__optional__init(tp->optional_type);
    tp->optional_type->elem_type = seq;
    cr_assert_eq(read_built(m, NULL, &out), RN_OK, "%s", rn_last_error());
    x = graph_find_value(out, "x", false);
    cr_assert_eq(x->kind, GRAPH_KIND_OPTIONAL_SEQUENCE);
    cr_assert_eq(x->type, RN_F32);
    graph_free(out);
}

Test(onnx_reader, unknown_op)
{
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    import_domain(m, "com.example", 1);
    g->node[0]->op_type = str("FrobnicateV2");
    g->node[0]->domain = str("com.example");
    const char *msg = refused(m, RN_UNSUPPORTED);
    assert_mentions(msg, "'add'");
    assert_mentions(msg, "FrobnicateV2");
    assert_mentions(msg, "com.example");
    /* the default domain, spelled out */
    g->node[0]->domain = str("ai.onnx");
    msg = refused(m, RN_UNSUPPORTED);
    assert_mentions(msg, "FrobnicateV2");
    g->node[0]->op_type = str("Add");
    graph *out;
    cr_assert_eq(read_built(m, NULL, &out), RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(out->nodes[0]->domain, "");
    cr_assert_eq(out->nodes[0]->opset, 13);
    graph_free(out);
}

Test(onnx_reader, cycle)
{
    static const int64_t d[] = {2};
    Onnx__GraphProto *g = new_graph("loop");
    add_input(g, "x", 1, 1, d);
    add_node(g, "a", "Add", "x,b", "a_out");
    add_node(g, "b", "Add", "a_out,x", "b");
    add_output(g, "b", 1, 1, d);
    assert_mentions(refused(new_model(g, 13), RN_PARSE_ERROR), "cycle");
}

Test(onnx_reader, rank_beyond_the_maximum)
{
    static const int64_t d9[] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    Onnx__GraphProto *g;
    Onnx__ModelProto *m = add_model(&g);
    g->input[0] = value_info("x", 1, RN_MAX_RANK + 1, d9);
    const char *msg = refused(m, RN_UNSUPPORTED);
    assert_mentions(msg, "'x'");
    assert_mentions(msg, "rank 9");
    g->input[0] = value_info("x", 1, 2, (const int64_t[]){2, 3});
    static const float one = 1;
    g->initializer[g->n_initializer++] = tensor_raw("big", 1, RN_MAX_RANK + 1, d9, &one, 4);
    msg = refused(m, RN_UNSUPPORTED);
    assert_mentions(msg, "'big'");
}

Test(onnx_reader, inference_error_names_the_model_path)
{
    static const int64_t d3[] = {3}, d4[] = {4};
    Onnx__GraphProto *g = new_graph("mismatch");
    add_input(g, "x", 1, 1, d3);
    add_input(g, "y", 1, 1, d4);
    add_node(g, "adder", "Add", "x,y", "z");
    add_output(g, "z", 1, -1, NULL);
    size_t size;
    void *buf = pack(new_model(g, 13), &size);
    char *path = mem(1200);
    snprintf(path, 1200, "%s/mismatch.onnx", temp_dir());
    write_file(path, buf, size);
    graph *out = SENTINEL;
    rn_status st = onnx_read_file(path, &out);
    cr_assert_eq(st, RN_SHAPE_MISMATCH, "%s: %s", rn_status_name(st), rn_last_error());
    cr_assert_eq(out, SENTINEL);
    assert_mentions(rn_last_error(), path);
    assert_mentions(rn_last_error(), "adder");
}
