/* What NVIDIA does to a model before lowering it: the default pipeline
 * (constant folding with REF's kernels), then the fusions its kernels take
 * (BatchNormalization and scale/shift folded into convolutions, Conv + Add
 * and Conv/Gemm + activation into FusedConv / FusedGemm, which become one
 * cuDNN graph or one cuBLAS call; Gelu and LayerNormalization patterns back
 * into one node); and lowering a whole graph, as the partition sees it. */
#include <stdlib.h>
#include <string.h>

#include "graph/ops.h"
#include "plugins/nvidia/nvidia.h"
#include "transforms/transforms.h"

/* Attention fused in f16 (tensor cores; RUNNEL_NV_ATTENTION=unfused keeps
 * the matrix products, softmax and transposes, for A/B runs); in f32 the
 * unfused steps are cuBLAS's and faster than a scalar fused kernel. */
static bool fuse_attention(const plugin_properties *props)
{
    const char *mode = getenv("RUNNEL_NV_ATTENTION");
    if (mode != NULL && strcmp(mode, "unfused") == 0)
        return false;
    return props != NULL && props->inference_precision == RN_F16;
}

rn_status nv_add_passes(void *context, transforms_pipeline *tp, const plugin_properties *props)
{
    (void)context;
    struct {
        const char *name;
        transforms_pass_fn fn;
        unsigned flags;
    } passes[] = {
        {"fold_batchnorm", transforms_fold_batchnorm, 0},
        {"fold_scale_shift", transforms_fold_scale_shift, TRANSFORMS_REPEAT},
        {"fuse_gelu", transforms_fuse_gelu, 0},
        {"fuse_layernorm", transforms_fuse_layernorm, 0},
        {"fuse_attention", fuse_attention(props) ? transforms_fuse_attention : NULL, 0},
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

rn_status nv_transform(const graph *model, const plugin_kernel_registry *ref,
                       const plugin_properties *props, graph **out)
{
    plugin_device d = {.iface = &nv_device_iface, .folding = (plugin_kernel_registry *)ref};
    return plugin_device_transform(&d, props, model, out);
}

rn_status nv_lower_graph(const graph *g, bool half, nv_program **out)
{
    const char **in = calloc((size_t)g->n_values + 1, sizeof *in);
    const char **outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (in == NULL || outs == NULL) {
        free(in);
        free(outs);
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    }
    int n_in = 0;
    for (int v = 0; v < g->n_values; v++) {
        const graph_value *x = g->values[v];
        if (x->producer != NULL)
            continue;
        bool read = false;
        for (int k = 0; k < g->n_nodes && !read; k++)
            for (int i = 0; i < g->nodes[k]->n_inputs; i++)
                read |= g->nodes[k]->inputs[i] == x;
        if (read)
            in[n_in++] = x->name;
    }
    for (int o = 0; o < g->n_outputs; o++)
        outs[o] = g->outputs[o]->name;
    rn_status st = nv_lower((const rn_node *const *)g->nodes, g->n_nodes, in, n_in, outs,
                            g->n_outputs, half, out);
    free(in);
    free(outs);
    return st;
}

rn_status nv_check_lowering(const graph *g, bool half)
{
    nv_program *p = NULL;
    rn_status st = nv_lower_graph(g, half, &p);
    nv_program_free(p);
    if (st != RN_OK)
        return rn_wrap_error(st, "the model with its dynamic dims 1 (as a run specialises it): ");
    return RN_OK;
}

const void *nv_weight_identity(const graph *base, const nv_value *v)
{
    size_t bytes = v->count * rn_element_type_size(v->host_type);
    for (int i = 0; i < base->n_values; i++) {
        const graph_tensor *t = base->values[i]->constant;
        if (t == NULL || strcmp(base->values[i]->name, v->name) != 0)
            continue;
        if (t->data == v->host_data ||
            (t->type == v->host_type && t->nbytes == bytes && t->data != NULL &&
             memcmp(t->data, v->host_data, bytes) == 0))
            return t->data;
        return NULL;
    }
    return NULL;
}
