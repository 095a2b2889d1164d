/* A plugin built against include/runnel/ alone (headers_only.c): it builds,
 * carries the ABI versions of the headers, and runs in a host that links
 * libruntime.so, its calls to rn_set_error and rn_element_type_name bound to
 * the host's. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "runnel/plugin.h"
#include "runnel/runnel.h"

#define PLUGIN    "tests/plugins/libheaders_only.so"
#define NODE_DIR  "/usr/share/libonnx-testdata/data/node"
#define TORCH_DIR "/usr/share/libonnx-testdata/data/pytorch-converted"

Test(headers_only, its_entry_returns_the_versions_of_the_headers)
{
    void *lib = dlopen(PLUGIN, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    rn_plugin_entry_fn entry;
    *(void **)&entry = dlsym(lib, RN_PLUGIN_ENTRY_NAME);
    cr_assert_not_null(entry, "%s", dlerror());
    const rn_plugin_ops *ops = entry(RN_PLUGIN_ABI_VERSION);
    cr_assert_not_null(ops);
    cr_expect_eq(ops->abi_version, RN_PLUGIN_ABI_VERSION);
    cr_expect_str_eq(ops->device_name, "HEADERS_ONLY");
    /* create checks the kernel list's and the extension's versions. */
    rn_plugin *plugin;
    cr_assert_eq(ops->create(&plugin), RN_OK, "%s", rn_last_error());
    ops->destroy(plugin);
    dlclose(lib);
}

Test(headers_only, loads_and_refuses_a_model_with_its_own_message)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_load_plugin(core, NULL, PLUGIN), RN_OK, "%s", rn_last_error());
    const char *version;
    cr_assert_eq(rn_core_get_version(core, "HEADERS_ONLY", &version), RN_OK);
    cr_expect_str_eq(version, "0.0.1-headers-only");
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_identity/model.onnx", &model), RN_OK,
                 "%s", rn_last_error());
    rn_compiled_model *compiled;
    cr_expect_eq(rn_core_compile_model(core, model, "HEADERS_ONLY", NULL, 0, &compiled),
                 RN_UNSUPPORTED);
    /* The plugin's message, formatted with the host's element type names. */
    cr_expect(strstr(rn_last_error(),
                     "HEADERS_ONLY compiles no model (f32 kernel 'Identity' only)") != NULL,
              "%s", rn_last_error());
    /* ... which describes the model as it read it with the rn_graph and
     * rn_node accessors: test_identity is y = Identity(x). */
    cr_expect(strstr(rn_last_error(),
                     ": 1 node(s): Identity; inputs x; outputs y; 0 constant input(s)") != NULL,
              "%s", rn_last_error());
    rn_model_free(model);
    rn_core_free(core);
}

/* The accessors GPU and NVIDIA read models with, from a plugin built on the
 * headers alone: PyTorch's Conv2d export is one Conv of input '0' with
 * initializers '1' (weight [4, 3, 3, 2]) and '2' (bias), kernel_shape 3x2,
 * strides 1, output '3'. Its ports are compared with what the public model
 * API says of them. */
Test(headers_only, reads_a_model_through_the_public_accessors)
{
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_load_plugin(core, NULL, PLUGIN), RN_OK, "%s", rn_last_error());
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, TORCH_DIR "/test_Conv2d/model.onnx", &model), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_model_input_count(model), 1);
    cr_assert_eq(rn_model_output_count(model), 1);
    rn_port in, out;
    cr_assert_eq(rn_model_input(model, 0, &in), RN_OK);
    cr_assert_eq(rn_model_output(model, 0, &out), RN_OK);
    char expected[256];
    snprintf(expected, sizeof expected,
             ": 1 node(s): Conv(kernel 3x2, stride 1); inputs %s; outputs %s; 2 constant input(s)",
             in.name, out.name);
    rn_compiled_model *compiled;
    cr_expect_eq(rn_core_compile_model(core, model, "HEADERS_ONLY", NULL, 0, &compiled),
                 RN_UNSUPPORTED);
    cr_expect(strstr(rn_last_error(), expected) != NULL, "expected '%s' in: %s", expected,
              rn_last_error());
    rn_model_free(model);
    rn_core_free(core);
}
