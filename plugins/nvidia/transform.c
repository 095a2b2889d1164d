/* What NVIDIA does to a model before lowering it: the default pipeline
 * (constant folding with REF's kernels), then the fusions its kernels take
 * (BatchNormalization and scale/shift folded into convolutions, Conv + Add
 * and Conv/Gemm + activation into FusedConv / FusedGemm, which become one
 * cuDNN graph or one cuBLAS call; Gelu and LayerNormalization patterns back
 * into one node); and lowering a whole graph, as the partition sees it, read
 * with the public rn_graph and rn_node accessors (runnel/plugin.h). */
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"
#include "transforms/transforms.h"

/* Attention fused (one ScaledDotProductAttention node, which reads the
 * heads with strides): in f16 and bf16 runnel's kernel on tensor cores, in f32
 * cuBLAS's two products around a masked softmax (program.c,
 * choose_attention). RUNNEL_NV_ATTENTION=unfused keeps the exporters'
 * matrix products, softmax and transposes, for A/B runs. */
static bool fuse_attention(void)
{
    const char *mode = getenv("RUNNEL_NV_ATTENTION");
    return mode == NULL || strcmp(mode, "unfused") != 0;
}

rn_status nv_add_passes(void *context, transforms_pipeline *tp, const plugin_properties *props)
{
    (void)context;
    (void)props; /* every pass applies to every precision */
    struct {
        const char *name;
        transforms_pass_fn fn;
        unsigned flags;
    } passes[] = {
        {"fold_batchnorm", transforms_fold_batchnorm, 0},
        {"fold_scale_shift", transforms_fold_scale_shift, TRANSFORMS_REPEAT},
        {"fuse_gelu", transforms_fuse_gelu, 0},
        {"fuse_layernorm", transforms_fuse_layernorm, 0},
        {"fuse_attention", fuse_attention() ? transforms_fuse_attention : NULL, 0},
        {"fuse_conv_add", transforms_fuse_conv_add, 0},
        {"fuse_activation", transforms_fuse_activation, 0},
        {"eliminate_dead_nodes_after_fusion", transforms_eliminate_dead_nodes, 0},
    };
    rn_status st = RN_OK;
    for (size_t i = 0; i < sizeof passes / sizeof passes[0] && st == RN_OK; i++)
        if (passes[i].fn != NULL)
            st = transforms_pipeline_add(tp, passes[i].name, passes[i].fn, NULL, passes[i].flags);
    return st;
}

rn_status nv_transform(const rn_graph *model, const plugin_kernel_registry *ref,
                       const plugin_properties *props, rn_graph **out)
{
    plugin_device d = {.iface = &nv_device_iface, .folding = (plugin_kernel_registry *)ref};
    return plugin_device_transform(&d, props, model, out);
}

/* Whether `name` is among names[0..n). */
static bool listed(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* Whether `name` is one of g's inputs (the parameters a user feeds). */
static bool is_parameter(const rn_graph *g, const char *name)
{
    for (int i = 0; i < rn_graph_input_count(g); i++)
        if (strcmp(rn_graph_input_name(g, i), name) == 0)
            return true;
    return false;
}

rn_status nv_lower_graph(const rn_graph *g, rn_element_type precision, nv_program **out)
{
    int n_nodes = rn_graph_node_count(g), n_outputs = rn_graph_output_count(g), n_reads = 0;
    for (int k = 0; k < n_nodes; k++)
        n_reads += rn_node_input_count(rn_graph_node(g, k));
    const rn_node **nodes = calloc((size_t)n_nodes + 1, sizeof *nodes);
    const char **in = calloc((size_t)n_reads + 1, sizeof *in);
    const char **outs = calloc((size_t)n_outputs + 1, sizeof *outs);
    if (nodes == NULL || in == NULL || outs == NULL) {
        free(nodes);
        free(in);
        free(outs);
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    }
    /* The partition's inputs: the parameters and constants its nodes read,
     * each once, in the order they are first read. */
    int n_in = 0;
    for (int k = 0; k < n_nodes; k++) {
        const rn_node *node = nodes[k] = rn_graph_node(g, k);
        for (int i = 0; i < rn_node_input_count(node); i++) {
            const char *name = rn_node_input_name(node, i);
            if (name[0] != '\0' &&
                (rn_node_input_constant(node, i) != NULL || is_parameter(g, name)) &&
                !listed(in, n_in, name))
                in[n_in++] = name;
        }
    }
    for (int o = 0; o < n_outputs; o++)
        outs[o] = rn_graph_output_name(g, o);
    rn_status st = nv_lower(nodes, n_nodes, in, n_in, outs, n_outputs, precision, out);
    free(nodes);
    free(in);
    free(outs);
    return st;
}

rn_status nv_check_lowering(const rn_graph *g, rn_element_type precision)
{
    nv_program *p = NULL;
    rn_status st = nv_lower_graph(g, precision, &p);
    nv_program_free(p);
    if (st != RN_OK)
        return rn_wrap_error(st, "the model with its dynamic dims 1 (as a run specialises it): ");
    return RN_OK;
}

const void *nv_weight_identity(const rn_graph *base, const nv_value *v)
{
    size_t bytes = v->count * rn_element_type_size(v->host_type);
    const rn_kernel_tensor *t = rn_graph_constant(base, v->name);
    if (t == NULL)
        return NULL;
    if (t->data == v->host_data || (t->type == v->host_type && t->nbytes == bytes &&
                                    t->data != NULL && memcmp(t->data, v->host_data, bytes) == 0))
        return t->data;
    return NULL;
}
