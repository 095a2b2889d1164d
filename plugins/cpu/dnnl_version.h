/* CPU: the one place that knows which oneDNN runnel is built against.
 * Private to plugins/cpu.
 *
 * oneDNN 2.x (Debian's libdnnl-dev 2.6.3, the default) and 3.x (PyPI's
 * onednn-cpu-gomp 3.2.0, bazel --config=onednn3: third_party/onednn)
 * differ in how memory descriptors are held: in 2.x dnnl_memory_desc_t is
 * a struct, copied and compared as a value; in 3.x it is an opaque handle
 * that is created, queried and destroyed. plugins/cpu holds descriptors as
 * cpu_md, a value with 2.x's fields (ndims, dims, data_type, padded_dims,
 * padded_offsets, offset0, format_kind, format_desc.blocking), stored in
 * layouts, plans and blobs, and hands them to oneDNN only through the
 * functions below. In 2.x cpu_md is oneDNN's own struct and the functions
 * are oneDNN's; in 3.x they make a handle for the call (cpu_md_handle) and
 * read a handle back into a value (cpu_md_from).
 *
 * DNNL_VERSION_MAJOR (dnnl_version.h, from whichever headers the build
 * found) selects the version; nothing outside this file and
 * dnnl_version.c tests it. */
#ifndef RUNNEL_PLUGINS_CPU_DNNL_VERSION_H
#define RUNNEL_PLUGINS_CPU_DNNL_VERSION_H

#include <dnnl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if DNNL_VERSION_MAJOR >= 3

/* A blocked layout's strides and inner blocks, as 2.x's
 * dnnl_blocking_desc_t. */
typedef struct cpu_blocking {
    dnnl_dims_t strides;
    int inner_nblks;
    dnnl_dims_t inner_blks;
    dnnl_dims_t inner_idxs;
} cpu_blocking;

/* A memory descriptor as a value (2.x's fields; unused entries zero). */
typedef struct cpu_md {
    int ndims;
    dnnl_dims_t dims;
    dnnl_data_type_t data_type;
    dnnl_dims_t padded_dims;
    dnnl_dims_t padded_offsets;
    dnnl_dim_t offset0;
    dnnl_format_kind_t format_kind;
    struct {
        cpu_blocking blocking;
    } format_desc;
    /* What the fields do not say (2.x's `extra`: an int8 weights layout's
     * compensation), which 3.x does not let a query read: 0 none, else
     * 1 + the index of the primitive's own descriptor kept (cpu_pd_md). */
    int extra;
} cpu_md;

/* A oneDNN handle describing md (the caller destroys it with
 * dnnl_memory_desc_destroy): format any as any, a blocked layout by its
 * strides, or, with inner blocks, by the format tag that lays it out so;
 * with extra, a copy of the descriptor kept.
 * dnnl_unimplemented when no tag does (a layout a 3.x primitive can pick
 * but no tag names). */
dnnl_status_t cpu_md_handle(const cpu_md *md, dnnl_memory_desc_t *out);
/* The value of a handle oneDNN gave (a primitive descriptor's query). */
dnnl_status_t cpu_md_from(const_dnnl_memory_desc_t h, cpu_md *out);

dnnl_status_t cpu_md_init_by_tag(cpu_md *md, int ndims, const dnnl_dims_t dims, dnnl_data_type_t dt,
                                 dnnl_format_tag_t tag);
dnnl_status_t cpu_md_init_by_strides(cpu_md *md, int ndims, const dnnl_dims_t dims,
                                     dnnl_data_type_t dt, const dnnl_dims_t strides);
dnnl_status_t cpu_md_init_submemory(cpu_md *md, const cpu_md *parent, const dnnl_dims_t dims,
                                    const dnnl_dims_t offsets);
dnnl_status_t cpu_md_permute_axes(cpu_md *out, const cpu_md *in, const int *permutation);
/* Bytes of md's buffer (0 when md cannot be described). */
size_t cpu_md_get_size(const cpu_md *md);
/* Whether two descriptors describe the same layout (1) or not (0). */
int cpu_md_equal(const cpu_md *a, const cpu_md *b);
dnnl_status_t cpu_memory_create(dnnl_memory_t *out, const cpu_md *md, dnnl_engine_t eng,
                                void *data);
dnnl_status_t cpu_reorder_pd(dnnl_primitive_desc_t *pd, const cpu_md *src, dnnl_engine_t eng,
                             const cpu_md *dst, const_dnnl_primitive_attr_t attr);
/* A concat of n sources along axis; dst NULL: oneDNN picks its layout. */
dnnl_status_t cpu_concat_pd(dnnl_primitive_desc_t *pd, const cpu_md *dst, int n, int axis,
                            const cpu_md *src, const_dnnl_primitive_attr_t attr, dnnl_engine_t eng);

#else /* oneDNN 2.x: the descriptor is a value already */

typedef dnnl_blocking_desc_t cpu_blocking;
typedef dnnl_memory_desc_t cpu_md;

static inline dnnl_status_t cpu_md_init_by_tag(cpu_md *md, int ndims, const dnnl_dims_t dims,
                                               dnnl_data_type_t dt, dnnl_format_tag_t tag)
{
    return dnnl_memory_desc_init_by_tag(md, ndims, dims, dt, tag);
}

static inline dnnl_status_t cpu_md_init_by_strides(cpu_md *md, int ndims, const dnnl_dims_t dims,
                                                   dnnl_data_type_t dt, const dnnl_dims_t strides)
{
    return dnnl_memory_desc_init_by_strides(md, ndims, dims, dt, strides);
}

static inline dnnl_status_t cpu_md_init_submemory(cpu_md *md, const cpu_md *parent,
                                                  const dnnl_dims_t dims, const dnnl_dims_t offsets)
{
    return dnnl_memory_desc_init_submemory(md, parent, dims, offsets);
}

static inline dnnl_status_t cpu_md_permute_axes(cpu_md *out, const cpu_md *in,
                                                const int *permutation)
{
    return dnnl_memory_desc_permute_axes(out, in, permutation);
}

static inline size_t cpu_md_get_size(const cpu_md *md)
{
    return dnnl_memory_desc_get_size(md);
}

static inline int cpu_md_equal(const cpu_md *a, const cpu_md *b)
{
    return dnnl_memory_desc_equal(a, b);
}

static inline dnnl_status_t cpu_memory_create(dnnl_memory_t *out, const cpu_md *md,
                                              dnnl_engine_t eng, void *data)
{
    return dnnl_memory_create(out, md, eng, data);
}

static inline dnnl_status_t cpu_reorder_pd(dnnl_primitive_desc_t *pd, const cpu_md *src,
                                           dnnl_engine_t eng, const cpu_md *dst,
                                           const_dnnl_primitive_attr_t attr)
{
    return dnnl_reorder_primitive_desc_create(pd, src, eng, dst, eng, attr);
}

static inline dnnl_status_t cpu_concat_pd(dnnl_primitive_desc_t *pd, const cpu_md *dst, int n,
                                          int axis, const cpu_md *src,
                                          const_dnnl_primitive_attr_t attr, dnnl_engine_t eng)
{
    return dnnl_concat_primitive_desc_create(pd, dst, n, axis, src, attr, eng);
}

#endif

/* oneDNN's name of an ISA ("avx512_core_bf16"; "any" for none it names),
 * whether it is AVX-512 with BW/VL/DQ (avx512_core and above), whether it
 * runs bf16 natively, whether it has VNNI (int8 dot products). */
const char *cpu_dnnl_isa_name(dnnl_cpu_isa_t isa);
bool cpu_dnnl_isa_avx512(dnnl_cpu_isa_t isa);
bool cpu_dnnl_isa_bf16(dnnl_cpu_isa_t isa);
bool cpu_dnnl_isa_vnni(dnnl_cpu_isa_t isa);
/* What a status means, in words ("invalid arguments"). */
const char *cpu_dnnl_status_why(dnnl_status_t s);
/* Whether the convolutions pick channels-last activations over format
 * "any" where a layout blocked along C is to be had too (3.x's brgconv on
 * AVX2; 2.x picks nChw8c there): then the convolutions around a Concat
 * along C are steered to the blocked one (concat_layout.c). */
bool cpu_dnnl_convs_pick_channels_last(void);

/* Descriptors in blobs. md as a blob stores it (3.x: a descriptor kept
 * whole, cpu_md.extra, this process's index, stored as -1: "the
 * primitive's own"); whether a descriptor read from a blob is one
 * cpu_md_stored made; whether a stored one is md: equal, or (-1) md is a
 * primitive's own whose fields are the stored ones; the weight's plain
 * hash, the oneDNN version and the ISA, which the blob also checks, make
 * it the same primitive's. */
cpu_md cpu_md_stored(const cpu_md *md);
bool cpu_md_portable(const cpu_md *md);
int cpu_md_equal_stored(const cpu_md *stored, const cpu_md *md);
/* Whether `bytes` can be a stored descriptor's buffer: its size, or for a
 * primitive's own (-1) more than its fields' layout (the rest its
 * compensation; the restore checks the size of the one it matches). */
bool cpu_md_stored_size_ok(const cpu_md *stored, size_t bytes);

/* The descriptor a primitive descriptor holds for `what` (dnnl_query_src_md,
 * ...) at index `index` into *out; false when it has none. */
bool cpu_pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int index, cpu_md *out);

/* ---- operations ----
 *
 * An operation before its primitive descriptor (cpu_op): 2.x's op
 * descriptor, made by its *_desc_init when the cpu_op_* call is made; in
 * 3.x, which creates primitive descriptors from the parameters directly
 * (dnnl_*_primitive_desc_create), the parameters, copied. cpu_op_pd makes
 * the primitive descriptor with an attribute. Every operation is forward
 * inference. NULL bias: none. Descriptors are read during the call only. */

typedef enum cpu_op_kind {
    CPU_OP_CONV,
    CPU_OP_DECONV,
    CPU_OP_INNER_PRODUCT,
    CPU_OP_MATMUL,
    CPU_OP_BINARY,
    CPU_OP_ELTWISE,
    CPU_OP_SOFTMAX,
    CPU_OP_POOLING,
    CPU_OP_LRN,
    CPU_OP_BATCH_NORM,
    CPU_OP_LAYER_NORM,
    CPU_OP_SHUFFLE,
    CPU_OP_RESAMPLING,
    CPU_OP_REDUCTION,
} cpu_op_kind;

typedef struct cpu_op {
    cpu_op_kind kind;
#if DNNL_VERSION_MAJOR >= 3
    dnnl_alg_kind_t alg;
    cpu_md src, wei, bias, dst, src1;
    bool has_bias;
    dnnl_dims_t strides, dilates, pad_l, pad_r, kernel;
    float alpha, beta, k, eps, p;
    dnnl_dim_t size;
    int axis;
    unsigned flags;
#else
    union {
        dnnl_convolution_desc_t conv;
        dnnl_deconvolution_desc_t deconv;
        dnnl_inner_product_desc_t ip;
        dnnl_matmul_desc_t matmul;
        dnnl_binary_desc_t binary;
        dnnl_eltwise_desc_t eltwise;
        dnnl_softmax_v2_desc_t softmax;
        dnnl_pooling_v2_desc_t pooling;
        dnnl_lrn_desc_t lrn;
        dnnl_batch_normalization_desc_t bnorm;
        dnnl_layer_normalization_desc_t lnorm;
        dnnl_shuffle_desc_t shuffle;
        dnnl_resampling_desc_t resampling;
        dnnl_reduction_desc_t reduction;
    } d;
#endif
} cpu_op;

/* Convolution and deconvolution (alg dnnl_convolution_direct,
 * dnnl_deconvolution_direct); dilates 0-based (0: none). */
dnnl_status_t cpu_op_conv(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *wei,
                          const cpu_md *bias, const cpu_md *dst, const dnnl_dims_t strides,
                          const dnnl_dims_t dilates, const dnnl_dims_t pad_l,
                          const dnnl_dims_t pad_r);
dnnl_status_t cpu_op_deconv(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *wei,
                            const cpu_md *bias, const cpu_md *dst, const dnnl_dims_t strides,
                            const dnnl_dims_t dilates, const dnnl_dims_t pad_l,
                            const dnnl_dims_t pad_r);
dnnl_status_t cpu_op_inner_product(cpu_op *op, const cpu_md *src, const cpu_md *wei,
                                   const cpu_md *bias, const cpu_md *dst);
dnnl_status_t cpu_op_matmul(cpu_op *op, const cpu_md *src, const cpu_md *wei, const cpu_md *bias,
                            const cpu_md *dst);
dnnl_status_t cpu_op_binary(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src0, const cpu_md *src1,
                            const cpu_md *dst);
/* In place: the destination is described as the source. */
dnnl_status_t cpu_op_eltwise(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, float alpha,
                             float beta);
dnnl_status_t cpu_op_softmax(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *dst,
                             int axis);
dnnl_status_t cpu_op_pooling(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *dst,
                             const dnnl_dims_t strides, const dnnl_dims_t kernel,
                             const dnnl_dims_t dilation, const dnnl_dims_t pad_l,
                             const dnnl_dims_t pad_r);
dnnl_status_t cpu_op_lrn(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, dnnl_dim_t local_size,
                         float alpha, float beta, float k);
dnnl_status_t cpu_op_batch_norm(cpu_op *op, const cpu_md *src, float eps, unsigned flags);
/* Statistics' descriptor: oneDNN's default. */
dnnl_status_t cpu_op_layer_norm(cpu_op *op, const cpu_md *src, float eps, unsigned flags);
dnnl_status_t cpu_op_shuffle(cpu_op *op, const cpu_md *src, int axis, dnnl_dim_t group_size);
/* Factors: from the source's and destination's dims. */
dnnl_status_t cpu_op_resampling(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src,
                                const cpu_md *dst);
dnnl_status_t cpu_op_reduction(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src,
                               const cpu_md *dst, float p, float eps);

/* The primitive descriptor of op with attr (NULL: default), oneDNN's
 * first implementation. */
dnnl_status_t cpu_op_pd(dnnl_primitive_desc_t *pd, const cpu_op *op,
                        const_dnnl_primitive_attr_t attr, dnnl_engine_t eng);
/* The first of op's implementations, in oneDNN's order, whose name
 * (cpu_pd_impl's "jit:sse41") is `impl`; NULL when none is. */
dnnl_primitive_desc_t cpu_op_pd_named(const cpu_op *op, const_dnnl_primitive_attr_t attr,
                                      dnnl_engine_t eng, const char *impl);

/* ---- attributes and post-ops ---- */

/* Post-op of an eltwise activation (2.x's scale: 1). */
dnnl_status_t cpu_post_ops_append_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg, float alpha,
                                          float beta);
/* Post-op adding dst (read as dt; dnnl_data_type_undef: dst's own), times
 * scale, less zero_point. */
dnnl_status_t cpu_post_ops_append_sum(dnnl_post_ops_t po, float scale, int32_t zero_point,
                                      dnnl_data_type_t dt);
dnnl_status_t cpu_post_ops_append_binary(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                                         const cpu_md *src1);
dnnl_status_t cpu_post_ops_get_params_eltwise(const_dnnl_post_ops_t po, int index,
                                              dnnl_alg_kind_t *alg, float *alpha, float *beta);
/* A constant scale of a product's result before its post-ops (2.x's
 * output scale). 3.x scales only per argument at run time: there the
 * scale is an eltwise linear post-op, the first, so both are called:
 * cpu_post_ops_begin_scale on *po (NULL: made when needed) before any
 * other post-op is appended, cpu_attr_set_scale on the attribute made
 * from them. */
dnnl_status_t cpu_post_ops_begin_scale(dnnl_post_ops_t *po, float scale);
dnnl_status_t cpu_attr_set_scale(dnnl_primitive_attr_t attr, float scale);
/* One argument of an execution: (DNNL_ARG_*, descriptor, memory). */
typedef struct cpu_arg {
    int arg;
    const cpu_md *md;
    void *data;
} cpu_arg;

/* An int8 primitive's scales and zero point. 2.x takes their values in the
 * attribute (output scales, zero points); 3.x takes masks there and the
 * values as arguments of every run (DNNL_ARG_ATTR_SCALES |
 * DNNL_ARG_WEIGHTS, ...), which cpu_quant_args adds. Zeroed, then set by
 * the calls below before the primitive descriptor is made; freed by
 * cpu_quant_free. */
typedef struct cpu_quant {
    float *scales; /* 3.x: the values, passed at run time */
    int n_scales, scale_arg;
    cpu_md scales_md;
    int zp_arg; /* 0: no zero point */
    bool zp_runtime;
    int32_t zp;
    cpu_md zp_md;
} cpu_quant;

/* A product's (convolution, inner product, matmul) accumulator times
 * scales[c] for output channel c (n 1: one for all), before its post-ops:
 * dst_mask names the channel's dim of the destination (2.x's output
 * scales), wei_mask its dims of the weights (3.x's weights scales). */
dnnl_status_t cpu_quant_product_scales(cpu_quant *q, dnnl_primitive_attr_t attr,
                                       const float *scales, int n, int dst_mask, int wei_mask);
/* A reorder's one scale: quantize (f32 to int8) divides by it, dequantize
 * multiplies. */
dnnl_status_t cpu_quant_reorder_scale(cpu_quant *q, dnnl_primitive_attr_t attr, float scale,
                                      bool quantize);
/* Argument arg's zero point (arg's one value; subtracted from a source,
 * added to a destination); runtime: given by each run (cpu_quant_args). */
dnnl_status_t cpu_quant_zero_point(cpu_quant *q, dnnl_primitive_attr_t attr, int arg, int32_t zp,
                                   bool runtime);
/* Appends the run-time arguments to a (room for 2): the scales and zero
 * point 3.x takes at run time, a runtime zero point (*zp, at a stable
 * address) in either. Returns how many. */
int cpu_quant_args(const cpu_quant *q, int32_t *zp, cpu_arg *a);
void cpu_quant_free(cpu_quant *q);
/* Whether a product's bias is added to its accumulator before the scales
 * (2.x: in the accumulator's units) or after them (3.x: in the scaled
 * result's). */
bool cpu_quant_bias_before_scales(void);

#endif
