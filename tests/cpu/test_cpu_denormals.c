/* CPU_DENORMALS_OPTIMIZATION through the public API, on a Conv whose
 * weights are all subnormal (denormals.onnx, make_denormals_model.py):
 * YES (the default) reads them as zero on every thread a primitive runs on
 * (the stream workers, their OpenMP teams, the user's thread of a sync
 * request), so every output is exactly 0; NO keeps them, so the outputs
 * are the ~1e-37 sums REF computes. A sync request runs inline in the
 * user's thread: the device's FTZ/DAZ must not stay in that thread's MXCSR
 * after the request, whichever way the user had set it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xmmintrin.h>

#include "runnel/runnel.h"

#define FTZ_DAZ 0x8040u

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

static const char *model_path(void)
{
    static const char *paths[] = {"tests/cpu/denormals.onnx", "denormals.onnx"};
    for (size_t i = 0; i < 2; i++)
        if (access(paths[i], R_OK) == 0)
            return paths[i];
    cr_assert_fail("tests/cpu/denormals.onnx is missing from the runfiles");
    return NULL;
}

static rn_compiled_model *compile(rn_core *core, const char *device, const char *denormals,
                                  const char *hint)
{
    rn_model *model;
    OK(rn_core_read_model(core, model_path(), &model));
    rn_property p[] = {{"PERFORMANCE_HINT", hint},
                       {"INFERENCE_PRECISION_HINT", "f32"},
                       {"CPU_DENORMALS_OPTIMIZATION", denormals}};
    rn_compiled_model *cm;
    OK(rn_core_compile_model(core, model, device, p, denormals != NULL ? 3 : 2, &cm));
    rn_model_free(model);
    return cm;
}

static void fill(rn_infer_request *r)
{
    rn_tensor *in;
    OK(rn_infer_request_get_input_tensor(r, 0, &in));
    float *x = rn_tensor_data(in);
    size_t n = rn_tensor_element_count(in);
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f + (float)((i * 7919u) % 1000u) / 1000.0f;
}

static float *output_copy(rn_infer_request *r, size_t *count)
{
    rn_tensor *out;
    OK(rn_infer_request_get_output_tensor(r, 0, &out));
    *count = rn_tensor_element_count(out);
    float *copy = malloc(*count * sizeof *copy);
    memcpy(copy, rn_tensor_data(out), *count * sizeof *copy);
    return copy;
}

static atomic_int done;

static void on_done(rn_infer_request *r, rn_status status, void *user)
{
    (void)r, (void)user;
    atomic_store(&done, status == RN_OK ? 1 : -1);
}

/* One run: sync in the calling thread, or async on a stream worker. */
static float *run(rn_compiled_model *cm, bool async, size_t *count)
{
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    fill(r);
    if (async) {
        atomic_store(&done, 0);
        OK(rn_infer_request_set_callback(r, on_done, NULL));
        OK(rn_infer_request_start_async(r));
        OK(rn_infer_request_wait(r));
        cr_assert_eq(atomic_load(&done), 1);
    } else {
        OK(rn_infer_request_infer(r));
    }
    float *y = output_copy(r, count);
    rn_infer_request_free(r);
    return y;
}

/* REF's outputs: the subnormal products summed as they are. */
static float *ref_outputs(rn_core *core, size_t *count)
{
    unsigned csr = _mm_getcsr();
    _mm_setcsr(csr & ~FTZ_DAZ);
    rn_compiled_model *cm = compile(core, "REF", NULL, "LATENCY");
    float *y = run(cm, false, count);
    rn_compiled_model_free(cm);
    _mm_setcsr(csr);
    for (size_t i = 0; i < *count; i++)
        cr_assert(y[i] > 1e-38f && y[i] < 1e-35f, "REF y[%zu] = %g", i, (double)y[i]);
    return y;
}

static void check(const char *denormals, const char *hint, bool async)
{
    rn_core *core;
    OK(rn_core_create(&core));
    size_t n_ref;
    float *want = ref_outputs(core, &n_ref);
    rn_compiled_model *cm = compile(core, "CPU", denormals, hint);
    size_t n;
    float *y = run(cm, async, &n);
    cr_assert_eq(n, n_ref);
    bool flush = denormals == NULL || strcmp(denormals, "YES") == 0;
    for (size_t i = 0; i < n; i++) {
        if (flush)
            cr_assert_eq(y[i], 0.0f, "y[%zu] = %g: a subnormal weight was not read as 0", i,
                         (double)y[i]);
        else
            cr_assert(fabsf(y[i] - want[i]) <= 1e-3f * fabsf(want[i]), "y[%zu] = %g, REF %g", i,
                      (double)y[i], (double)want[i]);
    }
    free(y);
    free(want);
    rn_compiled_model_free(cm);
    rn_core_free(core);
}

Test(cpu_denormals, default_flushes_in_a_sync_request)
{
    check(NULL, "LATENCY", false);
}

Test(cpu_denormals, default_flushes_on_the_stream_workers)
{
    check(NULL, "THROUGHPUT", true);
}

Test(cpu_denormals, latency_team_flushes)
{
    check("YES", "LATENCY", true);
}

Test(cpu_denormals, no_keeps_them_sync_and_async)
{
    check("NO", "LATENCY", false);
    check("NO", "THROUGHPUT", true);
}

/* The user's thread gets its MXCSR back after a sync request, both ways. */
Test(cpu_denormals, a_sync_request_leaves_the_callers_mxcsr)
{
    rn_core *core;
    OK(rn_core_create(&core));
    const char *modes[] = {"YES", "NO"};
    for (int m = 0; m < 2; m++) {
        rn_compiled_model *cm = compile(core, "CPU", modes[m], "LATENCY");
        for (int user = 0; user < 2; user++) {
            unsigned before = user ? _mm_getcsr() | FTZ_DAZ : _mm_getcsr() & ~FTZ_DAZ;
            _mm_setcsr(before);
            size_t n;
            free(run(cm, false, &n));
            unsigned after = _mm_getcsr();
            _mm_setcsr(before & ~FTZ_DAZ);
            cr_assert_eq(after & FTZ_DAZ, before & FTZ_DAZ,
                         "CPU_DENORMALS_OPTIMIZATION=%s: the caller's FTZ/DAZ went from %#x to "
                         "%#x",
                         modes[m], before & FTZ_DAZ, after & FTZ_DAZ);
        }
        rn_compiled_model_free(cm);
    }
    rn_core_free(core);
}
