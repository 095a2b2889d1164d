/* A test extension: the custom op com.example.runnel.Twice (y = 2x, f32), with
 * its schema and a REF kernel. It includes the installed headers only
 * (runnel/extension.h, runnel/kernel.h): what an extension author has. */
#include "runnel/extension.h"
#include "runnel/kernel.h"

static rn_status infer_twice(const rn_node *node, const rn_infer_port *in, int n_in,
                             rn_infer_port *out, int n_out)
{
    (void)n_in, (void)n_out;
    if (in[0].type != RN_UNDEFINED && in[0].type != RN_F32)
        return rn_set_error(RN_TYPE_MISMATCH, "node '%s' (Twice): input must be f32, not %s",
                            rn_node_name(node), rn_element_type_name(in[0].type));
    out[0].type = RN_F32;
    out[0].shape = in[0].shape;
    return RN_OK;
}

static const rn_op_schema twice_schema = {
    .domain = "com.example.runnel",
    .op_type = "Twice",
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .infer = infer_twice,
};

static bool twice_supports(const rn_node *node, const char **why)
{
    if (rn_node_input_type(node, 0) != RN_F32) {
        *why = "input 0 must be f32";
        return false;
    }
    return true;
}

static rn_status twice_run(rn_kernel_args *args)
{
    const rn_kernel_tensor *x = &args->inputs[0];
    const float *in = x->data;
    float *y = args->outputs[0].data;
    size_t n = 1;
    for (int d = 0; d < x->rank; d++)
        n *= (size_t)x->dims[d];
    for (size_t i = 0; i < n; i++)
        y[i] = 2.0f * in[i];
    return RN_OK;
}

static const rn_kernel twice_kernel = {
    .domain = "com.example.runnel",
    .op_type = "Twice",
    .impl_type = "extension",
    .supports = twice_supports,
    .run = twice_run,
    .flags = RN_KERNEL_INPLACE,
};

static const rn_op_schema *const ops[] = {&twice_schema, NULL};
static const rn_kernel *const ref_kernels[] = {&twice_kernel, NULL};
/* SLOWDEV (tests/slowdev, a dlopen'ed plugin) runs its kernels on the host
 * too: the same kernel serves it. */
static const rn_extension_kernels devices[] = {
    {.device = "REF", .kernels = {RN_KERNEL_ABI_VERSION, ref_kernels}},
    {.device = "SLOWDEV", .kernels = {RN_KERNEL_ABI_VERSION, ref_kernels}},
    {.device = "NO_SUCH_DEVICE", .kernels = {RN_KERNEL_ABI_VERSION, ref_kernels}},
};

static const rn_extension extension = {
    .abi_version = RN_EXTENSION_ABI_VERSION,
    .name = "twice",
    .ops = ops,
    .n_devices = 3,
    .devices = devices,
};

const rn_extension *rn_extension_entry(uint32_t abi_version);

const rn_extension *rn_extension_entry(uint32_t abi_version)
{
    (void)abi_version;
    return &extension;
}
