/* A test extension: the custom op com.example.runnel.Twice (y = 2x, f32), with
 * its schema and a REF kernel. */
#include "graph/ops.h"
#include "plugins/api/kernel.h"
#include "runnel/extension.h"

static rn_status infer_twice(const graph_node *node, const graph_port *in, int n_in,
                             graph_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    if (in[0].type != RN_UNDEFINED && in[0].type != RN_F32)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (Twice): input must be f32, not %s",
                            node->name, rn_element_type_name(in[0].type));
    out[0].type = RN_F32;
    out[0].shape = in[0].shape;
    return RN_OK;
}

static const graph_op_schema twice_schema = {
    .domain = "com.example.runnel",
    .op_type = "Twice",
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .infer = infer_twice,
};

static bool twice_supports(const graph_node *node, const char **why)
{
    if (node->inputs[0] == NULL || node->inputs[0]->type != RN_F32) {
        *why = "input 0 must be f32";
        return false;
    }
    return true;
}

static rn_status twice_run(plugin_kernel_args *args)
{
    const float *x = args->inputs[0].data;
    float *y = args->outputs[0].data;
    size_t n = graph_tensor_count(&args->inputs[0]);
    for (size_t i = 0; i < n; i++)
        y[i] = 2.0f * x[i];
    return RN_OK;
}

static const plugin_kernel twice_kernel = {
    .domain = "com.example.runnel",
    .op_type = "Twice",
    .impl_type = "extension",
    .supports = twice_supports,
    .run = twice_run,
};

static const graph_op_schema *const ops[] = {&twice_schema, NULL};
static const plugin_kernel *const ref_kernels[] = {&twice_kernel, NULL};
static const rn_extension_kernels devices[] = {
    {.device = "REF", .kernels = ref_kernels},
    {.device = "NO_SUCH_DEVICE", .kernels = ref_kernels},
};

static const rn_extension extension = {
    .abi_version = RN_EXTENSION_ABI_VERSION,
    .name = "twice",
    .ops = ops,
    .n_devices = 2,
    .devices = devices,
};

const rn_extension *rn_extension_entry(uint32_t abi_version);

const rn_extension *rn_extension_entry(uint32_t abi_version)
{
    (void)abi_version;
    return &extension;
}
