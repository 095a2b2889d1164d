/* How many OpenMP threads a primitive gets: the stream's cores, unless its
 * work is too small to pay for the team.
 *
 * With the LATENCY hint one stream owns every core and its primitives run
 * one at a time on an OpenMP team of all of them. A team's fork and join
 * (waking the other threads, the closing barrier) costs a few microseconds
 * on an idle machine, and much more when a team thread has been preempted:
 * the barrier waits for it. On a light model most primitives take less than
 * that (ShuffleNet's and SqueezeNet's layers after the first stages: tens
 * of thousands of multiply-adds), so splitting them makes them slower, not
 * faster. A primitive whose work is below a threshold runs on the worker
 * alone; the others keep the whole team. The work is estimated from the
 * node at compile time: multiply-adds for convolutions and products,
 * elements written (times the window for pooling) for the rest. */
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph/ops/qlinear_fused.h"
#include "plugins/api/plan.h"
#include "plugins/cpu/cpu.h"
#include "plugins/cpu/team.h"
#include "plugins/cpu/wait.h"
#include "sched/sched.h"

/* Below these a primitive is single-threaded: about 20 us of single-core
 * work (a convolution runs ~50 multiply-adds per ns-core in f32 with AVX2,
 * more with AVX-512; an eltwise, concat or reorder a few elements per ns). */
#define TEAM_MIN_MACS     (1ll << 20)
#define TEAM_MIN_ELEMENTS (1ll << 16)

static int64_t elements(rn_partial_shape s)
{
    int64_t n = 1;
    for (int d = 0; d < s.rank; d++)
        n *= s.dims[d] > 0 ? s.dims[d] : 1;
    return n;
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int64_t cpu_work(const rn_node *node)
{
    const char *op = rn_node_op_type(node);
    int64_t out = rn_node_output_count(node) > 0 ? elements(rn_node_output_shape(node, 0)) : 0;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    bool transposed = strcmp(op, "ConvTranspose") == 0;
    if (strcmp(op, "Conv") == 0 || strcmp(op, "FusedConv") == 0 || transposed) {
        /* Each output: C/group x kernel multiply-adds (weights [M, C/g, k...]);
         * ConvTranspose: each input M/group x kernel (weights [C, M/g, k...]). */
        rn_partial_shape w = rn_node_input_shape(node, 1);
        int64_t per = 1;
        for (int d = 1; d < w.rank; d++)
            per *= w.dims[d] > 0 ? w.dims[d] : 1;
        int64_t macs = (transposed ? elements(x) : out) * per;
        /* A convolution of a few multiply-adds an output (a depthwise 3x3:
         * 9) is bound by its memory as an eltwise is: its input and output
         * elements are its work where they are more. ShuffleNet's depthwise
         * convolutions of 136x28x28 and 272x14x14 (0.5-1 M multiply-adds)
         * took 2x OpenVINO's time on one thread (bf16, AVX-512). */
        int64_t touched = cpu_work_elements(elements(x) + out);
        return macs > touched ? macs : touched;
    }
    if (has_prefix(op, "MatMul") || strcmp(op, "FusedMatMul") == 0 || strcmp(op, "Gemm") == 0 ||
        strcmp(op, "FusedGemm") == 0) {
        int64_t k = x.rank > 0 && x.dims[x.rank - 1] > 0 ? x.dims[x.rank - 1] : 1;
        return out * k;
    }
    if (has_prefix(op, "QLinearFused")) {
        /* runnel's int8 fused ops (graph/ops/qlinear_fused.h): weights at
         * QF_W; a convolution's as above, Gemm's [N, K] (transB), MatMul's
         * [K, N]. */
        rn_partial_shape w = rn_node_input_shape(node, QF_W);
        int64_t per = 1;
        if (strcmp(op, "QLinearFusedConv") == 0)
            for (int d = 1; d < w.rank; d++)
                per *= w.dims[d] > 0 ? w.dims[d] : 1;
        else if (w.rank > 0)
            per = w.dims[strcmp(op, "QLinearFusedMatMul") == 0 ? w.rank - 2 : w.rank - 1];
        return out * (per > 0 ? per : 1);
    }
    if (strcmp(op, "ScaledDotProductAttention") == 0) {
        /* Q @ Kt and scores @ V: (Q's elements + the output's) x Sk. */
        rn_partial_shape kt = rn_node_input_shape(node, 1);
        int64_t sk = kt.rank > 0 && kt.dims[kt.rank - 1] > 0 ? kt.dims[kt.rank - 1] : 1;
        return (elements(x) + out) * sk;
    }
    /* Memory-bound: the elements read or written (every input of a
     * Concat, a pooling's input), in multiply-add units. */
    int64_t touched = out;
    if (has_prefix(op, "MaxPool") || has_prefix(op, "AveragePool") || has_prefix(op, "Global") ||
        strcmp(op, "Concat") == 0 || strcmp(op, "LRN") == 0 || has_prefix(op, "Reduce")) {
        int64_t in = 0;
        for (int k = 0; k < rn_node_input_count(node); k++)
            in += elements(rn_node_input_shape(node, k));
        touched = in > out ? in : out;
    }
    return cpu_work_elements(touched);
}

int cpu_team_size_work(int64_t work, int threads)
{
    if (threads <= 1)
        return 1;
    return work < TEAM_MIN_MACS ? 1 : threads;
}

int64_t cpu_work_elements(int64_t elements)
{
    return elements * (TEAM_MIN_MACS / TEAM_MIN_ELEMENTS);
}

int cpu_team_size(const rn_node *node, int threads)
{
    if (node == NULL)
        return threads < 1 ? 1 : threads;
    return cpu_team_size_work(cpu_work(node), threads);
}

/* Primitive runs by kind and team size since the process started. */
static atomic_llong census[3][2];

void cpu_team_count(cpu_team_kind kind, int threads)
{
    atomic_fetch_add_explicit(&census[kind][threads > 1], 1, memory_order_relaxed);
}

cpu_team_census cpu_team_census_read(void)
{
    cpu_team_census c;
    for (int k = 0; k < 3; k++) {
        c.alone[k] = atomic_load_explicit(&census[k][0], memory_order_relaxed);
        c.team[k] = atomic_load_explicit(&census[k][1], memory_order_relaxed);
    }
    return c;
}

static int team_threads(int threads)
{
#if defined(__SANITIZE_THREAD__)
    (void)threads;
    return 1; /* as cpu_enter: no teams under ThreadSanitizer */
#else
    return threads;
#endif
}

int cpu_team_begin(const rn_node *node)
{
    return cpu_team_begin_size(cpu_team_size(node, cpu_config_get()->threads));
}

int cpu_team_begin_size(int team)
{
    /* Every stream, a single-core one too: oneDNN fixes a primitive's
     * thread count when it is created (a jit or gemm convolution forks
     * omp_get_max_threads() of the creating thread at every run, whatever
     * the running thread's maximum), and the compiling thread's maximum is
     * every core, so a THROUGHPUT stream of one core would fork a team of
     * all of them per convolution: more busy threads than cores. */
    int previous = omp_get_max_threads();
    omp_set_num_threads(team_threads(team));
    return previous;
}

/* On a user's thread outside a run (compiling: no stream worker, no node
 * running), releases the thread's libgomp pool that a team forked while
 * creating a descriptor or a primitive left behind. Its idle threads would
 * count among the process's OpenMP threads for good: with a stream
 * worker's team beside them they outnumber the cores, and libgomp then
 * stops spinning in every team of the process (its futex waits cost each
 * primitive's fork and join tens of microseconds; docs/cpu.md, "Threads and
 * streams"). Without a pool this returns at once; a pool of the user's own
 * is recreated by libgomp when the user's next parallel region needs it. */
static void release_compiling_pool(void)
{
#if !defined(__SANITIZE_THREAD__)
    if (sched_current_stream() >= 0 || plugin_running_node() != NULL || omp_in_parallel())
        return;
    if (omp_pause_resource(omp_pause_soft, omp_get_initial_device()) == 0)
        cpu_team_pool_released(); /* a new pool's threads need their mode set */
#endif
}

void cpu_team_end(int previous)
{
    if (previous > 0)
        omp_set_num_threads(previous);
    release_compiling_pool();
}

/* Off unless RN_CPU_BRANCHES=1: on a quiet 2-vCPU Zen 3 (AVX2, 2026-11-28)
 * side by side was slower than one chain at a time on the whole team for
 * every model measured (Inception-v1 sync 1.23x, SqueezeNet 1.15-1.21x,
 * ShuffleNet 1.09-1.16x, ResNet-50 1.03-1.05x; bench/LOG.md, "Branch
 * parallelism on a quiet machine"): the cost model does not yet know when
 * it pays. */
bool cpu_branches_enabled(void)
{
    const char *v = getenv("RN_CPU_BRANCHES");
    return v != NULL && strcmp(v, "1") == 0;
}

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer cannot see libgomp's synchronisation (cpu_enter runs no
 * teams under it): the fork's other threads are plain threads, which it
 * sees, so that it checks the runner (plugins/api/branch.c). */
typedef struct fork_arg {
    void (*fn)(void *arg, int thread);
    void *arg;
    int thread;
} fork_arg;

static void *fork_main(void *p)
{
    fork_arg *a = p;
    a->fn(a->arg, a->thread);
    return NULL;
}
#endif

void cpu_branch_fork(void (*fn)(void *arg, int thread), void *arg, int threads)
{
#if defined(__SANITIZE_THREAD__)
    pthread_t tid[8];
    fork_arg a[8];
    int n = threads > 8 ? 8 : threads, started = 1;
    for (int k = 1; k < n; k++) {
        a[k] = (fork_arg){fn, arg, k};
        if (pthread_create(&tid[started], NULL, fork_main, &a[k]) == 0)
            started++;
    }
    fn(arg, 0);
    for (int k = 1; k < started; k++)
        pthread_join(tid[k], NULL);
#else
    cpu_wait_check(); /* a team like a primitive's: spin or sleep (wait.c) */
#pragma omp parallel num_threads(threads)
    fn(arg, omp_get_thread_num());
    cpu_wait_done();
#endif
}
