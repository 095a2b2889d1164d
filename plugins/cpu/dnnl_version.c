/* The oneDNN version layer (dnnl_version.h): memory descriptors as values
 * over oneDNN 2.x's structs or 3.x's handles. */
#include "plugins/cpu/dnnl_version.h"

#include <pthread.h>
#include <string.h>

#if DNNL_VERSION_MAJOR >= 3

static bool query_dims(const_dnnl_memory_desc_t h, dnnl_query_t what, int n, dnnl_dim_t *out)
{
    const dnnl_dims_t *d = NULL;
    if (dnnl_memory_desc_query(h, what, &d) != dnnl_success || d == NULL)
        return false;
    memcpy(out, *d, sizeof(dnnl_dim_t) * (size_t)n);
    return true;
}

dnnl_status_t cpu_md_from(const_dnnl_memory_desc_t h, cpu_md *out)
{
    memset(out, 0, sizeof *out);
    if (h == NULL)
        return dnnl_success; /* no descriptor: the zero one (ndims 0) */
    int n = 0;
    dnnl_status_t s = dnnl_memory_desc_query(h, dnnl_query_ndims_s32, &n);
    if (s != dnnl_success || n < 0 || n > DNNL_MAX_NDIMS)
        return s != dnnl_success ? s : dnnl_invalid_arguments;
    out->ndims = n;
    if (n == 0)
        return dnnl_success;
    if (!query_dims(h, dnnl_query_dims, n, out->dims) ||
        dnnl_memory_desc_query(h, dnnl_query_data_type, &out->data_type) != dnnl_success ||
        dnnl_memory_desc_query(h, dnnl_query_format_kind, &out->format_kind) != dnnl_success)
        return dnnl_invalid_arguments;
    if (out->format_kind != dnnl_blocked)
        return dnnl_success;
    cpu_blocking *b = &out->format_desc.blocking;
    if (!query_dims(h, dnnl_query_padded_dims, n, out->padded_dims) ||
        !query_dims(h, dnnl_query_padded_offsets, n, out->padded_offsets) ||
        dnnl_memory_desc_query(h, dnnl_query_submemory_offset_s64, &out->offset0) != dnnl_success ||
        !query_dims(h, dnnl_query_strides, n, b->strides) ||
        dnnl_memory_desc_query(h, dnnl_query_inner_nblks_s32, &b->inner_nblks) != dnnl_success ||
        b->inner_nblks < 0 || b->inner_nblks > DNNL_MAX_NDIMS)
        return dnnl_invalid_arguments;
    if (b->inner_nblks > 0 &&
        (!query_dims(h, dnnl_query_inner_blks, b->inner_nblks, b->inner_blks) ||
         !query_dims(h, dnnl_query_inner_idxs, b->inner_nblks, b->inner_idxs)))
        return dnnl_invalid_arguments;
    return dnnl_success;
}

int cpu_md_equal(const cpu_md *a, const cpu_md *b)
{
    int n = a->ndims;
    size_t dims = sizeof(dnnl_dim_t) * (size_t)(n > 0 ? n : 0);
    if (n != b->ndims || a->data_type != b->data_type || a->format_kind != b->format_kind ||
        memcmp(a->dims, b->dims, dims) != 0)
        return 0;
    if (a->format_kind != dnnl_blocked)
        return 1;
    const cpu_blocking *x = &a->format_desc.blocking, *y = &b->format_desc.blocking;
    size_t blks = sizeof(dnnl_dim_t) * (size_t)x->inner_nblks;
    return memcmp(a->padded_dims, b->padded_dims, dims) == 0 &&
           memcmp(a->padded_offsets, b->padded_offsets, dims) == 0 && a->offset0 == b->offset0 &&
           memcmp(x->strides, y->strides, dims) == 0 && x->inner_nblks == y->inner_nblks &&
           memcmp(x->inner_blks, y->inner_blks, blks) == 0 &&
           memcmp(x->inner_idxs, y->inner_idxs, blks) == 0;
}

/* Blocked layouts with inner blocks have no constructor but a format tag:
 * the tag found for a layout is remembered (by its ndims, dense strides
 * order and blocks, not its dims) so that each is searched for once. */
#define TAG_CACHE 64
typedef struct tag_entry {
    cpu_md key; /* dims, padded dims and strides zeroed */
    dnnl_format_tag_t tag;
} tag_entry;
static tag_entry tags[TAG_CACHE];
static int n_tags, next_tag;
static pthread_mutex_t tag_lock = PTHREAD_MUTEX_INITIALIZER;

/* The part of md a format tag determines given the dims: the order of the
 * outer dims by stride and the inner blocks. */
static cpu_md tag_key(const cpu_md *md)
{
    cpu_md k;
    memset(&k, 0, sizeof k);
    k.ndims = md->ndims;
    k.data_type = md->data_type;
    k.format_kind = md->format_kind;
    const cpu_blocking *b = &md->format_desc.blocking;
    k.format_desc.blocking.inner_nblks = b->inner_nblks;
    for (int i = 0; i < b->inner_nblks; i++) {
        k.format_desc.blocking.inner_blks[i] = b->inner_blks[i];
        k.format_desc.blocking.inner_idxs[i] = b->inner_idxs[i];
    }
    /* Outer order: the rank of each dim's stride (ties by index). */
    for (int i = 0; i < md->ndims; i++) {
        int rank = 0;
        for (int j = 0; j < md->ndims; j++)
            rank += b->strides[j] > b->strides[i] || (b->strides[j] == b->strides[i] && j < i);
        k.format_desc.blocking.strides[i] = rank;
    }
    return k;
}

static dnnl_status_t with_tag(const cpu_md *md, dnnl_format_tag_t tag, dnnl_memory_desc_t *out)
{
    dnnl_memory_desc_t h = NULL;
    dnnl_status_t s = dnnl_memory_desc_create_with_tag(&h, md->ndims, md->dims, md->data_type, tag);
    if (s != dnnl_success)
        return s;
    cpu_md v;
    if (cpu_md_from(h, &v) != dnnl_success || !cpu_md_equal(&v, md)) {
        dnnl_memory_desc_destroy(h);
        return dnnl_unimplemented;
    }
    *out = h;
    return dnnl_success;
}

static dnnl_status_t blocked_handle(const cpu_md *md, dnnl_memory_desc_t *out)
{
    cpu_md key = tag_key(md);
    pthread_mutex_lock(&tag_lock);
    dnnl_format_tag_t known = dnnl_format_tag_undef;
    for (int i = 0; i < n_tags && known == dnnl_format_tag_undef; i++)
        if (memcmp(&tags[i].key, &key, sizeof key) == 0)
            known = tags[i].tag;
    pthread_mutex_unlock(&tag_lock);
    if (known != dnnl_format_tag_undef && with_tag(md, known, out) == dnnl_success)
        return dnnl_success;
    for (int t = dnnl_format_tag_any + 1; t < dnnl_format_tag_last; t++) {
        if (with_tag(md, (dnnl_format_tag_t)t, out) != dnnl_success)
            continue;
        pthread_mutex_lock(&tag_lock);
        tags[next_tag] = (tag_entry){key, (dnnl_format_tag_t)t};
        next_tag = (next_tag + 1) % TAG_CACHE;
        if (n_tags < TAG_CACHE)
            n_tags++;
        pthread_mutex_unlock(&tag_lock);
        return dnnl_success;
    }
    return dnnl_unimplemented;
}

dnnl_status_t cpu_md_handle(const cpu_md *md, dnnl_memory_desc_t *out)
{
    *out = NULL;
    if (md->ndims <= 0 || md->ndims > DNNL_MAX_NDIMS)
        return dnnl_invalid_arguments;
    if (md->format_kind == dnnl_format_kind_any)
        return dnnl_memory_desc_create_with_tag(out, md->ndims, md->dims, md->data_type,
                                                dnnl_format_tag_any);
    if (md->format_kind != dnnl_blocked)
        return dnnl_unimplemented; /* opaque layouts stay in their primitive */
    if (md->offset0 != 0)
        return dnnl_unimplemented; /* a sub-memory's offset: read only as a value */
    const cpu_blocking *b = &md->format_desc.blocking;
    bool padded = false;
    for (int d = 0; d < md->ndims; d++)
        padded = padded || md->padded_dims[d] != md->dims[d] || md->padded_offsets[d] != 0;
    if (b->inner_nblks == 0 && !padded)
        return dnnl_memory_desc_create_with_strides(out, md->ndims, md->dims, md->data_type,
                                                    b->strides);
    return blocked_handle(md, out);
}

/* The value of the handle *h a call (status s) made, which is destroyed
 * (h by address: the call made it in the same expression). */
static dnnl_status_t take(dnnl_status_t s, dnnl_memory_desc_t *h, cpu_md *md)
{
    if (s == dnnl_success)
        s = cpu_md_from(*h, md);
    if (*h != NULL)
        dnnl_memory_desc_destroy(*h);
    return s;
}

dnnl_status_t cpu_md_init_by_tag(cpu_md *md, int ndims, const dnnl_dims_t dims, dnnl_data_type_t dt,
                                 dnnl_format_tag_t tag)
{
    dnnl_memory_desc_t h = NULL;
    return take(dnnl_memory_desc_create_with_tag(&h, ndims, dims, dt, tag), &h, md);
}

dnnl_status_t cpu_md_init_by_strides(cpu_md *md, int ndims, const dnnl_dims_t dims,
                                     dnnl_data_type_t dt, const dnnl_dims_t strides)
{
    dnnl_memory_desc_t h = NULL;
    return take(dnnl_memory_desc_create_with_strides(&h, ndims, dims, dt, strides), &h, md);
}

dnnl_status_t cpu_md_init_submemory(cpu_md *md, const cpu_md *parent, const dnnl_dims_t dims,
                                    const dnnl_dims_t offsets)
{
    dnnl_memory_desc_t p = NULL, h = NULL;
    dnnl_status_t s = cpu_md_handle(parent, &p);
    if (s == dnnl_success)
        s = dnnl_memory_desc_create_submemory(&h, p, dims, offsets);
    if (p != NULL)
        dnnl_memory_desc_destroy(p);
    return take(s, &h, md);
}

dnnl_status_t cpu_md_permute_axes(cpu_md *out, const cpu_md *in, const int *permutation)
{
    dnnl_memory_desc_t p = NULL, h = NULL;
    dnnl_status_t s = cpu_md_handle(in, &p);
    if (s == dnnl_success)
        s = dnnl_memory_desc_permute_axes(&h, p, permutation);
    if (p != NULL)
        dnnl_memory_desc_destroy(p);
    return take(s, &h, out);
}

size_t cpu_md_get_size(const cpu_md *md)
{
    dnnl_memory_desc_t h = NULL;
    if (md->ndims == 0 || cpu_md_handle(md, &h) != dnnl_success)
        return 0;
    size_t n = dnnl_memory_desc_get_size(h);
    dnnl_memory_desc_destroy(h);
    return n;
}

dnnl_status_t cpu_memory_create(dnnl_memory_t *out, const cpu_md *md, dnnl_engine_t eng, void *data)
{
    dnnl_memory_desc_t h = NULL;
    dnnl_status_t s = cpu_md_handle(md, &h);
    if (s == dnnl_success)
        s = dnnl_memory_create(out, h, eng, data); /* the memory keeps a copy */
    if (h != NULL)
        dnnl_memory_desc_destroy(h);
    return s;
}

dnnl_status_t cpu_reorder_pd(dnnl_primitive_desc_t *pd, const cpu_md *src, dnnl_engine_t eng,
                             const cpu_md *dst, const_dnnl_primitive_attr_t attr)
{
    dnnl_memory_desc_t s_h = NULL, d_h = NULL;
    dnnl_status_t s = cpu_md_handle(src, &s_h);
    if (s == dnnl_success)
        s = cpu_md_handle(dst, &d_h);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(pd, s_h, eng, d_h, eng, attr);
    dnnl_memory_desc_destroy(s_h);
    dnnl_memory_desc_destroy(d_h);
    return s;
}

dnnl_status_t cpu_concat_pd(dnnl_primitive_desc_t *pd, const cpu_md *dst, int n, int axis,
                            const cpu_md *src, const_dnnl_primitive_attr_t attr, dnnl_engine_t eng)
{
    enum { MAX_SRC = 64 };
    if (n < 1 || n > MAX_SRC)
        return dnnl_invalid_arguments;
    dnnl_memory_desc_t h[MAX_SRC] = {NULL}, d_h = NULL;
    dnnl_status_t s = dst != NULL ? cpu_md_handle(dst, &d_h) : dnnl_success;
    for (int i = 0; i < n && s == dnnl_success; i++)
        s = cpu_md_handle(&src[i], &h[i]);
    if (s == dnnl_success)
        s = dnnl_concat_primitive_desc_create(pd, eng, d_h, n, axis,
                                              (const_dnnl_memory_desc_t const *)h, attr);
    for (int i = 0; i < n; i++)
        dnnl_memory_desc_destroy(h[i]);
    dnnl_memory_desc_destroy(d_h);
    return s;
}

bool cpu_pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int index, cpu_md *out)
{
    const_dnnl_memory_desc_t h = dnnl_primitive_desc_query_md(pd, what, index);
    return h != NULL && cpu_md_from(h, out) == dnnl_success;
}

#else

bool cpu_pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int index, cpu_md *out)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what, index);
    if (md == NULL)
        return false;
    *out = *md;
    return true;
}

#endif
