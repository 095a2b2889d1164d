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
} cpu_md;

/* A oneDNN handle describing md (the caller destroys it with
 * dnnl_memory_desc_destroy): format any as any, a blocked layout by its
 * strides, or, with inner blocks, by the format tag that lays it out so.
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

/* The descriptor a primitive descriptor holds for `what` (dnnl_query_src_md,
 * ...) at index `index` into *out; false when it has none. */
bool cpu_pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int index, cpu_md *out);

#endif
