/* bench/overhead: what runnel adds around the kernels of a request (not a test).
 *
 * The model is a chain of 100 Add nodes on 16 floats (y += c_i, each c_i a
 * constant; bench/overhead/chain_model.c), compiled for REF. Its kernels do
 * almost nothing, so a request's time is mostly the runtime's own work:
 * setting up the run, dispatching each node, releasing its successor,
 * finishing. The peer, measured in the same run, is the same 100 REF Add
 * kernels called directly in a loop: picked once from the kernel registry
 * (ref_register_kernels, plugin_kernel_registry_pick), prepared once, and
 * run with prebuilt plugin_kernel_args over preallocated buffers — what a
 * fully compiled plan would still have to do.
 *
 * Modes, interleaved round by round so that a change of machine load hits
 * all of them alike:
 *   direct  the 100 kernel->run calls;
 *   sync    rn_infer_request_infer;
 *   async   rn_infer_request_start_async + rn_infer_request_wait, one request
 *           in flight.
 * Each round times every request of a mode one by one (after a warm-up) and
 * keeps the median; each line prints the median [min-max] of the rounds'
 * medians in ns per request, the overhead per node ((runnel - direct) / nodes)
 * and ratio=<runnel / direct> beside the target of issue 10 (sync <= 1.5,
 * async <= 2.0). A benchmark, not a test: it exits non-zero only when a run
 * fails or runnel's output differs from the direct calls', never on a number.
 *
 *   bazel run //bench/overhead:bench_overhead -- [--rounds N] [--iters N] [--warmup N]
 *       [--nodes N] [--width N] [-p KEY=VALUE ...]
 *
 * -p passes a compile-time property (NUM_STREAMS=1, PERFORMANCE_HINT=LATENCY).
 * docs/performance.md ("Per-node overhead") has the numbers. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/common/host.h"
#include "bench/common/timing.h"
#include "bench/overhead/chain_model.h"
#include "graph/onnx/onnx_reader.h"
#include "plugins/api/kernel.h"
#include "plugins/ref/ref.h"
#include "runnel/runnel.h"

#define MAX_PROPERTIES 16
#define MAX_ROUNDS     101

typedef struct options {
    int rounds; /* rounds of every mode; the median of their medians is printed */
    int iters;  /* timed requests per mode and round */
    int warmup; /* untimed requests per mode and round before them */
    int nodes;
    int width;
    rn_property properties[MAX_PROPERTIES];
    size_t n_properties;
} options;

/* The peer: the chain's kernels with their arguments, ready to run. */
typedef struct direct_plan {
    graph *g;
    plugin_kernel_registry *registry;
    int n;
    const plugin_kernel **kernels;
    void **states;
    plugin_kernel_args *args;
    graph_tensor *tensors; /* one per graph value: what args point into */
    float *arena;          /* every non-constant value's buffer */
    const float *input, *output;
} direct_plan;

/* What one mode runs per request. */
typedef struct mode {
    const char *name;
    const char *what;
    double target; /* the ratio the issue asks for; 0: none (the peer) */
    int (*run)(void *ctx);
    void *ctx;
} mode;

static void die(const char *what)
{
    fprintf(stderr, "bench_overhead: %s: %s\n", what, rn_last_error());
    exit(1);
}

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if ((expr) != RN_OK)                                                                       \
            die(#expr);                                                                            \
    } while (0)

/* ---------------------------------------------------------------- the peer */

/* Reads the same model bytes runnel compiles, picks and prepares REF's kernel
 * for every node, and points each node's arguments at its buffers. */
static void direct_build(direct_plan *p, const uint8_t *model, size_t size, int width)
{
    CHECK(onnx_read_memory(model, size, NULL, &p->g));
    CHECK(plugin_kernel_registry_create(&p->registry));
    CHECK(ref_register_kernels(p->registry));
    graph *g = p->g;
    p->n = g->n_nodes;
    p->kernels = calloc((size_t)p->n, sizeof *p->kernels);
    p->states = calloc((size_t)p->n, sizeof *p->states);
    p->args = calloc((size_t)p->n, sizeof *p->args);
    p->tensors = calloc((size_t)g->n_values, sizeof *p->tensors);
    size_t arena_bytes = (sizeof(float) * (size_t)width * (size_t)g->n_values + 63) / 64 * 64;
    p->arena = aligned_alloc(64, arena_bytes);
    if (!p->kernels || !p->states || !p->args || !p->tensors || !p->arena) {
        fprintf(stderr, "bench_overhead: out of memory\n");
        exit(1);
    }
    /* Every value of the chain is a vector of `width` floats, as the
     * constants are: each descriptor is a copy of a constant's (dense, host
     * memory, whatever else the descriptor holds) pointing at its own
     * buffer, or the constant itself. */
    const graph_tensor *like = NULL;
    for (int v = 0; v < g->n_values && like == NULL; v++)
        like = g->values[v]->constant;
    for (int v = 0; v < g->n_values; v++) {
        graph_value *value = g->values[v];
        if (like == NULL || value->type != like->type || value->shape.rank != like->rank ||
            graph_shape_count(&value->shape) != width) {
            fprintf(stderr, "bench_overhead: value '%s' is not a vector of %d floats\n",
                    value->name, width);
            exit(1);
        }
        p->tensors[value->id] = value->constant ? *value->constant : *like;
        if (value->constant == NULL)
            p->tensors[value->id].data = p->arena + width * value->id;
    }
    for (int v = 0; v < g->n_values; v++) /* inputs arange(n)/n, as tools/run fills them */
        if (g->values[v]->is_parameter)
            for (int j = 0; j < width; j++)
                p->arena[width * g->values[v]->id + j] = (float)j / (float)width;
    p->input = p->tensors[g->inputs[0]->id].data;
    p->output = p->tensors[g->outputs[0]->id].data;

    plugin_kernel_ctx ctx = {.registry = p->registry};
    for (int i = 0; i < p->n; i++) {
        const graph_node *node = g->nodes[i];
        CHECK(plugin_kernel_registry_pick(p->registry, node, &p->kernels[i]));
        const plugin_kernel *k = p->kernels[i];
        if (k->prepare_ctx != NULL)
            CHECK(k->prepare_ctx(node, &ctx, &p->states[i]));
        else if (k->prepare != NULL)
            CHECK(k->prepare(node, &p->states[i]));
        /* Each node gets its own copies of the descriptors: a kernel may
         * rewrite its outputs' (alloc_output), never its inputs'. */
        graph_tensor *ins = calloc((size_t)node->n_inputs, sizeof *ins);
        graph_tensor *outs = calloc((size_t)node->n_outputs, sizeof *outs);
        if (ins == NULL || outs == NULL) {
            fprintf(stderr, "bench_overhead: out of memory\n");
            exit(1);
        }
        for (int k_in = 0; k_in < node->n_inputs; k_in++)
            ins[k_in] = p->tensors[node->inputs[k_in]->id];
        for (int k_out = 0; k_out < node->n_outputs; k_out++)
            outs[k_out] = p->tensors[node->outputs[k_out]->id];
        p->args[i] = (plugin_kernel_args){.node = node,
                                          .inputs = ins,
                                          .n_inputs = node->n_inputs,
                                          .outputs = outs,
                                          .n_outputs = node->n_outputs,
                                          .state = p->states[i]};
    }
}

static void direct_free(direct_plan *p)
{
    for (int i = 0; i < p->n; i++) {
        if (p->kernels[i] != NULL && p->kernels[i]->release != NULL && p->states[i] != NULL)
            p->kernels[i]->release(p->states[i]);
        free((void *)p->args[i].inputs);
        free(p->args[i].outputs);
    }
    free(p->kernels);
    free(p->states);
    free(p->args);
    free(p->tensors);
    free(p->arena);
    plugin_kernel_registry_free(p->registry);
    graph_free(p->g);
}

static int run_direct(void *ctx)
{
    direct_plan *p = ctx;
    for (int i = 0; i < p->n; i++)
        if (p->kernels[i]->run(&p->args[i]) != RN_OK)
            return -1;
    return 0;
}

/* ---------------------------------------------------------------- runnel */

static int run_sync(void *ctx)
{
    return rn_infer_request_infer(ctx) == RN_OK ? 0 : -1;
}

static int run_async(void *ctx)
{
    if (rn_infer_request_start_async(ctx) != RN_OK)
        return -1;
    return rn_infer_request_wait(ctx) == RN_OK ? 0 : -1;
}

/* Writes the model to a temporary file (the public API reads files), reads
 * and compiles it for REF, and removes the file. */
static rn_compiled_model *compile_chain(rn_core *core, const uint8_t *model, size_t size,
                                        const options *o)
{
    char path[] = "/tmp/bench_overhead_XXXXXX.onnx";
    int fd = mkstemps(path, 5);
    if (fd < 0 || write(fd, model, size) != (ssize_t)size || close(fd) != 0) {
        perror("bench_overhead: writing the model");
        exit(1);
    }
    rn_model *m;
    rn_status st = rn_core_read_model(core, path, &m);
    unlink(path);
    if (st != RN_OK)
        die("rn_core_read_model");
    rn_compiled_model *compiled;
    CHECK(rn_core_compile_model(core, m, "REF", o->properties, o->n_properties, &compiled));
    rn_model_free(m);
    return compiled;
}

/* ---------------------------------------------------------------- report */

/* The CPU model and the ISA extensions REF's micro-kernels choose between. */
static void print_machine(void)
{
    char model[256];
    bench_cpu_model(model, sizeof model);
    struct utsname u;
    uname(&u);
    printf("# machine: %s, %ld online CPUs, %s %s, gcc %d.%d\n", model,
           sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, __GNUC__, __GNUC_MINOR__);
    bench_print_isa();
}

static void print_compiled(rn_compiled_model *compiled, const options *o)
{
    const rn_runtime_node *nodes;
    size_t n_nodes = 0;
    CHECK(rn_compiled_model_runtime_model(compiled, &nodes, &n_nodes));
    size_t adds = 0;
    for (size_t i = 0; i < n_nodes; i++)
        adds += strcmp(nodes[i].layer_type, "Add") == 0;
    char streams[32] = "?", hint[32] = "?", threads[32] = "?";
    rn_compiled_model_get_property(compiled, "NUM_STREAMS", streams, sizeof streams);
    rn_compiled_model_get_property(compiled, "PERFORMANCE_HINT", hint, sizeof hint);
    rn_compiled_model_get_property(compiled, "INFERENCE_NUM_THREADS", threads, sizeof threads);
    printf("# model: a chain of %d Add nodes on %d f32 (y += c_i); REF runs %zu nodes (%zu Add); "
           "NUM_STREAMS=%s, INFERENCE_NUM_THREADS=%s, PERFORMANCE_HINT=%s\n",
           o->nodes, o->width, n_nodes, adds, streams, threads, hint[0] ? hint : "(none)");
    printf("# ns per request: median [min-max] of %d rounds, each the median of %d requests timed "
           "one by one after %d warm-up requests; modes interleaved per round\n",
           o->rounds, o->iters, o->warmup);
}

/* ---------------------------------------------------------------- main */

static int parse_options(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL)
            goto usage;
        if (strcmp(a, "--rounds") == 0)
            o->rounds = atoi(v);
        else if (strcmp(a, "--iters") == 0)
            o->iters = atoi(v);
        else if (strcmp(a, "--warmup") == 0)
            o->warmup = atoi(v);
        else if (strcmp(a, "--nodes") == 0)
            o->nodes = atoi(v);
        else if (strcmp(a, "--width") == 0)
            o->width = atoi(v);
        else if (strcmp(a, "-p") == 0 && o->n_properties < MAX_PROPERTIES && strchr(v, '=')) {
            char *key = strdup(v), *eq = strchr(key, '=');
            *eq = '\0';
            o->properties[o->n_properties++] = (rn_property){.key = key, .value = eq + 1};
        } else
            goto usage;
        i++;
    }
    if (o->rounds >= 1 && o->rounds <= MAX_ROUNDS && o->iters >= 1 && o->warmup >= 0 &&
        o->nodes >= 1 && o->width >= 1)
        return 0;
usage:
    fprintf(stderr,
            "usage: bench_overhead [--rounds N (1-%d)] [--iters N] [--warmup N] "
            "[--nodes N] [--width N] [-p KEY=VALUE ...]\n",
            MAX_ROUNDS);
    return -1;
}

/* Times one round of mode m: warm-up, then o->iters requests one by one.
 * Returns the round's median in ns, or -1 when a request failed. */
static double time_round(const mode *m, const options *o, double *samples)
{
    for (int i = 0; i < o->warmup; i++)
        if (m->run(m->ctx) != 0)
            return -1;
    for (int i = 0; i < o->iters; i++) {
        uint64_t t0 = bench_now_ns();
        if (m->run(m->ctx) != 0)
            return -1;
        samples[i] = (double)(bench_now_ns() - t0);
    }
    return bench_median(samples, o->iters);
}

int main(int argc, char **argv)
{
    options o = {.rounds = 7, .iters = 5000, .warmup = 500, .nodes = 100, .width = 16};
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    size_t size;
    uint8_t *model = chain_model_encode(o.nodes, o.width, &size);
    if (model == NULL) {
        fprintf(stderr, "bench_overhead: out of memory\n");
        return 1;
    }

    direct_plan direct = {0};
    direct_build(&direct, model, size, o.width);
    rn_core *core;
    CHECK(rn_core_create(&core));
    rn_compiled_model *compiled = compile_chain(core, model, size, &o);
    free(model);
    rn_infer_request *request;
    CHECK(rn_compiled_model_create_infer_request(compiled, &request));
    rn_tensor *input, *output;
    CHECK(rn_infer_request_get_input_tensor(request, 0, &input));
    memcpy(rn_tensor_data(input), direct.input, sizeof(float) * (size_t)o.width);

    print_machine();
    print_compiled(compiled, &o);
    bench_print_load("at start");

    /* Both sides compute the same sums in the same order: bit-identical. */
    CHECK(rn_infer_request_infer(request));
    CHECK(rn_infer_request_get_output_tensor(request, 0, &output));
    if (run_direct(&direct) != 0)
        die("direct kernel run");
    if (memcmp(rn_tensor_data(output), direct.output, sizeof(float) * (size_t)o.width) != 0) {
        fprintf(stderr, "bench_overhead: runnel's output differs from the direct kernel calls'\n");
        return 1;
    }

    char direct_what[64];
    snprintf(direct_what, sizeof direct_what, "%d REF Add kernel calls", direct.n);
    const mode modes[] = {
        {"direct", direct_what, 0, run_direct, &direct},
        {"sync", "rn_infer_request_infer", 1.5, run_sync, request},
        {"async", "start_async + wait, 1 in flight", 2.0, run_async, request},
    };
    enum { N_MODES = sizeof modes / sizeof modes[0] };
    double rounds[N_MODES][MAX_ROUNDS];
    double *samples = malloc(sizeof(double) * (size_t)o.iters);
    if (samples == NULL)
        return 1;
    for (int r = 0; r < o.rounds; r++)
        for (int m = 0; m < N_MODES; m++)
            if ((rounds[m][r] = time_round(&modes[m], &o, samples)) < 0)
                die(modes[m].name);
    free(samples);

    double direct_ns = 0;
    for (int m = 0; m < N_MODES; m++) {
        double lo = rounds[m][0], hi = rounds[m][0];
        for (int r = 1; r < o.rounds; r++) {
            lo = rounds[m][r] < lo ? rounds[m][r] : lo;
            hi = rounds[m][r] > hi ? rounds[m][r] : hi;
        }
        double ns = bench_median(rounds[m], o.rounds);
        printf("%-6s %-32s %9.0f ns/request [%.0f-%.0f]", modes[m].name, modes[m].what, ns, lo, hi);
        if (m == 0) {
            direct_ns = ns;
            printf("  %6.1f ns/node (kernel)\n", ns / o.nodes);
        } else {
            double ratio = ns / direct_ns;
            printf("  overhead %6.1f ns/node  ratio=%.2f (target <= %.1f%s)\n",
                   (ns - direct_ns) / o.nodes, ratio, modes[m].target,
                   ratio <= modes[m].target ? ", met" : ", not met");
        }
    }
    bench_print_load("at end");

    rn_infer_request_free(request);
    rn_compiled_model_free(compiled);
    rn_core_free(core);
    direct_free(&direct);
    for (size_t i = 0; i < o.n_properties; i++)
        free((void *)o.properties[i].key);
    return 0;
}
