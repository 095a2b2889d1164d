/* Loading device plugins from shared objects and plugins files. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugins/api/kit_id.h"
#include "runnel/runnel.h"
#include "tests/runtime/core_devices.h"

#define PLUGINS  "tests/plugins/"
#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static void run_add_on(rn_core *core, const char *device)
{
    rn_model *m;
    rn_compiled_model *cm;
    rn_infer_request *r;
    cr_assert_eq(rn_core_read_model(core, NODE_DIR "/test_add/model.onnx", &m), RN_OK);
    cr_assert_eq(rn_core_compile_model(core, m, device, NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK);
    rn_tensor *a;
    rn_infer_request_get_input_tensor(r, 0, &a);
    ((float *)rn_tensor_data(a))[0] = 5.0f;
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_tensor *y;
    rn_infer_request_get_output_tensor(r, 0, &y);
    cr_assert_float_eq(((float *)rn_tensor_data(y))[0], 5.0f, 1e-6);
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(m);
}

Test(plugin_loading, a_shared_object_adds_a_device)
{
    rn_core *core;
    rn_core_create(&core);
    cr_assert_eq(rn_core_load_plugin(core, NULL, PLUGINS "libtestdev.so"), RN_OK, "%s",
                 rn_last_error());
    cr_assert(has_device(core, "TESTDEV"));
    run_add_on(core, "TESTDEV");
    run_add_on(core, "REF");
    /* Its own version is read back; it has no remote contexts. */
    const char *version;
    cr_assert_eq(rn_core_get_version(core, "TESTDEV", &version), RN_OK);
    cr_assert_str_eq(version, "1.2.3-testdev");
    rn_remote_context *c;
    cr_assert_eq(rn_core_get_default_context(core, "TESTDEV", &c), RN_NOT_IMPLEMENTED);
    cr_assert(strstr(rn_last_error(), "TESTDEV") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_core_create_context(core, "TESTDEV", NULL, 0, &c), RN_NOT_IMPLEMENTED);
    rn_core_free(core);
}

Test(plugin_loading, a_duplicate_name_is_refused)
{
    rn_core *core;
    rn_core_create(&core);
    cr_assert_eq(rn_core_load_plugin(core, NULL, PLUGINS "libtestdev.so"), RN_OK);
    cr_assert_eq(rn_core_load_plugin(core, NULL, PLUGINS "libtestdev.so"), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "TESTDEV") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_core_load_plugin(core, "REF", PLUGINS "libtestdev.so"), RN_INVALID_ARG);
    /* The same library under another name is another device. */
    cr_assert_eq(rn_core_load_plugin(core, "TESTDEV2", PLUGINS "libtestdev.so"), RN_OK, "%s",
                 rn_last_error());
    run_add_on(core, "TESTDEV2");
    run_add_on(core, "REF");
    rn_core_free(core);
}

Test(plugin_loading, each_failure_names_its_reason)
{
    rn_core *core;
    rn_core_create(&core);
    cr_assert_eq(rn_core_load_plugin(core, "MISSING", PLUGINS "libnothing.so"), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "libnothing.so") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_core_load_plugin(core, "NOENTRY", PLUGINS "libtestdev_no_entry.so"),
                 RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "rn_plugin_entry") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_core_load_plugin(core, "BADABI", PLUGINS "libtestdev_bad_abi.so"),
                 RN_UNSUPPORTED);
    cr_assert(strstr(rn_last_error(), "ABI") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_core_load_plugin(core, "FAILING", PLUGINS "libtestdev_failing.so"),
                 RN_DEVICE_ERROR);
    cr_assert(strstr(rn_last_error(), "no TESTDEV accelerator") != NULL, "%s", rn_last_error());
    cr_assert_eq(rn_core_failed_device_count(core), 4);
    cr_assert_not_null(failure_of(core, "MISSING"));
    cr_assert(strstr(failure_of(core, "BADABI"), "ABI") != NULL);
    cr_assert(strstr(failure_of(core, "FAILING"), "cannot start") != NULL, "%s",
              failure_of(core, "FAILING"));
    cr_assert(!has_device(core, "FAILING"));
    run_add_on(core, "REF");
    rn_core_free(core);
}

/* An in-tree plugin calls libruntime.so's device kit (RN_KIT) and sees its
 * structs: one built against another kit's headers is refused before its
 * entry point runs, the message naming both kit ids. */
Test(plugin_loading, a_plugin_built_against_another_device_kit_is_refused_naming_both)
{
    rn_core *core;
    rn_core_create(&core);
    cr_assert_eq(rn_core_load_plugin(core, "OTHERKIT", PLUGINS "libtestdev_other_kit.so"),
                 RN_UNSUPPORTED);
    const char *why = rn_last_error();
    cr_assert(strstr(why, "device kit 0123456789abcdef") != NULL, "%s", why);
    cr_assert(strstr(why, "this runtime's kit is " PLUGIN_KIT_ID) != NULL, "%s", why);
    cr_assert(!has_device(core, "OTHERKIT"));
    cr_assert_not_null(failure_of(core, "OTHERKIT"));
    cr_assert(strstr(failure_of(core, "OTHERKIT"), PLUGIN_KIT_ID) != NULL);
    /* The same plugin built against this runtime's kit loads and runs. */
    cr_assert_eq(rn_core_load_plugin(core, NULL, PLUGINS "libtestdev.so"), RN_OK, "%s",
                 rn_last_error());
    run_add_on(core, "TESTDEV");
    rn_core_free(core);
}

Test(plugin_loading, a_plugins_file_loads_what_it_can)
{
    char path[] = "/tmp/runnel_plugins_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# devices\nTESTDEV %s\n\nBROKEN=%s\nFAILING %s\nnonsense\n",
            PLUGINS "libtestdev.so", PLUGINS "libnothing.so", PLUGINS "libtestdev_failing.so");
    fclose(f);
    rn_core *core;
    rn_core_create(&core);
    rn_status st = rn_core_load_plugins_file(core, path);
    cr_assert_neq(st, RN_OK, "the file has bad lines");
    cr_assert(has_device(core, "TESTDEV"));
    cr_assert(!has_device(core, "BROKEN"));
    cr_assert_not_null(failure_of(core, "BROKEN"));
    cr_assert_not_null(failure_of(core, "FAILING"));
    run_add_on(core, "TESTDEV");
    rn_core_free(core);
    cr_assert_eq(rn_core_create(&core), RN_OK);
    cr_assert_eq(rn_core_load_plugins_file(core, "/nonexistent/plugins.txt"), RN_IO_ERROR);
    cr_assert(strstr(rn_last_error(), "/nonexistent/plugins.txt") != NULL);
    rn_core_free(core);
    unlink(path);
}
