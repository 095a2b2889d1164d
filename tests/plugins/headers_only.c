/* HEADERS_ONLY: a minimal device plugin built against include/runnel/ alone
 * (its BUILD target's only dependency is //include/runnel:headers), as a
 * plugin author outside the tree builds one. It includes every header of the
 * plugin ABI, so a public header that reached into runnel's internals (say
 * graph/graph.h) fails this build. It starts, says its version, and refuses
 * every model with a message of its own, which the host's rn_last_error()
 * shows: its rn_set_error is the host's (libruntime.so). The message
 * describes the model as the plugin read it through the public accessors
 * the in-tree devices read models with (GPU's kernels, NVIDIA's lowering):
 * the rn_graph accessors of runnel/plugin.h (nodes, inputs, outputs,
 * constants) and the rn_node ones of runnel/kernel.h (op, inputs, shapes,
 * a convolution's window). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/extension.h"
#include "runnel/kernel.h"
#include "runnel/plugin.h"
#include "runnel/runnel.h"

struct rn_plugin {
    const rn_kernel_list *kernels;
};

/* A kernel in the public kernel interface: Identity on any type. */
static bool identity_supports(const rn_node *node, const char **why)
{
    if (rn_node_input_count(node) != 1) {
        *why = "Identity takes one input";
        return false;
    }
    return true;
}

static rn_status identity_run(rn_kernel_args *args)
{
    (void)args;
    return RN_OK;
}

static const rn_kernel identity_kernel = {
    .domain = "",
    .op_type = "Identity",
    .impl_type = "headers_only",
    .supports = identity_supports,
    .run = identity_run,
    .flags = RN_KERNEL_VIEW,
};

static const rn_kernel *const kernels[] = {&identity_kernel, NULL};

/* The extension ABI compiles here too (this plugin exports no extension):
 * the plugin's kernels are those of its one device. */
static const rn_extension_kernels extension_devices[] = {
    {"HEADERS_ONLY", {.abi_version = RN_KERNEL_ABI_VERSION, .kernels = kernels}},
};
static const rn_extension extension = {
    .abi_version = RN_EXTENSION_ABI_VERSION,
    .name = "headers_only",
    .n_devices = 1,
    .devices = extension_devices,
};

static rn_status headers_only_create(rn_plugin **out)
{
    if (extension.abi_version != RN_EXTENSION_ABI_VERSION ||
        extension.devices[0].kernels.abi_version != RN_KERNEL_ABI_VERSION)
        return rn_set_error(RN_INTERNAL, "HEADERS_ONLY: struct versions differ from the macros");
    rn_plugin *p = calloc(1, sizeof *p);
    if (p == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "HEADERS_ONLY: out of memory");
    p->kernels = &extension.devices[0].kernels;
    *out = p;
    return RN_OK;
}

static void headers_only_destroy(rn_plugin *plugin)
{
    free(plugin);
}

/* Appends to buf (of `size`, `*used` written so far). */
#define PUT(buf, size, used, ...)                                                                  \
    (*(used) +=                                                                                    \
     *(used) < (size) ? (size_t)snprintf((buf) + *(used), (size) - *(used), __VA_ARGS__) : 0)

/* "N node(s): Op[(window)] ...; inputs A B; outputs C; K constant input(s)". */
static void describe(const rn_graph *g, char *buf, size_t size)
{
    size_t used = 0;
    int constants = 0;
    PUT(buf, size, &used, "%d node(s):", rn_graph_node_count(g));
    for (int k = 0; k < rn_graph_node_count(g); k++) {
        const rn_node *n = rn_graph_node(g, k);
        PUT(buf, size, &used, " %s", rn_node_op_type(n));
        for (int i = 0; i < rn_node_input_count(n); i++)
            constants += rn_graph_constant(g, rn_node_input_name(n, i)) != NULL;
        rn_partial_shape w = rn_node_input_shape(n, 1);
        rn_window win;
        if (strcmp(rn_node_op_type(n), "Conv") == 0 && w.rank >= 3 &&
            rn_node_window(n, w.rank - 2, w.dims + 2, false, &win) == RN_OK)
            PUT(buf, size, &used, "(kernel %lldx%lld, stride %lld)", (long long)win.kernel[0],
                (long long)(win.n > 1 ? win.kernel[1] : 1), (long long)win.stride[0]);
    }
    PUT(buf, size, &used, "; inputs");
    for (int i = 0; i < rn_graph_input_count(g); i++)
        PUT(buf, size, &used, " %s", rn_graph_input_name(g, i));
    PUT(buf, size, &used, "; outputs");
    for (int i = 0; i < rn_graph_output_count(g); i++)
        PUT(buf, size, &used, " %s", rn_graph_output_name(g, i));
    PUT(buf, size, &used, "; %d constant input(s)", constants);
}

static rn_status headers_only_compile(rn_plugin *plugin, const rn_graph *model,
                                      rn_plugin_context *context, const rn_property *properties,
                                      size_t n_properties, const rn_compiled_model_ops **ops,
                                      rn_plugin_compiled **compiled)
{
    (void)plugin, (void)context, (void)properties, (void)n_properties;
    (void)ops, (void)compiled;
    char text[512];
    describe(model, text, sizeof text);
    return rn_set_error(RN_UNSUPPORTED, "HEADERS_ONLY compiles no model (%s kernel '%s' only): %s",
                        rn_element_type_name(RN_F32), identity_kernel.op_type, text);
}

static const rn_plugin_ops headers_only_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .device_name = "HEADERS_ONLY",
    .version = "0.0.1-headers-only",
    .create = headers_only_create,
    .destroy = headers_only_destroy,
    .compile_model = headers_only_compile,
};

const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version)
{
    (void)abi_version; /* the Core checks the vtable's version */
    return &headers_only_ops;
}
