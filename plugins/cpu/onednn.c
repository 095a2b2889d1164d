/* oneDNN underneath the CPU kernels: the engine, a stream per thread,
 * layouts as memory descriptors with reorders as their conversions,
 * primitives and their execution. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "plugins/api/plan.h"
#include "plugins/cpu/blob.h"
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/team.h"
#include "plugins/cpu/wait.h"
#include "sched/sched.h"

/* ---- config ---- */

static _Thread_local cpu_config tls_config = {.threads = 1};

void cpu_config_set(const cpu_config *config)
{
    tls_config = *config;
}

const cpu_config *cpu_config_get(void)
{
    return &tls_config;
}

/* ---- engine and streams ---- */

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_status_t engine_status;
static pthread_key_t stream_key;

static void stream_free(void *s)
{
    dnnl_stream_destroy(s);
}

static void engine_init(void)
{
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    if (engine_status == dnnl_success && pthread_key_create(&stream_key, stream_free) != 0)
        engine_status = dnnl_out_of_memory;
}

rn_status cpu_engine(dnnl_engine_t *out)
{
    pthread_once(&engine_once, engine_init);
    if (engine_status != dnnl_success)
        return rn_set_error(RN_UNSUPPORTED, "CPU: oneDNN has no CPU engine (status %d)",
                            (int)engine_status);
    *out = engine;
    return RN_OK;
}

rn_status cpu_stream(dnnl_stream_t *out)
{
    dnnl_engine_t eng = NULL;
    rn_status st = cpu_engine(&eng);
    if (st != RN_OK)
        return st;
    dnnl_stream_t s = pthread_getspecific(stream_key);
    if (s == NULL) {
        if (dnnl_stream_create(&s, eng, dnnl_stream_default_flags) != dnnl_success)
            return rn_set_error(RN_OUT_OF_MEMORY, "CPU: cannot create a oneDNN stream");
        pthread_setspecific(stream_key, s);
    }
    *out = s;
    return RN_OK;
}

const char *cpu_isa_name(void)
{
    return cpu_dnnl_isa_name(dnnl_get_effective_cpu_isa());
}

bool cpu_has_avx512(void)
{
    return cpu_dnnl_isa_avx512(dnnl_get_effective_cpu_isa());
}

bool cpu_has_bf16(void)
{
    return cpu_dnnl_isa_bf16(dnnl_get_effective_cpu_isa());
}

bool cpu_has_vnni(void)
{
    return cpu_dnnl_isa_vnni(dnnl_get_effective_cpu_isa());
}

/* oneDNN's statuses as runnel's: a primitive oneDNN has no implementation
 * for is UNSUPPORTED; every other failure is the library's (DEVICE_ERROR),
 * "out of memory" included: oneDNN returns it for descriptors it cannot
 * lay out as much as for a failed allocation, and runnel's own allocations
 * report RN_OUT_OF_MEMORY themselves. Both let the plan fall back to the
 * next kernel (plugin_kernel_may_fall_back). */
rn_status cpu_error(const rn_node *node, const char *what, dnnl_status_t s)
{
    const char *why = cpu_dnnl_status_why(s);
    rn_status st = s == dnnl_unimplemented ? RN_UNSUPPORTED : RN_DEVICE_ERROR;
    if (node != NULL)
        return rn_set_error(st, "CPU: node '%s' (%s): %s: %s (oneDNN status %d)",
                            rn_node_name(node), rn_node_op_type(node), what, why, (int)s);
    return rn_set_error(st, "CPU: %s: %s (oneDNN status %d)", what, why, (int)s);
}

/* Per thread: the largest team whose threads have the denormal mode
 * tls_team_denormals (the thread's own MXCSR is set at every entry).
 * libgomp keeps a master's pool between teams: a primitive on one thread
 * forks none, and a smaller team reuses the pool's first threads, so going
 * 2 -> 1 -> 2 threads (a small primitive between two large ones, team.c)
 * needs no setup region again; a larger team, or a pool released
 * (cpu_team_pool_released), does. */
static _Thread_local int tls_threads = 1;
static _Thread_local int tls_team_denormals = -1;

void cpu_team_pool_released(void)
{
    tls_threads = 1;
    tls_team_denormals = -1;
}

static void set_denormals(bool on)
{
    unsigned csr = _mm_getcsr();
    /* FTZ (bit 15) and DAZ (bit 6). */
    csr = on ? csr | 0x8040u : csr & ~0x8040u;
    _mm_setcsr(csr);
}

/* On each thread of a new team: the denormal mode, and on a stream
 * worker's team a name ("rn-s0t1": stream 0, team thread 1) for perf,
 * top -H and /proc/PID/task/TID/comm; a user's thread's team keeps its. */
static void team_thread_setup(bool denormals, int stream)
{
    set_denormals(denormals);
    int t = omp_get_thread_num();
    if (stream >= 0 && t > 0) {
        char name[16];
        snprintf(name, sizeof name, "rn-s%dt%d", stream % 1000, t % 1000);
        (void)pthread_setname_np(pthread_self(), name);
    }
}

cpu_thread_state cpu_enter(int threads, bool denormals)
{
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer cannot see libgomp's synchronisation: no teams. */
    threads = 1;
#endif
    if (threads < 1)
        threads = 1;
    cpu_thread_state saved = {.saved = sched_current_stream() < 0};
    if (saved.saved) {
        saved.csr = _mm_getcsr();
        saved.max_threads = omp_get_max_threads();
    }
    if (omp_in_parallel()) {
        /* Inside a branch fork (team.c): the primitive runs on this thread
         * alone (oneDNN does not nest teams); the team's state, kept for
         * the runs outside the fork, is left as it is. */
        set_denormals(denormals);
        return saved;
    }
    if (threads > tls_threads) {
        tls_threads = threads;
        tls_team_denormals = -1; /* new team threads: set their mode too */
    }
    if (omp_get_max_threads() != threads)
        omp_set_num_threads(threads);
    if (threads > 1)
        cpu_wait_check();
    if (threads > 1 && (int)denormals != tls_team_denormals) {
        int stream = sched_current_stream();
#pragma omp parallel num_threads(threads)
        team_thread_setup(denormals, stream);
        tls_team_denormals = denormals;
    }
    set_denormals(denormals);
    return saved;
}

void cpu_leave(cpu_thread_state saved)
{
    cpu_wait_done();
    if (!saved.saved)
        return;
    _mm_setcsr(saved.csr);
    if (omp_get_max_threads() != saved.max_threads)
        omp_set_num_threads(saved.max_threads);
}

/* ---- layouts ---- */

dnnl_data_type_t cpu_dt(rn_element_type type)
{
    switch (type) {
    case RN_F32:
        return dnnl_f32;
    case RN_BF16:
        return dnnl_bf16;
    case RN_F16:
        return dnnl_f16;
    case RN_I32:
        return dnnl_s32;
    case RN_I8:
        return dnnl_s8;
    case RN_U8:
        return dnnl_u8;
    default:
        return dnnl_data_type_undef;
    }
}

rn_status cpu_plain_md(rn_element_type type, int rank, const int64_t *dims, cpu_md *md)
{
    dnnl_data_type_t dt = cpu_dt(type);
    if (dt == dnnl_data_type_undef)
        return rn_set_error(RN_UNSUPPORTED, "CPU: element type %s has no oneDNN type",
                            rn_element_type_name(type));
    dnnl_dims_t d, strides;
    int r = rank > 0 ? rank : 1;
    for (int i = 0; i < r; i++)
        d[i] = rank > 0 ? dims[i] : 1;
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        strides[i] = s;
        s *= d[i] > 0 ? d[i] : 1;
    }
    if (cpu_md_init_by_strides(md, r, d, dt, strides) != dnnl_success)
        return rn_set_error(RN_UNSUPPORTED, "CPU: cannot describe a rank-%d tensor", rank);
    return RN_OK;
}

/* A name for a descriptor's format in oneDNN's letters: dims a, b, c, ...
 * outermost first, blocked dims in capitals, then the inner blocks
 * ("aBcd16b" is nChw16c); prefixed by the element type when not f32. */
static void format_name(const cpu_md *md, char *buf, size_t size)
{
    if (md->format_kind != dnnl_blocked) { /* a kernel's own (Winograd weights) */
#if DNNL_VERSION_MAJOR < 3
        bool wino = md->format_kind == dnnl_format_kind_wino;
#else
        bool wino = false;
#endif
        snprintf(buf, size, "%s", wino ? "wino" : "opaque");
        return;
    }
    const cpu_blocking *b = &md->format_desc.blocking;
    int n = md->ndims, order[DNNL_MAX_NDIMS];
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 0; i < n; i++) /* outer dims by decreasing stride */
        for (int j = i + 1; j < n; j++)
            if (b->strides[order[j]] > b->strides[order[i]])
                order[i] ^= order[j], order[j] ^= order[i], order[i] ^= order[j];
    bool blocked[DNNL_MAX_NDIMS] = {false};
    for (int k = 0; k < b->inner_nblks; k++)
        blocked[b->inner_idxs[k]] = true;
    size_t used = 0;
    if (md->data_type != dnnl_f32)
        used += (size_t)snprintf(buf, size, "%s:",
                                 md->data_type == dnnl_bf16  ? "bf16"
                                 : md->data_type == dnnl_f16 ? "f16"
                                 : md->data_type == dnnl_s8  ? "s8"
                                 : md->data_type == dnnl_u8  ? "u8"
                                 : md->data_type == dnnl_s32 ? "s32"
                                                             : "dt");
    for (int i = 0; i < n && used + 1 < size; i++)
        buf[used++] = (char)((blocked[order[i]] ? 'A' : 'a') + order[i]);
    for (int k = 0; k < b->inner_nblks && used + 8 < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%lld%c", (long long)b->inner_blks[k],
                                 'a' + (int)b->inner_idxs[k]);
    buf[used < size ? used : size - 1] = '\0';
}

static bool layout_equal(const rn_layout *a, const rn_layout *b)
{
    const cpu_layout *x = (const cpu_layout *)a, *y = (const cpu_layout *)b;
    return cpu_md_equal(&x->md, &y->md) != 0 && x->plain.ndims == y->plain.ndims &&
           (x->plain.ndims == 0 || cpu_md_equal(&x->plain, &y->plain) != 0);
}

void cpu_layout_init(cpu_layout *l, const cpu_md *md, rn_element_type type, const rn_layout **out)
{
    cpu_md plain;
    if (md->format_kind == dnnl_blocked &&
        cpu_plain_md(type, md->ndims, md->dims, &plain) == RN_OK && cpu_md_equal(md, &plain)) {
        *out = NULL;
        return;
    }
    rn_clear_error();
    memset(l, 0, sizeof *l);
    l->md = *md;
    l->threads = cpu_config_get()->threads;
    l->denormals = cpu_config_get()->denormals;
    format_name(md, l->name, sizeof l->name);
    l->base.ops = &cpu_layout_ops;
    l->base.name = l->name;
    l->base.nbytes = cpu_md_get_size(md);
    l->base.desc = &l->md;
    *out = &l->base;
}

/* Whether part's elements sit in whole's, at whole's sub-memory starting
 * `start` along axis, with the same strides (dims of size 1 aside) and
 * blocks: then the part's dense bytes are that region of whole's. */
static bool part_of(const cpu_md *whole, const cpu_md *part, int axis, int64_t start,
                    dnnl_dim_t *offset0)
{
    if (part->format_kind != dnnl_blocked || part->ndims != whole->ndims ||
        part->data_type != whole->data_type || part->offset0 != 0)
        return false;
    dnnl_dims_t offsets = {0};
    offsets[axis] = start;
    for (int d = 0; d < part->ndims; d++)
        if (part->padded_dims[d] != part->dims[d])
            return false;
    cpu_md sub;
    if (cpu_md_init_submemory(&sub, whole, part->dims, offsets) != dnnl_success)
        return false;
    const cpu_blocking *a = &sub.format_desc.blocking, *b = &part->format_desc.blocking;
    if (a->inner_nblks != b->inner_nblks)
        return false;
    for (int i = 0; i < a->inner_nblks; i++)
        if (a->inner_blks[i] != b->inner_blks[i] || a->inner_idxs[i] != b->inner_idxs[i])
            return false;
    for (int d = 0; d < part->ndims; d++)
        if (part->dims[d] > 1 && a->strides[d] != b->strides[d])
            return false;
    *offset0 = sub.offset0;
    return true;
}

bool cpu_concat_dense(const rn_layout *whole, const rn_layout *const *parts, int n, int axis)
{
    if (whole == NULL || whole->ops != &cpu_layout_ops)
        return false;
    const cpu_layout *w = (const cpu_layout *)whole;
    const cpu_md *wm = &w->md;
    if (w->plain.ndims != 0 || wm->format_kind != dnnl_blocked || wm->offset0 != 0 || axis < 0 ||
        axis >= wm->ndims)
        return false;
    for (int d = 0; d < wm->ndims; d++)
        if (wm->padded_dims[d] != wm->dims[d])
            return false;
    size_t elem = dnnl_data_type_size(wm->data_type);
    size_t bytes = 0;
    int64_t start = 0;
    for (int k = 0; k < n; k++) {
        if (parts[k] == NULL || parts[k]->ops != &cpu_layout_ops)
            return false;
        const cpu_layout *p = (const cpu_layout *)parts[k];
        dnnl_dim_t offset0 = 0;
        if (p->plain.ndims != 0 || !part_of(wm, &p->md, axis, start, &offset0) ||
            (size_t)offset0 * elem != bytes)
            return false;
        bytes += cpu_md_get_size(&p->md);
        start += p->md.dims[axis];
    }
    return start == wm->dims[axis] && bytes == cpu_md_get_size(wm);
}

rn_status cpu_any_md(int rank, const int64_t *dims, dnnl_data_type_t dt, cpu_md *md)
{
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    if (cpu_md_init_by_tag(md, rank, d, dt, dnnl_format_tag_any) != dnnl_success)
        return rn_set_error(RN_UNSUPPORTED, "CPU: cannot describe a rank-%d tensor", rank);
    return RN_OK;
}

void cpu_layout_init_plain(cpu_layout *l, const cpu_md *md, const cpu_md *plain,
                           const rn_layout **out)
{
    memset(l, 0, sizeof *l);
    l->md = *md;
    l->threads = cpu_config_get()->threads;
    l->denormals = cpu_config_get()->denormals;
    l->plain = *plain;
    format_name(md, l->name, sizeof l->name);
    size_t n = strlen(l->name);
    snprintf(l->name + n, sizeof l->name - n, "/from-permuted");
    l->base.ops = &cpu_layout_ops;
    l->base.name = l->name;
    l->base.nbytes = cpu_md_get_size(md);
    l->base.desc = &l->md;
    *out = &l->base;
}

bool cpu_layout_plain_of(const rn_layout *l, rn_element_type type, int rank, const int64_t *dims)
{
    if (l == NULL || l->ops != &cpu_layout_ops || rank < 1)
        return false;
    const cpu_layout *cl = (const cpu_layout *)l;
    cpu_md plain;
    if (cl->plain.ndims != 0 || cpu_plain_md(type, rank, dims, &plain) != RN_OK) {
        rn_clear_error();
        return false;
    }
    return cpu_md_equal(&cl->md, &plain) != 0;
}

rn_status cpu_input_md(const rn_layout *l, rn_element_type type, int rank, const int64_t *dims,
                       cpu_md *md)
{
    if (l != NULL && l->ops == &cpu_layout_ops) {
        *md = *(const cpu_md *)l->desc;
        return RN_OK;
    }
    return cpu_plain_md(type, rank, dims, md);
}

/* The descriptor of a kernel tensor: its layout's, or plain. A plain
 * tensor converted to or from a layout of another rank (grouped
 * convolution weights [M, C/g, k...] as [g, M/g, C/g, k...], a matrix as a
 * batch of one) is described with the layout's dims: the same bytes. */
static rn_status tensor_md(const rn_kernel_tensor *t, const rn_kernel_tensor *other, cpu_md *md)
{
    if (t->layout == NULL && other->layout != NULL && other->layout->ops == &cpu_layout_ops) {
        const cpu_md *o = other->layout->desc;
        const cpu_layout *ol = (const cpu_layout *)other->layout;
        if (ol->plain.ndims > 0) {
            *md = ol->plain;
            return RN_OK;
        }
        if (o->ndims != t->rank) {
            int64_t dims[DNNL_MAX_NDIMS];
            for (int i = 0; i < o->ndims; i++)
                dims[i] = o->dims[i];
            return cpu_plain_md(t->type, o->ndims, dims, md);
        }
    }
    return cpu_input_md(t->layout, t->type, t->rank, t->dims, md);
}

/* Reorders are created per conversion and cached by (src, dst) descriptor
 * and team size: a conversion node runs the same one every request. oneDNN
 * fixes a reorder's thread count when it creates it (as a convolution's,
 * cpu_team_begin), so one is created with the OpenMP maximum set to the team
 * it will run on: a compile-time conversion's one thread must not reuse a
 * reorder of the run's team, nor a single-core stream's a reorder made under
 * the compiling thread's maximum (every core). */
#define REORDER_CACHE 64
typedef struct reorder_entry {
    cpu_md src, dst;
    int threads;
    dnnl_primitive_t prim;
    size_t scratch;
    uint64_t id; /* cpu_memory's key */
} reorder_entry;
static reorder_entry reorders[REORDER_CACHE];
static int n_reorders;
static pthread_mutex_t reorder_lock = PTHREAD_MUTEX_INITIALIZER;

static rn_status reorder_get(const cpu_md *src, const cpu_md *dst, int threads,
                             dnnl_primitive_t *prim, size_t *scratch, uint64_t *id, bool *owned)
{
    dnnl_engine_t eng = NULL;
    rn_status st = cpu_engine(&eng);
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&reorder_lock);
    for (int i = 0; i < n_reorders; i++)
        if (reorders[i].threads == threads && cpu_md_equal(&reorders[i].src, src) &&
            cpu_md_equal(&reorders[i].dst, dst)) {
            *prim = reorders[i].prim;
            *scratch = reorders[i].scratch;
            *id = reorders[i].id;
            *owned = false;
            pthread_mutex_unlock(&reorder_lock);
            return RN_OK;
        }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    int previous = omp_get_max_threads();
    omp_set_num_threads(threads);
    if (s == dnnl_success)
        s = cpu_reorder_pd(&pd, src, eng, dst, attr);
    if (s == dnnl_success)
        s = dnnl_primitive_create(prim, pd);
    omp_set_num_threads(previous);
    if (s == dnnl_success) {
        cpu_md smd;
        *scratch = cpu_pd_md(pd, dnnl_query_scratchpad_md, 0, &smd) ? cpu_md_get_size(&smd) : 0;
        *owned = n_reorders == REORDER_CACHE;
        *id = *owned ? 0 : cpu_memory_id();
        if (!*owned)
            reorders[n_reorders++] = (reorder_entry){*src, *dst, threads, *prim, *scratch, *id};
    }
    pthread_mutex_unlock(&reorder_lock);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return cpu_error(NULL, "creating a reorder", s);
    return RN_OK;
}

/* Frees the cached reorders when the library is unloaded. */
__attribute__((destructor)) static void reorders_free(void)
{
    for (int i = 0; i < n_reorders; i++)
        dnnl_primitive_destroy(reorders[i].prim);
    n_reorders = 0;
}

rn_status cpu_convert_mds(const rn_kernel_tensor *src, const rn_kernel_tensor *dst, cpu_md *smd,
                          cpu_md *dmd)
{
    rn_status st = tensor_md(src, dst, smd);
    return st == RN_OK ? tensor_md(dst, src, dmd) : st;
}

static const cpu_layout *cpu_layout_of(const rn_layout *l)
{
    return l != NULL && l->ops == &cpu_layout_ops ? (const cpu_layout *)l : NULL;
}

static int team_size_md(const cpu_md *md, int threads)
{
    int64_t n = 1;
    for (int d = 0; d < md->ndims; d++)
        n *= md->dims[d] > 0 ? md->dims[d] : 1;
    return cpu_team_size_work(cpu_work_elements(n), threads);
}

static rn_status layout_convert(const rn_kernel_tensor *src, rn_kernel_tensor *dst)
{
    cpu_md smd, dmd;
    rn_status st;
    if ((st = cpu_convert_mds(src, dst, &smd, &dmd)) != RN_OK)
        return st;
    /* An import's weights: the bytes its blob stored (blob.c). */
    if (cpu_blob_restore(src, &smd, &dmd, dst))
        return RN_OK;
    cpu_blob_count_reorder();
    dnnl_primitive_t prim = NULL;
    size_t scratch = 0;
    uint64_t id = 0;
    bool owned = false;
    /* The stream's team and mode from the compiled model's layout (the
     * running thread's cpu_config is a stream worker's default). */
    const cpu_layout *cl = cpu_layout_of(dst->layout) != NULL ? cpu_layout_of(dst->layout)
                                                              : cpu_layout_of(src->layout);
    const cpu_config *c = cpu_config_get();
    int stream_threads = cl != NULL ? cl->threads : c->threads;
    bool denormals = cl != NULL ? cl->denormals : c->denormals;
    /* At compile time (no node running) on the user's thread (not a stream
     * worker): one thread. A team there would leave libgomp's pool of that
     * thread behind, whose idle threads count among the process's OpenMP
     * threads; with a stream worker's team beside them they outnumber the
     * cores, and libgomp then stops spinning in every team of the process
     * (docs/cpu.md, "Threads and streams"). */
    bool compiling = plugin_running_node() == NULL && sched_current_stream() < 0;
    /* Else the team its size pays for (team.c): a small conversion (most
     * of a light model's) on the worker alone. */
    int sn = team_size_md(&smd, stream_threads), dn = team_size_md(&dmd, stream_threads);
    int threads = compiling ? 1 : sn > dn ? sn : dn;
#if defined(__SANITIZE_THREAD__)
    threads = 1; /* as cpu_enter: no teams under ThreadSanitizer */
#endif
    if ((st = reorder_get(&smd, &dmd, threads, &prim, &scratch, &id, &owned)) != RN_OK)
        return st;
    dnnl_engine_t eng = NULL;
    dnnl_stream_t stream = NULL;
    if ((st = cpu_engine(&eng)) != RN_OK || (st = cpu_stream(&stream)) != RN_OK)
        return st;
    cpu_thread_state thread = cpu_enter(threads, denormals);
    cpu_team_count(CPU_TEAM_REORDER, omp_in_parallel() ? 1 : omp_get_max_threads());
    void *pad = scratch > 0 ? aligned_alloc(64, (scratch + 63) / 64 * 64) : NULL;
    /* Source and destination through the thread's table (a cached
     * reorder's id); the scratchpad, allocated per run, for this run only. */
    dnnl_memory_t m[3] = {NULL, NULL, NULL};
    bool mine[3] = {true, true, true};
    dnnl_status_t s = scratch > 0 && pad == NULL ? dnnl_out_of_memory : dnnl_success;
    for (int i = 0; i < 2 && s == dnnl_success; i++) {
        const cpu_md *md = i == 0 ? &smd : &dmd;
        void *data = i == 0 ? src->data : dst->data;
        s = owned ? cpu_memory_create(&m[i], md, eng, data)
                  : cpu_memory(id, i == 0 ? DNNL_ARG_FROM : DNNL_ARG_TO, md, data, &m[i], &mine[i]);
        if (s != dnnl_success)
            m[i] = NULL;
    }
    cpu_md pmd;
    dnnl_dims_t pd = {(dnnl_dim_t)scratch};
    if (s == dnnl_success && scratch > 0 &&
        (s = cpu_md_init_by_tag(&pmd, 1, pd, dnnl_u8, dnnl_a)) == dnnl_success)
        s = cpu_memory_create(&m[2], &pmd, eng, pad);
    if (s == dnnl_success) {
        dnnl_exec_arg_t a[3] = {
            {DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}, {DNNL_ARG_SCRATCHPAD, m[2]}};
        s = dnnl_primitive_execute(prim, stream, scratch > 0 ? 3 : 2, a);
    }
    if (s == dnnl_success)
        s = dnnl_stream_wait(stream);
    cpu_leave(thread);
    for (int i = 0; i < 3; i++)
        if (mine[i])
            dnnl_memory_destroy(m[i]);
    free(pad);
    if (owned)
        dnnl_primitive_destroy(prim);
    if (s != dnnl_success)
        return cpu_error(NULL, "running a reorder", s);
    return RN_OK;
}

const rn_layout_ops cpu_layout_ops = {
    .abi_version = RN_KERNEL_ABI_VERSION,
    .device = "CPU",
    .equal = layout_equal,
    .convert = layout_convert,
};

/* ---- primitives ---- */

rn_status cpu_attr(const rn_node *node, dnnl_post_ops_t po, dnnl_primitive_attr_t *out)
{
    dnnl_primitive_attr_t attr;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success)
        s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && po != NULL)
        s = dnnl_primitive_attr_set_post_ops(attr, po);
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return cpu_error(node, "creating primitive attributes", s);
    }
    *out = attr;
    return RN_OK;
}

const char *cpu_pd_impl(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        impl == NULL)
        return "";
    return impl;
}

int cpu_team_size_md(const cpu_md *md)
{
    return team_size_md(md, cpu_config_get()->threads);
}

rn_status cpu_prim_init(cpu_prim *p, const rn_node *node, dnnl_primitive_desc_t pd)
{
    return cpu_prim_init_team(p, node, pd, cpu_team_size(node, cpu_config_get()->threads));
}

rn_status cpu_prim_init_team(cpu_prim *p, const rn_node *node, dnnl_primitive_desc_t pd, int team)
{
    memset(p, 0, sizeof *p);
    p->pd = pd;
    const cpu_config *c = cpu_config_get();
    p->threads = team;
    p->denormals = c->denormals;
    p->bind = c->bind;
    p->stream_threads = c->threads;
    int prev = cpu_team_begin_size(team);
    dnnl_status_t s = dnnl_primitive_create(&p->prim, pd);
    cpu_team_end(prev);
    if (s != dnnl_success) {
        p->prim = NULL;
        cpu_prim_release(p);
        return cpu_error(node, "creating the primitive", s);
    }
    cpu_md smd;
    p->scratch = cpu_pd_md(pd, dnnl_query_scratchpad_md, 0, &smd) ? cpu_md_get_size(&smd) : 0;
    p->id = cpu_memory_id();
    dnnl_dims_t pad = {(dnnl_dim_t)p->scratch};
    if (p->scratch > 0 &&
        (s = cpu_md_init_by_tag(&p->scratch_md, 1, pad, dnnl_u8, dnnl_a)) != dnnl_success) {
        cpu_prim_release(p);
        return cpu_error(node, "describing the scratchpad", s);
    }
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl != NULL)
        snprintf(p->impl, sizeof p->impl, "%s", impl);
    else
        snprintf(p->impl, sizeof p->impl, "onednn");
    return RN_OK;
}

void cpu_prim_release(cpu_prim *p)
{
    if (p->prim != NULL)
        dnnl_primitive_destroy(p->prim);
    if (p->pd != NULL)
        dnnl_primitive_desc_destroy(p->pd);
    p->prim = NULL;
    p->pd = NULL;
}

rn_status cpu_execute(const cpu_prim *p, const rn_kernel_args *args, const cpu_arg *a, int n)
{
    dnnl_stream_t stream = NULL;
    rn_status st = cpu_stream(&stream);
    if (st != RN_OK)
        return st;
    if (p->scratch > 0 && (args->scratch.data == NULL || args->scratch.nbytes < p->scratch))
        return rn_set_error(RN_INTERNAL,
                            "CPU: node '%s' (%s): the primitive needs %zu bytes of scratch, the "
                            "run gave %zu",
                            rn_node_name(args->node), rn_node_op_type(args->node), p->scratch,
                            args->scratch.data != NULL ? args->scratch.nbytes : (size_t)0);
    cpu_bind_enter(p->bind, p->stream_threads);
    cpu_thread_state thread = cpu_enter(p->threads, p->denormals);
    cpu_team_count(p->kind, omp_in_parallel() ? 1 : omp_get_max_threads());
    dnnl_memory_t mem[CPU_MAX_ARGS + 1];
    bool owned[CPU_MAX_ARGS + 1];
    dnnl_exec_arg_t ex[CPU_MAX_ARGS + 1];
    int k = 0;
    dnnl_status_t s = dnnl_success;
    for (int i = 0; i < n && s == dnnl_success; i++) {
        s = cpu_memory(p->id, a[i].arg, a[i].md, a[i].data, &mem[k], &owned[k]);
        if (s == dnnl_success)
            ex[k] = (dnnl_exec_arg_t){a[i].arg, mem[k]}, k++;
    }
    if (s == dnnl_success && p->scratch > 0 &&
        (s = cpu_memory(p->id, DNNL_ARG_SCRATCHPAD, &p->scratch_md, args->scratch.data, &mem[k],
                        &owned[k])) == dnnl_success)
        ex[k] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mem[k]}, k++;
    if (s == dnnl_success)
        s = dnnl_primitive_execute(p->prim, stream, k, ex);
    if (s == dnnl_success)
        s = dnnl_stream_wait(stream);
    cpu_leave(thread);
    for (int i = 0; i < k; i++)
        if (owned[i])
            dnnl_memory_destroy(mem[i]);
    if (s != dnnl_success)
        return cpu_error(args->node, "running the primitive", s);
    return RN_OK;
}

bool cpu_static_node(const rn_node *node, const char **why)
{
    for (int i = 0; i < rn_node_input_count(node) + rn_node_output_count(node); i++) {
        bool in = i < rn_node_input_count(node);
        int k = in ? i : i - rn_node_input_count(node);
        if ((in ? rn_node_input_name(node, k) : rn_node_output_name(node, k))[0] == '\0')
            continue;
        rn_partial_shape s = in ? rn_node_input_shape(node, k) : rn_node_output_shape(node, k);
        bool ok = s.rank >= 0;
        for (int d = 0; d < s.rank && ok; d++)
            ok = s.dims[d] >= 0;
        if (!ok) {
            *why = "shapes not static (specialised per run)";
            return false;
        }
    }
    return true;
}
