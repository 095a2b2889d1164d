/* A plugin built against include/runnel/ alone (headers_only.c): it builds,
 * carries the ABI versions of the headers, and runs in a host that links
 * libruntime.so, its calls to rn_set_error and rn_element_type_name bound to
 * the host's. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "runnel/plugin.h"
#include "runnel/runnel.h"

#define PLUGIN   "tests/plugins/libheaders_only.so"
#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

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
    rn_model_free(model);
    rn_core_free(core);
}
