/* Allocation-failure injection: for a few models, every allocation of a
 * whole run (create a Core, read, compile on REF, create a request, set the
 * inputs, infer sync or async, read the outputs, free everything) is made to
 * fail in turn, one per pass (failing_alloc.h). Each pass must end in one of
 * two ways:
 *   - an error status with a message (RN_OUT_OF_MEMORY where the failure is
 *     the allocation itself), with every object freed: no crash, and, under
 *     ASan, no leak (LeakSanitizer checks the process at exit);
 *   - success with the same outputs as the pass without a failure (a failed
 *     allocation that a path can do without, such as a cache entry).
 * The sweep ends at the first pass whose N is past the run's last
 * allocation; a pass count of zero fails (the hook did not see the run).
 *
 * A sweep is N runs of a run with N allocations: the full sweeps are of
 * small models (a Conv, sync and async; an If with its subgraphs; on the
 * CPU device a Conv with constant weights, which oneDNN runs), and the
 * light model (alexnet, read and compiled) is sampled. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runnel/runnel.h"
#include "tests/faults/failing_alloc.h"

#define DEB "/usr/share/libonnx-testdata/data/"

typedef enum run_mode { RUN_READ_COMPILE, RUN_SYNC, RUN_ASYNC } run_mode;

/* The outputs of one pass: bytes of every output, concatenated. */
typedef struct run_outputs {
    unsigned char *bytes;
    size_t size;
} run_outputs;

/* Fills an input deterministically: floats in [0, 1), other types zero. */
static rn_status make_input(const rn_port *port, rn_tensor **out)
{
    if (port->kind != RN_PORT_TENSOR || port->shape.rank < 0)
        return rn_set_error(RN_UNSUPPORTED, "input %s: not a tensor of known rank", port->name);
    int64_t dims[RN_MAX_RANK];
    for (int d = 0; d < port->shape.rank; d++)
        dims[d] = port->shape.dims[d] == RN_DIM_DYNAMIC ? 1 : port->shape.dims[d];
    rn_status st = rn_tensor_create(port->element_type, dims, (size_t)port->shape.rank, out);
    if (st != RN_OK)
        return st;
    void *data = rn_tensor_data(*out);
    size_t n = rn_tensor_element_count(*out);
    if (port->element_type == RN_F32)
        for (size_t i = 0; i < n; i++)
            ((float *)data)[i] = (float)(i % 7) / 7.0f;
    else
        memset(data, 0, rn_tensor_byte_size(*out));
    return RN_OK;
}

/* Appends the request's outputs to *outs (allocated outside the armed
 * window's accounting only in that a failure here is a failure of the run). */
static rn_status collect_outputs(rn_infer_request *request, size_t n_outputs, run_outputs *outs)
{
    for (size_t i = 0; i < n_outputs; i++) {
        rn_tensor *t;
        rn_status st = rn_infer_request_get_output_tensor(request, i, &t);
        if (st != RN_OK)
            return st;
        if (rn_tensor_kind(t) != RN_VALUE_TENSOR || rn_tensor_element_type(t) == RN_STRING)
            continue;
        size_t bytes = rn_tensor_byte_size(t);
        unsigned char *grown = realloc(outs->bytes, outs->size + bytes + 1);
        if (grown == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "test: out of memory");
        memcpy(grown + outs->size, rn_tensor_data(t), bytes);
        outs->bytes = grown;
        outs->size += bytes;
    }
    return RN_OK;
}

/* One whole run; everything it made is freed whatever the outcome. */
static rn_status run_once(const char *path, const char *device, run_mode mode, run_outputs *outs)
{
    rn_core *core = NULL;
    rn_model *model = NULL;
    rn_compiled_model *compiled = NULL;
    rn_infer_request *request = NULL;
    rn_tensor *inputs[16] = {0};
    size_t n_inputs = 0;
    rn_property one_thread[] = {{"INFERENCE_NUM_THREADS", "1"}};
    rn_status st = rn_core_create(&core);
    if (st == RN_OK)
        st = rn_core_read_model(core, path, &model);
    if (st == RN_OK)
        st = rn_core_compile_model(core, model, device, one_thread, 1, &compiled);
    if (st == RN_OK && mode != RUN_READ_COMPILE)
        st = rn_compiled_model_create_infer_request(compiled, &request);
    if (st == RN_OK && request != NULL) {
        n_inputs = rn_compiled_model_input_count(compiled);
        cr_assert_leq(n_inputs, 16);
        for (size_t i = 0; i < n_inputs && st == RN_OK; i++) {
            rn_port port;
            st = rn_compiled_model_input(compiled, i, &port);
            if (st == RN_OK)
                st = make_input(&port, &inputs[i]);
            if (st == RN_OK)
                st = rn_infer_request_set_input_tensor(request, i, inputs[i]);
        }
        if (st == RN_OK && mode == RUN_SYNC)
            st = rn_infer_request_infer(request);
        if (st == RN_OK && mode == RUN_ASYNC) {
            st = rn_infer_request_start_async(request);
            if (st == RN_OK)
                st = rn_infer_request_wait(request);
        }
        if (st == RN_OK)
            st = collect_outputs(request, rn_compiled_model_output_count(compiled), outs);
    }
    rn_infer_request_free(request);
    for (size_t i = 0; i < n_inputs; i++)
        rn_tensor_free(inputs[i]);
    rn_compiled_model_free(compiled);
    rn_model_free(model);
    rn_core_free(core);
    return st;
}

/* Sweeps N over the allocations of a run of `model` on `device` in `mode`:
 * every one when `max_passes` is 0, else every k-th, k chosen so that there
 * are at most max_passes passes. */
static void sweep_on(const char *model, const char *device, run_mode mode, long max_passes)
{
    const char *path = model;
    run_outputs expected = {0}, warm_up = {0};
    /* A first run makes what the process keeps (the op table, caches). */
    cr_assert_eq(run_once(path, device, mode, &warm_up), RN_OK, "%s: %s", model, rn_last_error());
    free(warm_up.bytes);
    failing_alloc_arm(0);
    rn_status st = run_once(path, device, mode, &expected);
    long total = failing_alloc_disarm(), spared = failing_alloc_spared();
    cr_assert_eq(st, RN_OK, "%s: the run without failures: %s", model, rn_last_error());
    cr_assert_gt(total, 0, "%s: the hook saw no allocation", model);

    long stride = max_passes > 0 ? total / max_passes + 1 : 1;
    long failed = 0, survived = 0, out_of_memory = 0;
    for (long n = 1;; n += stride) {
        run_outputs got = {0};
        rn_clear_error();
        failing_alloc_arm(n);
        st = run_once(path, device, mode, &got);
        failing_alloc_disarm();
        bool fired = failing_alloc_fired();
        if (!fired) {
            cr_assert_eq(st, RN_OK, "%s: pass %ld without a failure: %s", model, n,
                         rn_last_error());
            free(got.bytes);
            break;
        }
        if (st == RN_OK) {
            cr_assert(got.size == expected.size &&
                          (got.size == 0 || memcmp(got.bytes, expected.bytes, got.size) == 0),
                      "%s: allocation %ld failed, the run succeeded with other outputs", model, n);
            survived++;
        } else {
            const char *message = rn_last_error();
            cr_assert(message != NULL && message[0] != '\0',
                      "%s: allocation %ld failed: %s without a message", model, n,
                      rn_status_name(st));
            if (st == RN_OUT_OF_MEMORY)
                out_of_memory++;
            else if (failed - out_of_memory < 5) /* the first few name the paths to fix */
                fprintf(stderr, "%s: allocation %ld failed: %s: %s\n", model, n, rn_status_name(st),
                        message);
            failed++;
        }
        free(got.bytes);
    }
    free(expected.bytes);
    printf("%s on %s (%s): %ld allocations, %ld failures injected (every %ld): %ld errors (%ld "
           "RN_OUT_OF_MEMORY), %ld survived; %ld allocations of spared libraries\n",
           model, device,
           mode == RUN_READ_COMPILE ? "read+compile"
           : mode == RUN_SYNC       ? "sync"
                                    : "async",
           total, failed + survived, stride, failed, out_of_memory, survived, spared);
    cr_assert_eq(failed + survived, (total + stride - 1) / stride,
                 "%s: %ld allocations but %ld failures injected", model, total, failed + survived);
    cr_assert_eq(out_of_memory, failed, "%s: %ld of %ld failed runs did not say RN_OUT_OF_MEMORY",
                 model, failed - out_of_memory, failed);
}

static void sweep(const char *model, run_mode mode, long max_passes)
{
    sweep_on(model, "REF", mode, max_passes);
}

/* The CPU device is built in but absent where its backend cannot start:
 * its sweeps skip then, saying why.
 *
 * oneDNN's own allocations are spared: oneDNN 2.6 (Debian's libdnnl) does
 * not survive them. Its C API allocates objects with an operator new that
 * returns the NULL of a failed posix_memalign and then constructs on it
 * (dnnl_primitive_attr_create crashed at the first one this sweep reached),
 * and what it allocates through libstdc++'s operator new throws bad_alloc
 * through runnel's C frames. libgomp (oneDNN's OpenMP runtime) ends the
 * process on any failed allocation by design ("libgomp: Out of memory
 * allocating 216 bytes" when a stream thread first entered a parallel
 * region). Every allocation runnel's code (and libc on its behalf) makes
 * is still failed in turn. */
static void need_cpu(void)
{
    failing_alloc_spare("libdnnl");
    failing_alloc_spare("libstdc++");
    failing_alloc_spare("libgomp");
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    bool present = false;
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        present = present || strcmp(rn_core_device_name(core, i), "CPU") == 0;
    char why[512] = "the CPU device is not built in";
    for (size_t i = 0; i < rn_core_failed_device_count(core); i++) {
        const char *name, *reason;
        if (rn_core_failed_device(core, i, &name, &reason) == RN_OK && strcmp(name, "CPU") == 0)
            snprintf(why, sizeof why, "the CPU device did not start: %s", reason);
    }
    rn_core_free(core);
    if (!present)
        cr_skip_test("%s", why);
}

#define CONV DEB "node/test_conv_with_strides_padding/model.onnx"
/* Constant weights: the CPU device runs it as a oneDNN convolution. */
#define CONV_CONST DEB "pytorch-converted/test_Conv2d/model.onnx"
#define IF         DEB "node/test_if/model.onnx"

/* The light model's compile is long (constant folding of its weights), and
 * slower still under the sanitizers: a sample of its allocations. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LIGHT_PASSES 15
#else
#define LIGHT_PASSES 40
#endif

Test(alloc_failures, conv_sync, .timeout = 600)
{
    sweep(CONV, RUN_SYNC, 0);
}

Test(alloc_failures, conv_async, .timeout = 600)
{
    sweep(CONV, RUN_ASYNC, 0);
}

Test(alloc_failures, if_sync, .timeout = 600)
{
    sweep(IF, RUN_SYNC, 0);
}

Test(alloc_failures, light_model_read_compile, .timeout = 600)
{
    sweep(".cache/onnx-1.22.0/light/light_bvlc_alexnet.onnx", RUN_READ_COMPILE, LIGHT_PASSES);
}

/* The CPU device (oneDNN): compile (primitives, JIT code, weights repacked
 * into oneDNN's layout) and infer of one small model whose convolution runs
 * as a oneDNN primitive, with one thread: every allocation, sync and async. */
Test(alloc_failures, conv_sync_cpu, .timeout = 900)
{
    need_cpu();
    sweep_on(CONV_CONST, "CPU", RUN_SYNC, 0);
}

Test(alloc_failures, conv_async_cpu, .timeout = 900)
{
    need_cpu();
    sweep_on(CONV_CONST, "CPU", RUN_ASYNC, 0);
}
