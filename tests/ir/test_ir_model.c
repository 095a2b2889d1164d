/* An OpenVINO IR through the public API: rn_core_read_model picks the IR
 * reader by the file's content (whatever its extension), finds the .bin
 * beside it, and the model compiles and runs on REF. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"

/* y = ReLU(x + bias), x [1,4], bias a Const of 4 floats in the .bin. */
static const char XML[] =
    "<?xml version=\"1.0\"?>\n"
    "<net name=\"tiny\" version=\"10\">\n"
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
    "   <input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port>"
    "<port id=\"1\" precision=\"FP32\"><dim>4</dim></port></input>\n"
    "   <output><port id=\"2\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></output>\n"
    "  </layer>\n"
    "  <layer id=\"3\" name=\"relu\" type=\"ReLU\" version=\"opset1\">\n"
    "   <input><port id=\"0\" precision=\"FP32\"><dim>1</dim><dim>4</dim></port></input>\n"
    "   <output><port id=\"1\" precision=\"FP32\" names=\"y\"><dim>1</dim><dim>4</dim></port>"
    "</output>\n"
    "  </layer>\n"
    "  <layer id=\"4\" name=\"out\" type=\"Result\" version=\"opset1\">\n"
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

static char dir[] = "/tmp/ir_model_XXXXXX";

static void write_file(const char *name, const void *data, size_t size)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    fclose(f);
}

static void remove_file(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    remove(path);
}

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    remove_file("tiny.xml");
    remove_file("tiny.bin");
    remove_file("named.onnx");
    remove_file("named.bin");
    remove(dir);
}

TestSuite(ir_model, .init = setup, .fini = teardown);

/* Reads dir/name, runs it on REF with x = 0.5 and checks y. */
static void read_and_run(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rn_core *core;
    rn_model *model;
    rn_compiled_model *compiled;
    rn_infer_request *request;
    rn_tensor *x, *y;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_model_input_count(model), 1);
    cr_assert_eq(rn_model_output_count(model), 1);
    cr_assert_eq(rn_core_compile_model(core, model, "REF", NULL, 0, &compiled), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_compiled_model_create_infer_request(compiled, &request), RN_OK);
    cr_assert_eq(rn_infer_request_get_input_tensor(request, 0, &x), RN_OK);
    float *in = rn_tensor_data(x);
    for (int i = 0; i < 4; i++)
        in[i] = 0.5f;
    cr_assert_eq(rn_infer_request_infer(request), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_get_output_tensor(request, 0, &y), RN_OK);
    const float *out = rn_tensor_data(y);
    const float want[4] = {1.5f, 0.0f, 3.5f, 0.0f};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(out[i], want[i], 1e-6f, "y[%d] = %g, expected %g", i, out[i], want[i]);
    rn_infer_request_free(request);
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
}

Test(ir_model, reads_compiles_and_runs_an_xml_with_its_bin)
{
    write_file("tiny.xml", XML, strlen(XML));
    write_file("tiny.bin", BIAS, sizeof BIAS);
    read_and_run("tiny.xml");
}

Test(ir_model, picks_the_reader_by_content_not_extension)
{
    write_file("named.onnx", XML, strlen(XML));
    write_file("named.bin", BIAS, sizeof BIAS);
    read_and_run("named.onnx");
}

Test(ir_model, a_broken_ir_is_an_error_naming_the_problem)
{
    write_file("tiny.xml", XML, strlen(XML));
    write_file("tiny.bin", BIAS, 8); /* half the weights */
    char path[256];
    snprintf(path, sizeof path, "%s/tiny.xml", dir);
    rn_core *core;
    rn_model *model = NULL;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_PARSE_ERROR);
    cr_assert_null(model);
    cr_assert_not_null(strstr(rn_last_error(), "layer 'bias'"), "%s", rn_last_error());
    cr_assert_not_null(strstr(rn_last_error(), "8-byte .bin"), "%s", rn_last_error());
    rn_core_free(core);
}
