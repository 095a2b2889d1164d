/* The CPU device: the generic plan-based device (plugins/api/device.h) with oneDNN's
 * kernels ahead of REF's, the conv/GEMM fusions, bf16 by default where
 * the CPU runs it natively (as OpenVINO's CPU plugin), and single-threaded
 * primitives per stream (THROUGHPUT) or one stream whose primitives use
 * every core (LATENCY). */
#include <string.h>

#include "plugins/cpu/blob.h"
#include "plugins/cpu/cpu.h"
#include "plugins/ref/ref.h"

rn_status cpu_register_kernels(rn_kernel_registry *r)
{
    dnnl_engine_t eng = NULL;
    rn_status st = cpu_engine(&eng);
    if (st == RN_OK)
        st = plugin_kernel_registry_add_list(r, cpu_kernels);
    if (st == RN_OK)
        st = ref_register_kernels(r);
    return st;
}

static rn_status cpu_device_kernels(void *context, plugin_kernel_registry *r)
{
    (void)context;
    return cpu_register_kernels(r);
}

static void cpu_defaults(void *context, plugin_properties *p, void *own)
{
    (void)context, (void)own;
    p->precisions = PLUGIN_PRECISION(RN_F32) | PLUGIN_PRECISION(RN_BF16);
    /* bf16 asked for where the CPU lacks it runs, and reads back, f32. */
    p->native_precisions =
        PLUGIN_PRECISION(RN_F32) | (cpu_has_bf16() ? PLUGIN_PRECISION(RN_BF16) : 0);
    p->inference_precision = cpu_has_bf16() ? RN_BF16 : RN_F32;
    p->cpu_keys = true;
    p->denormals_optimization = true;
}

static rn_status cpu_add_passes(void *context, transforms_pipeline *tp,
                                const plugin_properties *props)
{
    (void)context;
    /* attention.c writes the heads merged ([B, S, H, Dv]) with strides:
     * the exporters' head merge Transpose joins the fused node. */
    static transforms_attention_options cpu_attention_options = {.absorb_output = true};
    rn_status st;
    if ((st = transforms_pipeline_insert_before(tp, "constant_folding", "fuse_qdq",
                                                transforms_fuse_qdq, NULL, 0)) != RN_OK ||
        (st = transforms_pipeline_insert_before(tp, "constant_folding", "fuse_qop",
                                                transforms_fuse_qop, NULL, 0)) != RN_OK ||
        /* Before the folds, which give each of two equal Convs weights of
         * its own (their BatchNormalizations differ): OpenVINO merges them
         * too (docs/transforms.md). */
        (st = transforms_pipeline_add(tp, "merge_duplicates", transforms_merge_duplicates, NULL,
                                      0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "fold_batchnorm", transforms_fold_batchnorm, NULL, 0)) !=
            RN_OK ||
        (st = transforms_pipeline_add(tp, "fold_scale_shift", transforms_fold_scale_shift, NULL,
                                      TRANSFORMS_REPEAT)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "pool_before_conv", transforms_pool_before_conv, NULL,
                                      0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "pool_after_conv", transforms_pool_after_conv, NULL,
                                      0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_gelu", transforms_fuse_gelu, NULL, 0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_layernorm", transforms_fuse_layernorm, NULL, 0)) !=
            RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_attention", transforms_fuse_attention,
                                      (void *)&cpu_attention_options, 0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_shuffle_channels", transforms_fuse_shuffle_channels,
                                      NULL, 0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_matmul_bias", transforms_fuse_matmul_bias, NULL,
                                      0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "gemm_transpose_b", transforms_gemm_transpose_b, NULL,
                                      0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_conv_add", transforms_fuse_conv_add, NULL, 0)) !=
            RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_matmul_add", transforms_fuse_matmul_add, NULL,
                                      0)) != RN_OK ||
        (st = transforms_pipeline_add(tp, "fuse_activation", transforms_fuse_activation, NULL,
                                      0)) != RN_OK)
        return st;
    st = transforms_pipeline_add(tp, "eliminate_dead_nodes_after_fusion",
                                 transforms_eliminate_dead_nodes, NULL, 0);
    /* Concats along C in place where the convolutions would pick
     * channels-last (oneDNN 3.x; 2.6's brgconv in native bf16:
     * concat_layout.c). */
    static bool native_bf16 = true;
    if (st == RN_OK)
        st = transforms_pipeline_add(
            tp, "cpu_concat_blocked", cpu_mark_concat_convs,
            props->inference_precision == RN_BF16 && cpu_has_bf16() ? &native_bf16 : NULL, 0);
    /* A first convolution that feeds Winograd ones writes their layout
     * (conv.c, cpu_mark_winograd_inputs). */
    if (st == RN_OK && props->inference_precision == RN_F32 &&
        cpu_winograd_enabled(props->execution_mode == 0))
        st = transforms_pipeline_add(tp, "cpu_winograd_inputs", cpu_mark_winograd_inputs, NULL, 0);
    /* bf16's exceptions, on the fused graph: its products are the nodes
     * that compute in bf16 (docs/cpu.md, "Layouts and precision"). */
    if (st == RN_OK && props->inference_precision == RN_BF16)
        st = transforms_pipeline_add(tp, "keep_f32", transforms_keep_f32, NULL, 0);
    return st;
}

/* Streams as the hint chose them, each with one worker: the cores a stream
 * has are its primitives' OpenMP team. */
static void cpu_configure(plugin_compiled *compiled, plugin_plan_options *options)
{
    const plugin_properties *props = &compiled->props;
    cpu_config c = {
        .bf16 = props->inference_precision == RN_BF16,
        .threads = options->threads_per_stream > 0 ? (int)options->threads_per_stream : 1,
        .denormals = props->denormals_optimization,
        .bind = props->bind_thread,
        .winograd = cpu_winograd_enabled(props->execution_mode == 0),
    };
    cpu_config_set(&c);
    options->compute_threads_per_stream = (uint32_t)c.threads;
    options->threads_per_stream = 1;
    /* A stream of several cores runs independent branches side by side on
     * its team's threads (team.c, cpu_branch_fork; docs/cpu.md). */
    if (c.threads > 1 && cpu_branches_enabled()) {
        options->branch_threads = c.threads;
        options->branch_fork = cpu_branch_fork;
        options->branch_work = cpu_work;
    }
    options->concat_dense = cpu_concat_dense;
}

/* CPU_ISA, and OPTIMIZATION_CAPABILITIES and FULL_DEVICE_NAME for the
 * machine (info.c). */
static rn_status cpu_read(void *context, const char *id, const char *key, char *buf, size_t size)
{
    (void)context, (void)id;
    return cpu_get_property(key, buf, size);
}

static const plugin_device_iface cpu_device = {
    .info =
        {
            .name = "CPU",
            .full_name = "runnel CPU device (oneDNN)",
            .architecture = "onednn",
            .capabilities = "FP32 INT8 EXPORT_IMPORT", /* info.c answers for the machine */
        },
    .context_kind = {"CPU", "HOST", "HOST_BUFFER"},
    .ro_keys = cpu_ro_keys,
    .specializes = true,
    .register_kernels = cpu_device_kernels,
    .defaults = cpu_defaults,
    .read = cpu_read,
    .add_passes = cpu_add_passes,
    .enter = cpu_configure,
    .export_blob = cpu_export_blob,
    .import_blob = cpu_import_blob,
    .import_done = cpu_import_done,
};

PLUGIN_DEVICE_DEFINE(cpu_plugin_ops, "CPU", cpu_device, plugin_device_add_extension, NULL);
