/* The oneDNN version layer (dnnl_version.h): memory descriptors as values
 * over oneDNN 2.x's structs or 3.x's handles. */
#include "plugins/cpu/dnnl_version.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- ISAs and statuses (the enumerations differ between versions) ---- */

static const struct {
    dnnl_cpu_isa_t isa;
    const char *name;
    bool bf16, vnni;
} isas[] = {
    {dnnl_cpu_isa_sse41, "sse41", false, false},
    {dnnl_cpu_isa_avx, "avx", false, false},
    {dnnl_cpu_isa_avx2, "avx2", false, false},
    {dnnl_cpu_isa_avx2_vnni, "avx2_vnni", false, true},
    {dnnl_cpu_isa_avx512_core, "avx512_core", false, false},
    {dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni", false, true},
    {dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16", true, true},
    {dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx", true, true},
#if DNNL_VERSION_MAJOR >= 3
    {dnnl_cpu_isa_avx2_vnni_2, "avx2_vnni_2", false, true},
    {dnnl_cpu_isa_avx512_core_fp16, "avx512_core_fp16", true, true},
    {dnnl_cpu_isa_avx512_core_amx_fp16, "avx512_core_amx_fp16", true, true},
#else
    {dnnl_cpu_isa_avx512_mic, "avx512_mic", false, false},
    {dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops", false, false},
#endif
};

static int isa_index(dnnl_cpu_isa_t isa)
{
    for (int i = 0; i < (int)(sizeof isas / sizeof isas[0]); i++)
        if (isas[i].isa == isa)
            return i;
    return -1;
}

const char *cpu_dnnl_isa_name(dnnl_cpu_isa_t isa)
{
    int i = isa_index(isa);
    return i >= 0 ? isas[i].name : "any";
}

bool cpu_dnnl_isa_avx512(dnnl_cpu_isa_t isa)
{
    return strncmp(cpu_dnnl_isa_name(isa), "avx512_core", strlen("avx512_core")) == 0;
}

bool cpu_dnnl_isa_bf16(dnnl_cpu_isa_t isa)
{
    int i = isa_index(isa);
    return i >= 0 && isas[i].bf16;
}

bool cpu_dnnl_isa_vnni(dnnl_cpu_isa_t isa)
{
    int i = isa_index(isa);
    return i >= 0 && isas[i].vnni;
}

bool cpu_dnnl_convs_pick_channels_last(void)
{
    return DNNL_VERSION_MAJOR >= 3;
}

const char *cpu_dnnl_status_why(dnnl_status_t s)
{
#if DNNL_VERSION_MAJOR >= 3
    const dnnl_status_t ends = dnnl_last_impl_reached;
#else
    const dnnl_status_t ends = dnnl_iterator_ends;
#endif
    return s == dnnl_unimplemented       ? "no implementation for these shapes and types"
           : s == dnnl_out_of_memory     ? "oneDNN reported out of memory"
           : s == dnnl_invalid_arguments ? "invalid arguments"
           : s == ends                   ? "iterator ends"
           : s == dnnl_runtime_error     ? "runtime error"
           : s == dnnl_not_required      ? "not required"
                                         : "oneDNN error";
}

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

cpu_md cpu_md_stored(const cpu_md *md)
{
    cpu_md v = *md;
    v.extra = md->extra != 0 ? -1 : 0;
    return v;
}

bool cpu_md_portable(const cpu_md *md)
{
    return md->extra == 0 || md->extra == -1;
}

bool cpu_md_stored_size_ok(const cpu_md *stored, size_t bytes)
{
    if (stored->extra != -1)
        return cpu_md_get_size(stored) == bytes;
    cpu_md fields = *stored;
    fields.extra = 0;
    size_t n = cpu_md_get_size(&fields);
    return n > 0 && bytes > n;
}

int cpu_md_equal_stored(const cpu_md *stored, const cpu_md *md)
{
    if (stored->extra != -1)
        return cpu_md_equal(stored, md);
    if (md->extra <= 0)
        return 0;
    cpu_md a = *stored, b = *md;
    a.extra = b.extra = 0;
    return cpu_md_equal(&a, &b);
}

int cpu_md_equal(const cpu_md *a, const cpu_md *b)
{
    if (a->extra != b->extra)
        return 0;
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

/* Descriptors whose value says less than they do (cpu_md.extra), kept
 * (one copy of each) for the process's life: a handful, int8 weights. */
#define EXTRAS 256
static dnnl_memory_desc_t extras[EXTRAS];
static int n_extras;
static pthread_mutex_t extra_lock = PTHREAD_MUTEX_INITIALIZER;

static int extra_keep(const_dnnl_memory_desc_t h)
{
    int id = 0;
    pthread_mutex_lock(&extra_lock);
    for (int i = 0; i < n_extras && id == 0; i++)
        if (dnnl_memory_desc_equal(extras[i], h))
            id = i + 1;
    if (id == 0 && n_extras < EXTRAS &&
        dnnl_memory_desc_clone(&extras[n_extras], h) == dnnl_success)
        id = ++n_extras;
    pthread_mutex_unlock(&extra_lock);
    return id;
}

__attribute__((destructor)) static void extras_free(void)
{
    for (int i = 0; i < n_extras; i++)
        dnnl_memory_desc_destroy(extras[i]);
    n_extras = 0;
}

dnnl_status_t cpu_md_handle(const cpu_md *md, dnnl_memory_desc_t *out)
{
    *out = NULL;
    if (md->extra > 0) {
        pthread_mutex_lock(&extra_lock);
        dnnl_status_t s = md->extra <= n_extras ? dnnl_memory_desc_clone(out, extras[md->extra - 1])
                                                : dnnl_invalid_arguments;
        pthread_mutex_unlock(&extra_lock);
        return s;
    }
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
    if (h == NULL || cpu_md_from(h, out) != dnnl_success)
        return false;
    if (out->format_kind != dnnl_blocked)
        return true;
    /* Made again from its fields, is it the primitive's? Not when it has
     * more (a compensation): then the primitive's own is kept. */
    dnnl_memory_desc_t again = NULL;
    bool same = cpu_md_handle(out, &again) == dnnl_success && dnnl_memory_desc_equal(again, h);
    dnnl_memory_desc_destroy(again);
    if (!same && (out->extra = extra_keep(h)) == 0)
        return false;
    return true;
}

/* ---- operations (3.x: the parameters, kept for cpu_op_pd) ---- */

static void op_init(cpu_op *op, cpu_op_kind kind, dnnl_alg_kind_t alg)
{
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->alg = alg;
}

static void copy_dims(dnnl_dim_t *to, const dnnl_dim_t *from, int n)
{
    if (from != NULL)
        memcpy(to, from, sizeof(dnnl_dim_t) * (size_t)(n > 0 ? n : 0));
}

static dnnl_status_t op_window(cpu_op *op, const cpu_md *src, const cpu_md *wei, const cpu_md *bias,
                               const cpu_md *dst, const dnnl_dims_t strides,
                               const dnnl_dims_t dilates, const dnnl_dims_t pad_l,
                               const dnnl_dims_t pad_r)
{
    int sp = src->ndims - 2;
    op->src = *src;
    if (wei != NULL)
        op->wei = *wei;
    op->has_bias = bias != NULL;
    if (bias != NULL)
        op->bias = *bias;
    op->dst = *dst;
    copy_dims(op->strides, strides, sp);
    copy_dims(op->dilates, dilates, sp);
    copy_dims(op->pad_l, pad_l, sp);
    copy_dims(op->pad_r, pad_r, sp);
    return dnnl_success;
}

dnnl_status_t cpu_op_conv(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *wei,
                          const cpu_md *bias, const cpu_md *dst, const dnnl_dims_t strides,
                          const dnnl_dims_t dilates, const dnnl_dims_t pad_l,
                          const dnnl_dims_t pad_r)
{
    op_init(op, CPU_OP_CONV, alg);
    return op_window(op, src, wei, bias, dst, strides, dilates, pad_l, pad_r);
}

dnnl_status_t cpu_op_deconv(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *wei,
                            const cpu_md *bias, const cpu_md *dst, const dnnl_dims_t strides,
                            const dnnl_dims_t dilates, const dnnl_dims_t pad_l,
                            const dnnl_dims_t pad_r)
{
    op_init(op, CPU_OP_DECONV, alg);
    return op_window(op, src, wei, bias, dst, strides, dilates, pad_l, pad_r);
}

static dnnl_status_t op_product(cpu_op *op, cpu_op_kind kind, const cpu_md *src, const cpu_md *wei,
                                const cpu_md *bias, const cpu_md *dst)
{
    op_init(op, kind, dnnl_alg_kind_undef);
    op->src = *src;
    op->wei = *wei;
    op->has_bias = bias != NULL;
    if (bias != NULL)
        op->bias = *bias;
    op->dst = *dst;
    return dnnl_success;
}

dnnl_status_t cpu_op_inner_product(cpu_op *op, const cpu_md *src, const cpu_md *wei,
                                   const cpu_md *bias, const cpu_md *dst)
{
    return op_product(op, CPU_OP_INNER_PRODUCT, src, wei, bias, dst);
}

dnnl_status_t cpu_op_matmul(cpu_op *op, const cpu_md *src, const cpu_md *wei, const cpu_md *bias,
                            const cpu_md *dst)
{
    return op_product(op, CPU_OP_MATMUL, src, wei, bias, dst);
}

dnnl_status_t cpu_op_binary(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src0, const cpu_md *src1,
                            const cpu_md *dst)
{
    op_init(op, CPU_OP_BINARY, alg);
    op->src = *src0;
    op->src1 = *src1;
    op->dst = *dst;
    return dnnl_success;
}

dnnl_status_t cpu_op_eltwise(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, float alpha,
                             float beta)
{
    op_init(op, CPU_OP_ELTWISE, alg);
    op->src = op->dst = *src;
    op->alpha = alpha;
    op->beta = beta;
    return dnnl_success;
}

dnnl_status_t cpu_op_softmax(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *dst,
                             int axis)
{
    op_init(op, CPU_OP_SOFTMAX, alg);
    op->src = *src;
    op->dst = *dst;
    op->axis = axis;
    return dnnl_success;
}

dnnl_status_t cpu_op_pooling(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *dst,
                             const dnnl_dims_t strides, const dnnl_dims_t kernel,
                             const dnnl_dims_t dilation, const dnnl_dims_t pad_l,
                             const dnnl_dims_t pad_r)
{
    op_init(op, CPU_OP_POOLING, alg);
    copy_dims(op->kernel, kernel, src->ndims - 2);
    return op_window(op, src, NULL, NULL, dst, strides, dilation, pad_l, pad_r);
}

dnnl_status_t cpu_op_lrn(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, dnnl_dim_t local_size,
                         float alpha, float beta, float k)
{
    op_init(op, CPU_OP_LRN, alg);
    op->src = op->dst = *src;
    op->size = local_size;
    op->alpha = alpha;
    op->beta = beta;
    op->k = k;
    return dnnl_success;
}

/* Batch and layer normalisation: the same fields, another primitive. */
static dnnl_status_t op_norm(cpu_op *op, cpu_op_kind kind, const cpu_md *src, float eps,
                             unsigned flags)
{
    op_init(op, kind, dnnl_alg_kind_undef);
    op->src = op->dst = *src;
    op->eps = eps;
    op->flags = flags;
    return dnnl_success;
}

dnnl_status_t cpu_op_batch_norm(cpu_op *op, const cpu_md *src, float eps, unsigned flags)
{
    return op_norm(op, CPU_OP_BATCH_NORM, src, eps, flags);
}

dnnl_status_t cpu_op_layer_norm(cpu_op *op, const cpu_md *src, float eps, unsigned flags)
{
    return op_norm(op, CPU_OP_LAYER_NORM, src, eps, flags);
}

dnnl_status_t cpu_op_shuffle(cpu_op *op, const cpu_md *src, int axis, dnnl_dim_t group_size)
{
    op_init(op, CPU_OP_SHUFFLE, dnnl_alg_kind_undef);
    op->src = op->dst = *src;
    op->axis = axis;
    op->size = group_size;
    return dnnl_success;
}

dnnl_status_t cpu_op_resampling(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src,
                                const cpu_md *dst)
{
    op_init(op, CPU_OP_RESAMPLING, alg);
    op->src = *src;
    op->dst = *dst;
    return dnnl_success;
}

dnnl_status_t cpu_op_reduction(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src,
                               const cpu_md *dst, float p, float eps)
{
    op_init(op, CPU_OP_REDUCTION, alg);
    op->src = *src;
    op->dst = *dst;
    op->p = p;
    op->eps = eps;
    return dnnl_success;
}

/* The handles of an op's descriptors for one call. */
typedef struct op_handles {
    dnnl_memory_desc_t src, wei, bias, dst, src1;
} op_handles;

static void handles_free(op_handles *h)
{
    dnnl_memory_desc_destroy(h->src);
    dnnl_memory_desc_destroy(h->wei);
    dnnl_memory_desc_destroy(h->bias);
    dnnl_memory_desc_destroy(h->dst);
    dnnl_memory_desc_destroy(h->src1);
}

static dnnl_status_t handles_make(const cpu_op *op, op_handles *h)
{
    memset(h, 0, sizeof *h);
    bool wei = op->kind == CPU_OP_CONV || op->kind == CPU_OP_DECONV ||
               op->kind == CPU_OP_INNER_PRODUCT || op->kind == CPU_OP_MATMUL;
    dnnl_status_t s = cpu_md_handle(&op->src, &h->src);
    if (s == dnnl_success)
        s = cpu_md_handle(&op->dst, &h->dst);
    if (s == dnnl_success && wei)
        s = cpu_md_handle(&op->wei, &h->wei);
    if (s == dnnl_success && wei && op->has_bias)
        s = cpu_md_handle(&op->bias, &h->bias);
    if (s == dnnl_success && op->kind == CPU_OP_BINARY)
        s = cpu_md_handle(&op->src1, &h->src1);
    if (s != dnnl_success)
        handles_free(h);
    return s;
}

dnnl_status_t cpu_op_pd(dnnl_primitive_desc_t *pd, const cpu_op *op,
                        const_dnnl_primitive_attr_t attr, dnnl_engine_t eng)
{
    *pd = NULL;
    op_handles h;
    dnnl_status_t s = handles_make(op, &h);
    if (s != dnnl_success)
        return s;
    const dnnl_prop_kind_t fwd = dnnl_forward_inference;
    switch (op->kind) {
    case CPU_OP_CONV:
        s = dnnl_convolution_forward_primitive_desc_create(pd, eng, fwd, op->alg, h.src, h.wei,
                                                           h.bias, h.dst, op->strides, op->dilates,
                                                           op->pad_l, op->pad_r, attr);
        break;
    case CPU_OP_DECONV:
        s = dnnl_deconvolution_forward_primitive_desc_create(
            pd, eng, fwd, op->alg, h.src, h.wei, h.bias, h.dst, op->strides, op->dilates, op->pad_l,
            op->pad_r, attr);
        break;
    case CPU_OP_INNER_PRODUCT:
        s = dnnl_inner_product_forward_primitive_desc_create(pd, eng, fwd, h.src, h.wei, h.bias,
                                                             h.dst, attr);
        break;
    case CPU_OP_MATMUL:
        s = dnnl_matmul_primitive_desc_create(pd, eng, h.src, h.wei, h.bias, h.dst, attr);
        break;
    case CPU_OP_BINARY:
        s = dnnl_binary_primitive_desc_create(pd, eng, op->alg, h.src, h.src1, h.dst, attr);
        break;
    case CPU_OP_ELTWISE:
        s = dnnl_eltwise_forward_primitive_desc_create(pd, eng, fwd, op->alg, h.src, h.dst,
                                                       op->alpha, op->beta, attr);
        break;
    case CPU_OP_SOFTMAX:
        s = dnnl_softmax_forward_primitive_desc_create(pd, eng, fwd, op->alg, h.src, h.dst,
                                                       op->axis, attr);
        break;
    case CPU_OP_POOLING:
        s = dnnl_pooling_forward_primitive_desc_create(pd, eng, fwd, op->alg, h.src, h.dst,
                                                       op->strides, op->kernel, op->dilates,
                                                       op->pad_l, op->pad_r, attr);
        break;
    case CPU_OP_LRN:
        s = dnnl_lrn_forward_primitive_desc_create(pd, eng, fwd, op->alg, h.src, h.dst, op->size,
                                                   op->alpha, op->beta, op->k, attr);
        break;
    case CPU_OP_BATCH_NORM:
        s = dnnl_batch_normalization_forward_primitive_desc_create(pd, eng, fwd, h.src, h.dst,
                                                                   op->eps, op->flags, attr);
        break;
    case CPU_OP_LAYER_NORM:
        s = dnnl_layer_normalization_forward_primitive_desc_create(pd, eng, fwd, h.src, h.dst, NULL,
                                                                   op->eps, op->flags, attr);
        break;
    case CPU_OP_SHUFFLE:
        s = dnnl_shuffle_forward_primitive_desc_create(pd, eng, fwd, h.src, h.dst, op->axis,
                                                       op->size, attr);
        break;
    case CPU_OP_RESAMPLING:
        s = dnnl_resampling_forward_primitive_desc_create(pd, eng, fwd, op->alg, NULL, h.src, h.dst,
                                                          attr);
        break;
    case CPU_OP_REDUCTION:
        s = dnnl_reduction_primitive_desc_create(pd, eng, op->alg, h.src, h.dst, op->p, op->eps,
                                                 attr);
        break;
    default:
        s = dnnl_invalid_arguments;
    }
    handles_free(&h);
    if (s != dnnl_success)
        *pd = NULL;
    return s;
}

dnnl_primitive_desc_t cpu_op_pd_named(const cpu_op *op, const_dnnl_primitive_attr_t attr,
                                      dnnl_engine_t eng, const char *impl)
{
    dnnl_primitive_desc_t pd = NULL;
    if (cpu_op_pd(&pd, op, attr, eng) != dnnl_success)
        return NULL;
    do {
        const char *name = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) == dnnl_success &&
            name != NULL && strcmp(name, impl) == 0)
            return pd;
    } while (dnnl_primitive_desc_next_impl(pd) == dnnl_success);
    dnnl_primitive_desc_destroy(pd);
    return NULL;
}

/* ---- attributes and post-ops ---- */

dnnl_status_t cpu_post_ops_append_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg, float alpha,
                                          float beta)
{
    return dnnl_post_ops_append_eltwise(po, alg, alpha, beta);
}

dnnl_status_t cpu_post_ops_append_sum(dnnl_post_ops_t po, float scale, int32_t zero_point,
                                      dnnl_data_type_t dt)
{
    return dnnl_post_ops_append_sum(po, scale, zero_point, dt);
}

dnnl_status_t cpu_post_ops_append_binary(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                                         const cpu_md *src1)
{
    dnnl_memory_desc_t h = NULL;
    dnnl_status_t s = cpu_md_handle(src1, &h);
    if (s == dnnl_success)
        s = dnnl_post_ops_append_binary(po, alg, h); /* the post-ops keep a copy */
    dnnl_memory_desc_destroy(h);
    return s;
}

dnnl_status_t cpu_post_ops_get_params_eltwise(const_dnnl_post_ops_t po, int index,
                                              dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    return dnnl_post_ops_get_params_eltwise(po, index, alg, alpha, beta);
}

dnnl_status_t cpu_post_ops_begin_scale(dnnl_post_ops_t *po, float scale)
{
    if (scale == 1.0f)
        return dnnl_success;
    dnnl_status_t s = *po == NULL ? dnnl_post_ops_create(po) : dnnl_success;
    if (s == dnnl_success && dnnl_post_ops_len(*po) != 0)
        return dnnl_invalid_arguments; /* it must come first */
    return s == dnnl_success ? dnnl_post_ops_append_eltwise(*po, dnnl_eltwise_linear, scale, 0.0f)
                             : s;
}

dnnl_status_t cpu_attr_set_scale(dnnl_primitive_attr_t attr, float scale)
{
    (void)attr;
    (void)scale; /* a post-op already (cpu_post_ops_begin_scale) */
    return dnnl_success;
}

dnnl_status_t cpu_quant_product_scales(cpu_quant *q, dnnl_primitive_attr_t attr,
                                       const float *scales, int n, int dst_mask, int wei_mask)
{
    (void)dst_mask;
    dnnl_dims_t d = {n};
    q->scales = malloc(sizeof(float) * (size_t)n);
    if (q->scales == NULL)
        return dnnl_out_of_memory;
    memcpy(q->scales, scales, sizeof(float) * (size_t)n);
    q->n_scales = n;
    q->scale_arg = DNNL_ARG_WEIGHTS;
    dnnl_status_t s = cpu_md_init_by_tag(&q->scales_md, 1, d, dnnl_f32, dnnl_a);
    return s == dnnl_success
               ? dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_WEIGHTS, n > 1 ? wei_mask : 0)
               : s;
}

dnnl_status_t cpu_quant_reorder_scale(cpu_quant *q, dnnl_primitive_attr_t attr, float scale,
                                      bool quantize)
{
    /* dst = (src_scale * (src - src_zp)) / dst_scale + dst_zp */
    dnnl_dims_t d = {1};
    q->scales = malloc(sizeof(float));
    if (q->scales == NULL)
        return dnnl_out_of_memory;
    q->scales[0] = scale;
    q->n_scales = 1;
    q->scale_arg = quantize ? DNNL_ARG_DST : DNNL_ARG_SRC;
    dnnl_status_t s = cpu_md_init_by_tag(&q->scales_md, 1, d, dnnl_f32, dnnl_a);
    return s == dnnl_success ? dnnl_primitive_attr_set_scales_mask(attr, q->scale_arg, 0) : s;
}

dnnl_status_t cpu_quant_zero_point(cpu_quant *q, dnnl_primitive_attr_t attr, int arg, int32_t zp,
                                   bool runtime)
{
    dnnl_dims_t d = {1};
    q->zp_arg = arg;
    q->zp = zp;
    q->zp_runtime = runtime;
    dnnl_status_t s = cpu_md_init_by_tag(&q->zp_md, 1, d, dnnl_s32, dnnl_a);
    return s == dnnl_success ? dnnl_primitive_attr_set_zero_points_mask(attr, arg, 0) : s;
}

bool cpu_quant_bias_before_scales(void)
{
    return false;
}

int cpu_quant_args(const cpu_quant *q, int32_t *zp, cpu_arg *a)
{
    int n = 0;
    if (q->n_scales > 0)
        a[n++] = (cpu_arg){DNNL_ARG_ATTR_SCALES | q->scale_arg, &q->scales_md, q->scales};
    if (q->zp_arg != 0)
        a[n++] = (cpu_arg){DNNL_ARG_ATTR_ZERO_POINTS | q->zp_arg, &q->zp_md,
                           q->zp_runtime ? zp : (void *)&q->zp};
    return n;
}

#else

cpu_md cpu_md_stored(const cpu_md *md)
{
    return *md;
}

bool cpu_md_portable(const cpu_md *md)
{
    (void)md;
    return true;
}

int cpu_md_equal_stored(const cpu_md *stored, const cpu_md *md)
{
    return cpu_md_equal(stored, md);
}

bool cpu_md_stored_size_ok(const cpu_md *stored, size_t bytes)
{
    return cpu_md_get_size(stored) == bytes;
}

bool cpu_pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what, int index, cpu_md *out)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what, index);
    if (md == NULL)
        return false;
    *out = *md;
    return true;
}

/* ---- operations (2.x: the op descriptor) ---- */

dnnl_status_t cpu_op_conv(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *wei,
                          const cpu_md *bias, const cpu_md *dst, const dnnl_dims_t strides,
                          const dnnl_dims_t dilates, const dnnl_dims_t pad_l,
                          const dnnl_dims_t pad_r)
{
    op->kind = CPU_OP_CONV;
    return dnnl_dilated_convolution_forward_desc_init(&op->d.conv, dnnl_forward_inference, alg, src,
                                                      wei, bias, dst, strides, dilates, pad_l,
                                                      pad_r);
}

dnnl_status_t cpu_op_deconv(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *wei,
                            const cpu_md *bias, const cpu_md *dst, const dnnl_dims_t strides,
                            const dnnl_dims_t dilates, const dnnl_dims_t pad_l,
                            const dnnl_dims_t pad_r)
{
    op->kind = CPU_OP_DECONV;
    return dnnl_dilated_deconvolution_forward_desc_init(&op->d.deconv, dnnl_forward_inference, alg,
                                                        src, wei, bias, dst, strides, dilates,
                                                        pad_l, pad_r);
}

dnnl_status_t cpu_op_inner_product(cpu_op *op, const cpu_md *src, const cpu_md *wei,
                                   const cpu_md *bias, const cpu_md *dst)
{
    op->kind = CPU_OP_INNER_PRODUCT;
    return dnnl_inner_product_forward_desc_init(&op->d.ip, dnnl_forward_inference, src, wei, bias,
                                                dst);
}

dnnl_status_t cpu_op_matmul(cpu_op *op, const cpu_md *src, const cpu_md *wei, const cpu_md *bias,
                            const cpu_md *dst)
{
    op->kind = CPU_OP_MATMUL;
    return dnnl_matmul_desc_init(&op->d.matmul, src, wei, bias, dst);
}

dnnl_status_t cpu_op_binary(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src0, const cpu_md *src1,
                            const cpu_md *dst)
{
    op->kind = CPU_OP_BINARY;
    return dnnl_binary_desc_init(&op->d.binary, alg, src0, src1, dst);
}

dnnl_status_t cpu_op_eltwise(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, float alpha,
                             float beta)
{
    op->kind = CPU_OP_ELTWISE;
    return dnnl_eltwise_forward_desc_init(&op->d.eltwise, dnnl_forward_inference, alg, src, alpha,
                                          beta);
}

dnnl_status_t cpu_op_softmax(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *dst,
                             int axis)
{
    op->kind = CPU_OP_SOFTMAX;
    return dnnl_softmax_v2_forward_desc_init(&op->d.softmax, dnnl_forward_inference, alg, src, dst,
                                             axis);
}

dnnl_status_t cpu_op_pooling(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, const cpu_md *dst,
                             const dnnl_dims_t strides, const dnnl_dims_t kernel,
                             const dnnl_dims_t dilation, const dnnl_dims_t pad_l,
                             const dnnl_dims_t pad_r)
{
    op->kind = CPU_OP_POOLING;
    return dnnl_pooling_v2_forward_desc_init(&op->d.pooling, dnnl_forward_inference, alg, src, dst,
                                             strides, kernel, dilation, pad_l, pad_r);
}

dnnl_status_t cpu_op_lrn(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src, dnnl_dim_t local_size,
                         float alpha, float beta, float k)
{
    op->kind = CPU_OP_LRN;
    return dnnl_lrn_forward_desc_init(&op->d.lrn, dnnl_forward_inference, alg, src, local_size,
                                      alpha, beta, k);
}

dnnl_status_t cpu_op_batch_norm(cpu_op *op, const cpu_md *src, float eps, unsigned flags)
{
    op->kind = CPU_OP_BATCH_NORM;
    return dnnl_batch_normalization_forward_desc_init(&op->d.bnorm, dnnl_forward_inference, src,
                                                      eps, flags);
}

dnnl_status_t cpu_op_layer_norm(cpu_op *op, const cpu_md *src, float eps, unsigned flags)
{
    op->kind = CPU_OP_LAYER_NORM;
    return dnnl_layer_normalization_forward_desc_init(&op->d.lnorm, dnnl_forward_inference, src,
                                                      NULL, eps, flags);
}

dnnl_status_t cpu_op_shuffle(cpu_op *op, const cpu_md *src, int axis, dnnl_dim_t group_size)
{
    op->kind = CPU_OP_SHUFFLE;
    return dnnl_shuffle_forward_desc_init(&op->d.shuffle, dnnl_forward_inference, src, axis,
                                          group_size);
}

dnnl_status_t cpu_op_resampling(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src,
                                const cpu_md *dst)
{
    op->kind = CPU_OP_RESAMPLING;
    return dnnl_resampling_forward_desc_init(&op->d.resampling, dnnl_forward_inference, alg, NULL,
                                             src, dst);
}

dnnl_status_t cpu_op_reduction(cpu_op *op, dnnl_alg_kind_t alg, const cpu_md *src,
                               const cpu_md *dst, float p, float eps)
{
    op->kind = CPU_OP_REDUCTION;
    return dnnl_reduction_desc_init(&op->d.reduction, alg, src, dst, p, eps);
}

dnnl_status_t cpu_op_pd(dnnl_primitive_desc_t *pd, const cpu_op *op,
                        const_dnnl_primitive_attr_t attr, dnnl_engine_t eng)
{
    dnnl_status_t s = dnnl_primitive_desc_create(pd, &op->d, attr, eng, NULL);
    if (s != dnnl_success)
        *pd = NULL;
    return s;
}

dnnl_primitive_desc_t cpu_op_pd_named(const cpu_op *op, const_dnnl_primitive_attr_t attr,
                                      dnnl_engine_t eng, const char *impl)
{
    dnnl_primitive_desc_iterator_t it;
    if (dnnl_primitive_desc_iterator_create(&it, &op->d, attr, eng, NULL) != dnnl_success)
        return NULL;
    dnnl_primitive_desc_t found = NULL;
    do {
        dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
        const char *name = NULL;
        if (c != NULL &&
            dnnl_primitive_desc_query(c, dnnl_query_impl_info_str, 0, &name) == dnnl_success &&
            name != NULL && strcmp(name, impl) == 0) {
            found = c;
            break;
        }
        if (c != NULL)
            dnnl_primitive_desc_destroy(c);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    return found;
}

/* ---- attributes and post-ops ---- */

dnnl_status_t cpu_post_ops_append_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg, float alpha,
                                          float beta)
{
    return dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta);
}

dnnl_status_t cpu_post_ops_append_sum(dnnl_post_ops_t po, float scale, int32_t zero_point,
                                      dnnl_data_type_t dt)
{
    return dnnl_post_ops_append_sum_v3(po, scale, zero_point, dt);
}

dnnl_status_t cpu_post_ops_append_binary(dnnl_post_ops_t po, dnnl_alg_kind_t alg,
                                         const cpu_md *src1)
{
    return dnnl_post_ops_append_binary(po, alg, src1);
}

dnnl_status_t cpu_post_ops_get_params_eltwise(const_dnnl_post_ops_t po, int index,
                                              dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    float scale;
    return dnnl_post_ops_get_params_eltwise(po, index, &scale, alg, alpha, beta);
}

dnnl_status_t cpu_post_ops_begin_scale(dnnl_post_ops_t *po, float scale)
{
    (void)po;
    (void)scale; /* an output scale (cpu_attr_set_scale) */
    return dnnl_success;
}

dnnl_status_t cpu_attr_set_scale(dnnl_primitive_attr_t attr, float scale)
{
    return scale == 1.0f ? dnnl_success : dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale);
}

dnnl_status_t cpu_quant_product_scales(cpu_quant *q, dnnl_primitive_attr_t attr,
                                       const float *scales, int n, int dst_mask, int wei_mask)
{
    (void)q, (void)wei_mask;
    return dnnl_primitive_attr_set_output_scales(attr, n, n > 1 ? dst_mask : 0, scales);
}

dnnl_status_t cpu_quant_reorder_scale(cpu_quant *q, dnnl_primitive_attr_t attr, float scale,
                                      bool quantize)
{
    (void)q;
    float s = quantize ? 1.0f / scale : scale;
    return dnnl_primitive_attr_set_output_scales(attr, 1, 0, &s);
}

dnnl_status_t cpu_quant_zero_point(cpu_quant *q, dnnl_primitive_attr_t attr, int arg, int32_t zp,
                                   bool runtime)
{
    dnnl_dims_t d = {1};
    q->zp_arg = runtime ? arg : 0; /* a constant one is the attribute's */
    q->zp_runtime = runtime;
    dnnl_status_t s =
        runtime ? cpu_md_init_by_tag(&q->zp_md, 1, d, dnnl_s32, dnnl_a) : dnnl_success;
    int32_t value = runtime ? DNNL_RUNTIME_S32_VAL : zp;
    return s == dnnl_success ? dnnl_primitive_attr_set_zero_points(attr, arg, 1, 0, &value) : s;
}

bool cpu_quant_bias_before_scales(void)
{
    return true;
}

int cpu_quant_args(const cpu_quant *q, int32_t *zp, cpu_arg *a)
{
    if (q->zp_arg == 0)
        return 0;
    a[0] = (cpu_arg){DNNL_ARG_ATTR_ZERO_POINTS | q->zp_arg, &q->zp_md, zp};
    return 1;
}

#endif

void cpu_quant_free(cpu_quant *q)
{
    free(q->scales);
    q->scales = NULL;
    q->n_scales = 0;
}
