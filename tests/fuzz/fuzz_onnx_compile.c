/* Fuzz target: the ONNX reader, then, for models that read, compiling on REF
 * through the plugin ABI (the Core's compile without the handle around it):
 * transforms, kernel selection and the plan over whatever graph the reader
 * lets through. */
#include "graph/onnx/onnx_reader.h"
#include "plugins/ref/ref.h"
#include "tests/fuzz/fuzz.h"

/* One REF plugin for the whole run, as a Core holds one. */
static rn_plugin *ref_plugin(void)
{
    static rn_plugin *plugin;
    if (plugin == NULL && ref_plugin_ops.create(&plugin) != RN_OK) {
        fprintf(stderr, "REF: %s\n", rn_last_error());
        abort();
    }
    return plugin;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rn_plugin *plugin = ref_plugin();
    graph *g = NULL;
    rn_clear_error();
    rn_status st = onnx_read_memory(data, size, NULL, &g);
    if (st != RN_OK) {
        fuzz_check_failure("onnx_read_memory", st, g != NULL);
        return 0;
    }
    const rn_compiled_model_ops *ops = NULL;
    rn_plugin_compiled *compiled = NULL;
    rn_clear_error();
    st = ref_plugin_ops.compile_model(plugin, (const rn_graph *)g, NULL, NULL, 0, &ops, &compiled);
    if (st != RN_OK)
        fuzz_check_failure("compile_model", st, compiled != NULL);
    else
        ops->free(compiled);
    graph_free(g);
    return 0;
}
