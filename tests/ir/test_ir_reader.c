/* The OpenVINO IR reader (graph/ir): a small IR read into the graph, and
 * malformed IR refused with an error that names the problem. Each malformed
 * case is the valid model below with one thing broken. The end-to-end check
 * over IR written by OpenVINO's converter is tests/ir/check_models.py. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ir/ir_reader.h"

/* Parameter x [1,4] + Const bias [4] -> Add -> ReLU -> Result. */
static const char VALID[] =
    "<?xml version=\"1.0\"?>\n"
    "<net name=\"tiny\" version=\"11\">\n"
    " <layers>\n"
    "  <layer id=\"0\" name=\"x\" type=\"Parameter\" version=\"opset1\">\n"
    "   <data shape=\"1,4\" element_type=\"f32\"/>\n"
    "   <output><port id=\"0\" precision=\"FP32\" names=\"x\"><dim>1</dim><dim>4</dim></port>"
    "</output>\n"
    "  </layer>\n"
    "  <layer id=\"1\" name=\"bias\" type=\"Const\" version=\"opset1\">\n"
    "   <data element_type=\"f32\" shape=\"4\" offset=\"0\" size=\"16\"/>\n"
    "   <output><port id=\"0\" precision=\"FP32\"><dim>4</dim></port></output>\n"
    "  </layer>\n"
    "  <layer id=\"2\" name=\"add\" type=\"Add\" version=\"opset1\">\n"
    "   <data auto_broadcast=\"numpy\"/>\n"
    "   <rt_info><attribute name=\"fused_names\" version=\"0\" value=\"add_orig,scale_orig\"/>"
    "</rt_info>\n"
    "   <input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port>"
    "<port id=\"1\" precision=\"FP32\"><dim>4</dim></port></input>\n"
    "   <output><port id=\"2\" precision=\"FP32\" names=\"sum\"><dim>1</dim><dim>4</dim></port>"
    "</output>\n"
    "  </layer>\n"
    "  <layer id=\"3\" name=\"relu\" type=\"ReLU\" version=\"opset1\">\n"
    "   <input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>\n"
    "   <output><port id=\"1\" precision=\"FP32\" names=\"y\"><dim>1</dim><dim>4</dim></port>"
    "</output>\n"
    "  </layer>\n"
    "  <layer id=\"4\" name=\"y/sink\" type=\"Result\" version=\"opset1\">\n"
    "   <input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>\n"
    "  </layer>\n"
    " </layers>\n"
    " <edges>\n"
    "  <edge from-layer=\"0\" from-port=\"0\" to-layer=\"2\" to-port=\"0\"/>\n"
    "  <edge from-layer=\"1\" from-port=\"0\" to-layer=\"2\" to-port=\"1\"/>\n"
    "  <edge from-layer=\"2\" from-port=\"2\" to-layer=\"3\" to-port=\"0\"/>\n"
    "  <edge from-layer=\"3\" from-port=\"1\" to-layer=\"4\" to-port=\"0\"/>\n"
    " </edges>\n"
    "</net>\n";

static const float BIAS[4] = {1.0f, -2.0f, 3.0f, -4.0f};

/* `src` with the first occurrence of `from` replaced by `to` (malloc'ed). */
static char *replace(const char *src, const char *from, const char *to)
{
    const char *at = strstr(src, from);
    cr_assert_not_null(at, "the test's model has no '%s'", from);
    size_t head = (size_t)(at - src), n = strlen(src) - strlen(from) + strlen(to);
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    memcpy(s, src, head);
    strcpy(s + head, to);
    strcat(s, at + strlen(from));
    return s;
}

static char *broken(const char *from, const char *to)
{
    return replace(VALID, from, to);
}

/* Reads `xml` with the 16-byte bias as its .bin (bin_size bytes of it),
 * expects `want` and an error message containing every one of the NULL-
 * terminated `needles`. */
static void expect_error(const char *xml, size_t bin_size, rn_status want, const char **needles)
{
    graph *g = (graph *)0x1;
    rn_status st =
        ir_read_memory(xml, strlen(xml), bin_size ? BIAS : NULL, bin_size, "tiny.xml", &g);
    cr_assert_eq(st, want, "status %s, expected %s (%s)", rn_status_name(st), rn_status_name(want),
                 rn_last_error());
    cr_assert_eq(g, (graph *)0x1, "the out parameter is written only on success");
    for (const char **n = needles; *n != NULL; n++)
        cr_assert_not_null(strstr(rn_last_error(), *n), "'%s' is not in the error: %s", *n,
                           rn_last_error());
}

#define EXPECT(xml, bin_size, status, ...)                                                         \
    do {                                                                                           \
        const char *needles_[] = {__VA_ARGS__, NULL};                                              \
        expect_error(xml, bin_size, status, needles_);                                             \
    } while (0)

#define EXPECT_BROKEN(from, to, status, ...)                                                       \
    do {                                                                                           \
        char *xml_ = broken(from, to);                                                             \
        EXPECT(xml_, sizeof BIAS, status, __VA_ARGS__);                                            \
        free(xml_);                                                                                \
    } while (0)

static graph_node *find_node(const graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->name, name) == 0)
            return g->nodes[i];
    return NULL;
}

Test(ir_reader, reads_layers_edges_constants_and_fused_names)
{
    graph *g;
    rn_status st = ir_read_memory(VALID, strlen(VALID), BIAS, sizeof BIAS, "tiny.xml", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    cr_assert_eq(g->n_inputs, 1);
    cr_assert_str_eq(g->inputs[0]->name, "x");
    cr_assert_eq(g->inputs[0]->type, RN_F32);
    cr_assert_eq(g->inputs[0]->shape.rank, 2);
    cr_assert_eq(g->inputs[0]->shape.dims[1], 4);
    cr_assert_eq(g->n_outputs, 1);
    cr_assert_str_eq(g->outputs[0]->name, "y", "a value takes its port's tensor name");
    cr_assert_eq(g->n_nodes, 2);
    graph_node *add = find_node(g, "add"), *relu = find_node(g, "relu");
    cr_assert_not_null(add);
    cr_assert_not_null(relu);
    cr_assert_str_eq(add->op_type, "Add");
    cr_assert_str_eq(relu->op_type, "Relu");
    cr_assert_eq(relu->inputs[0], add->outputs[0]);
    const graph_tensor *bias = add->inputs[1]->constant;
    cr_assert_not_null(bias, "a Const layer is a constant value");
    cr_assert_eq(bias->type, RN_F32);
    cr_assert_eq(bias->rank, 1);
    cr_assert_eq(memcmp(bias->data, BIAS, sizeof BIAS), 0, "the constant holds the .bin's bytes");
    cr_assert_eq(add->n_fused, 3, "the layer's name and its rt_info fused names");
    cr_assert_str_eq(add->fused_names[0], "add");
    cr_assert_str_eq(add->fused_names[1], "add_orig");
    cr_assert_str_eq(add->fused_names[2], "scale_orig");
    cr_assert_eq(relu->n_fused, 1);
    cr_assert_str_eq(relu->fused_names[0], "relu");
    graph_free(g);
}

Test(ir_reader, detects_xml_by_content)
{
    cr_assert(ir_looks_like_xml("<?xml", 5));
    cr_assert(ir_looks_like_xml("\xEF\xBB\xBF\n  <net", 10));
    cr_assert_not(ir_looks_like_xml("\x08\x07\x12", 3), "an ONNX ModelProto starts with a tag");
    cr_assert_not(ir_looks_like_xml("   ", 3));
    cr_assert_not(ir_looks_like_xml("", 0));
}

Test(ir_reader, malformed_xml)
{
    EXPECT_BROKEN("</layers>", "</layer>", RN_PARSE_ERROR, "tiny.xml", "malformed XML at line",
                  "mismatched tag");
    EXPECT("", 0, RN_PARSE_ERROR, "malformed XML");
    EXPECT("<net version=\"11\"><layers>", 0, RN_PARSE_ERROR, "malformed XML");
    EXPECT("<model/>", 0, RN_PARSE_ERROR, "<model>, not <net>");
}

Test(ir_reader, unsupported_ir_version)
{
    EXPECT_BROKEN("version=\"11\"", "version=\"7\"", RN_UNSUPPORTED, "IR version 7",
                  "versions 10 and 11");
    EXPECT_BROKEN("version=\"11\"", "version=\"eleven\"", RN_PARSE_ERROR, "no integer version");
}

Test(ir_reader, edges_to_missing_ports_and_layers)
{
    EXPECT_BROKEN("from-layer=\"2\" from-port=\"2\"", "from-layer=\"2\" from-port=\"7\"",
                  RN_PARSE_ERROR, "output port 7 of layer 'add'", "no such output port");
    EXPECT_BROKEN("to-layer=\"3\" to-port=\"0\"", "to-layer=\"3\" to-port=\"5\"", RN_PARSE_ERROR,
                  "input port 5 of layer 'relu'", "no such input port");
    EXPECT_BROKEN("to-layer=\"3\" to-port=\"0\"", "to-layer=\"9\" to-port=\"0\"", RN_PARSE_ERROR,
                  "layer 9", "does not exist");
    EXPECT_BROKEN("<edge from-layer=\"2\" from-port=\"2\" to-layer=\"3\" to-port=\"0\"/>", "",
                  RN_PARSE_ERROR, "input port 0 of layer 'relu'", "no incoming edge");
    EXPECT_BROKEN("<edge from-layer=\"1\" from-port=\"0\" to-layer=\"2\" to-port=\"1\"/>",
                  "<edge from-layer=\"1\" from-port=\"0\" to-layer=\"2\" to-port=\"0\"/>",
                  RN_PARSE_ERROR, "input port 0 of layer 'add'", "two incoming edges");
    EXPECT_BROKEN("from-layer=\"3\"", "from-layer=\"three\"", RN_PARSE_ERROR, "edge at line",
                  "integer from-layer");
}

Test(ir_reader, constants_outside_the_bin)
{
    EXPECT(VALID, 12, RN_PARSE_ERROR, "layer 'bias'", "[0, 16)", "12-byte .bin");
    EXPECT_BROKEN("offset=\"0\"", "offset=\"8\"", RN_PARSE_ERROR, "[8, 24)", "16-byte .bin");
    EXPECT_BROKEN("offset=\"0\"", "offset=\"-4\"", RN_PARSE_ERROR, "layer 'bias'", "outside");
    EXPECT_BROKEN("offset=\"0\"", "offset=\"9223372036854775800\"", RN_PARSE_ERROR, "layer 'bias'",
                  "outside the 16-byte .bin");
    EXPECT_BROKEN("size=\"16\"", "size=\"12\"", RN_PARSE_ERROR,
                  "size 12 does not match 4 "
                  "elements of f32");
    EXPECT_BROKEN("offset=\"0\"", "offset=\"zero\"", RN_PARSE_ERROR, "layer 'bias'",
                  "integer offset and size");
    EXPECT(VALID, 0, RN_IO_ERROR, "layer 'bias'", "no .bin");
}

Test(ir_reader, wrong_precisions)
{
    EXPECT_BROKEN("precision=\"FP32\" names=\"sum\"", "precision=\"FP33\" names=\"sum\"",
                  RN_UNSUPPORTED, "layer 'add'", "precision 'FP33'");
    /* The Add's output says I64 where the ReLU reads FP32. */
    EXPECT_BROKEN("precision=\"FP32\" names=\"sum\"", "precision=\"I64\" names=\"sum\"",
                  RN_PARSE_ERROR, "layer 'add'", "(i64)", "layer 'relu' (f32)",
                  "precisions differ");
    EXPECT_BROKEN("<data element_type=\"f32\" shape=\"4\"",
                  "<data element_type=\"i32\" shape=\"4\"", RN_PARSE_ERROR, "layer 'bias'",
                  "element_type i32 differs from its port's "
                  "precision f32");
    EXPECT_BROKEN("element_type=\"f32\"/>", "element_type=\"q7\"/>", RN_UNSUPPORTED, "layer 'x'",
                  "element_type 'q7'");
    /* The ReLU's output and the Result's input both say I32: the op computes f32. */
    char *a = broken("precision=\"FP32\" names=\"y\"", "precision=\"I32\" names=\"y\"");
    char *b = replace(a,
                      "type=\"Result\" version=\"opset1\">\n   <input><port id=\"0\" "
                      "precision=\"FP32\"",
                      "type=\"Result\" version=\"opset1\">\n   <input><port id=\"0\" "
                      "precision=\"I32\"");
    EXPECT(b, sizeof BIAS, RN_TYPE_MISMATCH, "node 'relu'", "declared i32 but inferred f32");
    free(a);
    free(b);
}

Test(ir_reader, unknown_op)
{
    EXPECT_BROKEN("type=\"ReLU\"", "type=\"FancyActivation\"", RN_UNSUPPORTED, "layer 'relu'",
                  "op FancyActivation (opset1) is not supported", "docs/ir.md");
}

Test(ir_reader, dims_that_contradict_the_op)
{
    /* Port dims that disagree with the op: the inferred shape wins with a
     * warning naming the value, as for ONNX's declared shapes
     * (graph/ops/infer_util.c). */
    char *xml =
        broken("names=\"y\"><dim>1</dim><dim>4</dim>", "names=\"y\"><dim>1</dim><dim>5</dim>");
    graph *g = NULL;
    rn_status st = ir_read_memory(xml, strlen(xml), BIAS, sizeof BIAS, "tiny.xml", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    bool warned = false;
    for (int i = 0; i < g->n_warnings; i++)
        warned |= strstr(g->warnings[i], "'y'") != NULL && strstr(g->warnings[i], "[1,5]") != NULL;
    cr_assert(warned, "no warning names 'y' and its declared [1,5]");
    graph_free(g);
    free(xml);
    EXPECT_BROKEN("<dim>4</dim></port></output>\n  </layer>\n  <layer id=\"2\"",
                  "<dim>x</dim></port></output>\n  </layer>\n  <layer id=\"2\"", RN_PARSE_ERROR,
                  "layer 'bias'", "malformed dim 'x'");
}

Test(ir_reader, broken_layers)
{
    EXPECT_BROKEN("<layer id=\"3\"", "<layer id=\"2\"", RN_PARSE_ERROR, "two layers have id 2");
    EXPECT_BROKEN("<layer id=\"3\" name=\"relu\" type=\"ReLU\"", "<layer id=\"3\" name=\"relu\"",
                  RN_PARSE_ERROR, "needs an integer id, a name and a type");
    EXPECT_BROKEN("auto_broadcast=\"numpy\"", "auto_broadcast=\"pdpd\"", RN_UNSUPPORTED,
                  "layer 'add'", "auto_broadcast 'pdpd'");
    /* A ReLU with a second input, connected. */
    char *a = broken("<dim>4</dim></port></input>\n   <output><port id=\"1\"",
                     "<dim>4</dim></port><port id=\"2\" precision=\"FP32\"><dim>4</dim></port>"
                     "</input>\n   <output><port id=\"1\"");
    char *b = replace(a, " </edges>",
                      "  <edge from-layer=\"1\" from-port=\"0\" to-layer=\"3\" to-port=\"2\"/>\n"
                      " </edges>");
    EXPECT(b, sizeof BIAS, RN_PARSE_ERROR, "layer 'relu'", "has 2 input ports, expected 1");
    free(a);
    free(b);
}

Test(ir_reader, read_file_finds_the_bin_beside_the_xml)
{
    char dir[] = "/tmp/ir_reader_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char xml[256], bin[256];
    snprintf(xml, sizeof xml, "%s/tiny.xml", dir);
    snprintf(bin, sizeof bin, "%s/tiny.bin", dir);
    graph *g = NULL;
    cr_assert_eq(ir_read_file(xml, &g), RN_IO_ERROR);
    cr_assert_not_null(strstr(rn_last_error(), "tiny.xml"), "%s", rn_last_error());
    FILE *f = fopen(xml, "wb");
    cr_assert_not_null(f);
    fwrite(VALID, 1, strlen(VALID), f);
    fclose(f);
    cr_assert_eq(ir_read_file(xml, &g), RN_IO_ERROR, "no .bin yet");
    cr_assert_not_null(strstr(rn_last_error(), "no .bin"), "%s", rn_last_error());
    f = fopen(bin, "wb");
    cr_assert_not_null(f);
    fwrite(BIAS, 1, sizeof BIAS, f);
    fclose(f);
    cr_assert_eq(ir_read_file(xml, &g), RN_OK, "%s", rn_last_error());
    cr_assert_eq(g->n_nodes, 2);
    graph_free(g);
    remove(xml);
    remove(bin);
    remove(dir);
}

/* The ReLU layer of VALID replaced by another unary op with <data>. */
static void expect_unary_refused(const char *type_and_data, rn_status status, const char *what)
{
    char *xml = broken("type=\"ReLU\" version=\"opset1\">\n", type_and_data);
    EXPECT(xml, sizeof BIAS, status, "layer 'relu'", what);
    free(xml);
}

Test(ir_reader, attributes_a_mapper_refuses)
{
    expect_unary_refused(
        "type=\"Gelu\" version=\"opset7\">\n<data approximation_mode=\"fancy\"/>\n", RN_UNSUPPORTED,
        "approximation_mode 'fancy' is not supported");
    expect_unary_refused("type=\"SoftMax\" version=\"opset8\">\n<data axis=\"last\"/>\n",
                         RN_PARSE_ERROR, "axis='last' is not an integer");
    expect_unary_refused("type=\"Elu\" version=\"opset1\">\n<data alpha=\"\"/>\n", RN_PARSE_ERROR,
                         "alpha='' is not a number");
    expect_unary_refused(
        "type=\"Round\" version=\"opset5\">\n<data mode=\"half_away_from_zero\"/>\n",
        RN_UNSUPPORTED, "mode 'half_away_from_zero' is not supported");
    expect_unary_refused("type=\"Convert\" version=\"opset1\">\n<data destination_type=\"u1\"/>\n",
                         RN_UNSUPPORTED, "destination_type 'u1'");
}

Test(ir_reader, constant_inputs_a_mapper_needs)
{
    /* A Transpose whose order is the f32 bias, then the graph's input. */
    char *a = broken("type=\"Add\" version=\"opset1\">", "type=\"Transpose\" version=\"opset1\">");
    EXPECT(a, sizeof BIAS, RN_PARSE_ERROR, "layer 'add'",
           "order (input port 1) must hold integers, not f32");
    char *b = replace(a, "from-layer=\"1\" from-port=\"0\" to-layer=\"2\" to-port=\"1\"",
                      "from-layer=\"0\" from-port=\"0\" to-layer=\"2\" to-port=\"1\"");
    char *c = replace(b, "<port id=\"1\" precision=\"FP32\"><dim>4</dim></port></input>",
                      "<port id=\"1\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>");
    EXPECT(c, sizeof BIAS, RN_UNSUPPORTED, "layer 'add'",
           "order (input port 1) must be a constant");
    free(a);
    free(b);
    free(c);
}

/* If (opset8): Parameter c (boolean) chooses ReLU(x) (then) or x itself
 * (else, a Result reading its Parameter); both branches read x through
 * their port maps. */
static const char IF_XML[] =
    "<?xml version=\"1.0\"?>\n"
    "<net name=\"branchy\" version=\"11\">\n"
    " <layers>\n"
    "  <layer id=\"0\" name=\"c\" type=\"Parameter\" version=\"opset1\">\n"
    "   <data shape=\"\" element_type=\"boolean\"/>\n"
    "   <output><port id=\"0\" precision=\"BOOL\" names=\"c\"/></output>\n"
    "  </layer>\n"
    "  <layer id=\"1\" name=\"x\" type=\"Parameter\" version=\"opset1\">\n"
    "   <data shape=\"1,4\" element_type=\"f32\"/>\n"
    "   <output><port id=\"0\" precision=\"FP32\" names=\"x\"><dim>1</dim><dim>4</dim></port>"
    "</output>\n"
    "  </layer>\n"
    "  <layer id=\"2\" name=\"pick\" type=\"If\" version=\"opset8\">\n"
    "   <then_port_map><input external_port_id=\"1\" internal_layer_id=\"0\"/>"
    "<output external_port_id=\"2\" internal_layer_id=\"2\"/></then_port_map>\n"
    "   <else_port_map><input external_port_id=\"1\" internal_layer_id=\"0\"/>"
    "<output external_port_id=\"2\" internal_layer_id=\"1\"/></else_port_map>\n"
    "   <input><port id=\"0\" precision=\"BOOL\"/>"
    "<port id=\"1\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>\n"
    "   <output><port id=\"2\" precision=\"FP32\" names=\"y\"><dim>1</dim><dim>4</dim></port>"
    "</output>\n"
    "   <then_body><layers>\n"
    "    <layer id=\"0\" name=\"tx\" type=\"Parameter\" version=\"opset1\">"
    "<data shape=\"1,4\" element_type=\"f32\"/>"
    "<output><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></output>"
    "</layer>\n"
    "    <layer id=\"1\" name=\"relu\" type=\"ReLU\" version=\"opset1\">"
    "<input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>"
    "<output><port id=\"1\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></output>"
    "</layer>\n"
    "    <layer id=\"2\" name=\"tr\" type=\"Result\" version=\"opset1\">"
    "<input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>"
    "</layer>\n"
    "   </layers><edges>"
    "<edge from-layer=\"0\" from-port=\"0\" to-layer=\"1\" to-port=\"0\"/>"
    "<edge from-layer=\"1\" from-port=\"1\" to-layer=\"2\" to-port=\"0\"/>"
    "</edges></then_body>\n"
    "   <else_body><layers>\n"
    "    <layer id=\"0\" name=\"ex\" type=\"Parameter\" version=\"opset1\">"
    "<data shape=\"1,4\" element_type=\"f32\"/>"
    "<output><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></output>"
    "</layer>\n"
    "    <layer id=\"1\" name=\"er\" type=\"Result\" version=\"opset1\">"
    "<input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>"
    "</layer>\n"
    "   </layers><edges>"
    "<edge from-layer=\"0\" from-port=\"0\" to-layer=\"1\" to-port=\"0\"/>"
    "</edges></else_body>\n"
    "  </layer>\n"
    "  <layer id=\"3\" name=\"y/sink\" type=\"Result\" version=\"opset1\">\n"
    "   <input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>\n"
    "  </layer>\n"
    " </layers>\n"
    " <edges>\n"
    "  <edge from-layer=\"0\" from-port=\"0\" to-layer=\"2\" to-port=\"0\"/>\n"
    "  <edge from-layer=\"1\" from-port=\"0\" to-layer=\"2\" to-port=\"1\"/>\n"
    "  <edge from-layer=\"2\" from-port=\"2\" to-layer=\"3\" to-port=\"0\"/>\n"
    " </edges>\n"
    "</net>\n";

static const graph *graph_attr_of(const graph_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0 && n->attrs[i].type == GRAPH_ATTR_GRAPH)
            return n->attrs[i].g;
    return NULL;
}

Test(ir_reader, if_bodies_become_branches_that_read_the_outer_inputs)
{
    graph *g;
    rn_status st = ir_read_memory(IF_XML, strlen(IF_XML), NULL, 0, "branchy.xml", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    graph_node *pick = find_node(g, "pick");
    cr_assert_not_null(pick);
    cr_assert_str_eq(pick->op_type, "If");
    cr_assert_eq(pick->n_inputs, 1, "ONNX's If takes the condition only");
    cr_assert_eq(pick->inputs[0], g->inputs[0]);
    const graph *then_g = graph_attr_of(pick, "then_branch");
    const graph *else_g = graph_attr_of(pick, "else_branch");
    cr_assert_not_null(then_g);
    cr_assert_not_null(else_g);
    cr_assert_eq(then_g->parent, g, "a branch's enclosing graph is the net");
    cr_assert_eq(then_g->n_inputs, 0, "a branch reads x from the enclosing graph");
    cr_assert_eq(then_g->n_nodes, 1);
    cr_assert_str_eq(then_g->nodes[0]->op_type, "Relu");
    cr_assert_eq(then_g->nodes[0]->inputs[0], g->inputs[1], "the Parameter is the outer x");
    cr_assert_eq(then_g->n_outputs, 1);
    cr_assert_eq(then_g->outputs[0], then_g->nodes[0]->outputs[0]);
    cr_assert_eq(else_g->n_nodes, 1, "a Result of the outer value goes through an Identity");
    cr_assert_str_eq(else_g->nodes[0]->op_type, "Identity");
    cr_assert_eq(else_g->nodes[0]->inputs[0], g->inputs[1]);
    cr_assert_eq(g->n_outputs, 1);
    cr_assert_eq(g->outputs[0], pick->outputs[0]);
    graph_free(g);
}

static void expect_if_broken(const char *from, const char *to, rn_status status, const char *what)
{
    char *xml = replace(IF_XML, from, to);
    EXPECT(xml, 0, status, "layer 'pick' (If, id 2)", what);
    free(xml);
}

Test(ir_reader, broken_if_bodies)
{
    expect_if_broken("<output external_port_id=\"2\" internal_layer_id=\"2\"/>",
                     "<output external_port_id=\"2\" internal_layer_id=\"7\"/>", RN_PARSE_ERROR,
                     "names layer 7 of a body, which is no Result");
    expect_if_broken("<output external_port_id=\"2\" internal_layer_id=\"2\"/>", "", RN_PARSE_ERROR,
                     "<then_port_map> gives output port 2 no Result");
    expect_if_broken("<else_port_map><input external_port_id=\"1\" internal_layer_id=\"0\"/>",
                     "<else_port_map>", RN_PARSE_ERROR,
                     "layer 'ex' (Parameter, id 0): a Parameter of a body that no port map names");
    expect_if_broken("<then_port_map><input external_port_id=\"1\"",
                     "<then_port_map><input external_port_id=\"0\"", RN_PARSE_ERROR,
                     "binds input port 0, which is no data input of the layer");
    expect_if_broken("<then_port_map><input external_port_id=\"1\" internal_layer_id=\"0\"/>",
                     "<then_port_map><input external_port_id=\"1\" internal_layer_id=\"x\"/>",
                     RN_PARSE_ERROR, "needs an integer internal_layer_id");
    char *a = replace(IF_XML, "<else_body>", "<other_body>");
    char *b = replace(a, "</else_body>", "</other_body>");
    EXPECT(b, 0, RN_PARSE_ERROR, "layer 'pick' (If, id 2)",
           "has no <else_port_map> or no <else_body>");
    free(a);
    free(b);
    expect_if_broken("type=\"ReLU\" version=\"opset1\">", "type=\"Fancy\" version=\"opset1\">",
                     RN_UNSUPPORTED, "then_body: layer 'relu' (Fancy, id 1): op Fancy");
}

/* IF_XML's If as a TensorIterator: ReLU of x [1,4] in parts of 1 along
 * axis 1, the parts concatenated back along axis 1. */
Test(ir_reader, tensor_iterator_becomes_a_loop)
{
    char *xml = replace(
        IF_XML, "<layer id=\"2\" name=\"pick\" type=\"If\" version=\"opset8\">",
        "<layer id=\"2\" name=\"pick\" type=\"TensorIterator\" version=\"opset1\">"
        "<port_map><input axis=\"1\" external_port_id=\"1\" internal_layer_id=\"0\" start=\"0\" "
        "end=\"-1\" stride=\"1\" part_size=\"1\"/>"
        "<output axis=\"1\" external_port_id=\"2\" internal_layer_id=\"2\" part_size=\"1\" "
        "stride=\"1\"/></port_map><body><layers>"
        "<layer id=\"0\" name=\"tx\" type=\"Parameter\" version=\"opset1\">"
        "<data shape=\"1,1\" element_type=\"f32\"/>"
        "<output><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>1</dim></port></output>"
        "</layer>"
        "<layer id=\"1\" name=\"relu\" type=\"ReLU\" version=\"opset1\">"
        "<input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>1</dim></port></input>"
        "<output><port id=\"1\" precision=\"FP32\"><dim>1</dim><dim>1</dim></port></output>"
        "</layer>"
        "<layer id=\"2\" name=\"tr\" type=\"Result\" version=\"opset1\">"
        "<input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>1</dim></port></input>"
        "</layer></layers><edges>"
        "<edge from-layer=\"0\" from-port=\"0\" to-layer=\"1\" to-port=\"0\"/>"
        "<edge from-layer=\"1\" from-port=\"1\" to-layer=\"2\" to-port=\"0\"/>"
        "</edges></body>");
    /* The If's own maps and bodies stay, inside elements nobody reads. */
    const char *wrap[][2] = {{"<then_port_map>", "<ignored><then_port_map>"},
                             {"</else_port_map>", "</else_port_map></ignored>"},
                             {"<then_body>", "<ignored><then_body>"},
                             {"</else_body>", "</else_body></ignored>"}};
    for (size_t i = 0; i < sizeof wrap / sizeof *wrap; i++) {
        char *next = replace(xml, wrap[i][0], wrap[i][1]);
        free(xml);
        xml = next;
    }
    graph *g;
    rn_status st = ir_read_memory(xml, strlen(xml), NULL, 0, "loop.xml", &g);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    graph_node *loop = NULL;
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i]->op_type, "Loop") == 0)
            loop = g->nodes[i];
    cr_assert_not_null(loop);
    cr_assert_not_null(loop->inputs[0]->constant, "the trip count: the parts of x");
    cr_assert_eq(*(const int64_t *)loop->inputs[0]->constant->data, 4);
    const graph *body = graph_attr_of(loop, "body");
    cr_assert_not_null(body);
    cr_assert_eq(body->n_inputs, 2, "the iteration number and the condition");
    cr_assert_eq(body->n_outputs, 2, "the condition and the part (a scan output)");
    cr_assert_eq(g->outputs[0], find_node(g, "pick")->outputs[0],
                 "the layer's output is the Reshape of the scan output");
    graph_free(g);
    free(xml);
}
