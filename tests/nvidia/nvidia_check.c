/* The NVIDIA device's on-device check, run on a GPU machine by
 * scripts/nvidia-harness (docs/nvidia.md). No Criterion and no Bazel there:
 * a plain program over the public API (libruntime.so) that loads the plugin
 * with dlopen and prints one line per check and "N passed, N failed".
 *
 *   nvidia_check --plugin libnvidia.so --models DIR [--precision f32|f16|bf16|both|all]
 *                [--only MODEL] [--extra DIR] [--no-dynamic] [--bench [--seconds S]]
 *                [--autotune-ab] [--async-ab [--async-flight N]] [--allow-skip]
 *
 * Checks: each light model of DIR (light_X.onnx, whose input is arange(n)/n,
 * against light_X_output_0.pb, ONNX's output) in f32 (rtol 1e-3), f16
 * (rtol 1e-2; a model whose intermediate values exceed f16's range, by
 * ONNX Runtime's peaks in --extra's light_peaks.txt, runs but is not
 * compared) and bf16 (rtol 1e-1: 8 significant bits against f16's 11, and
 * f32's range: every model compared); with --extra DIR, the models tests/nvidia/export_models.py
 * exported on the machine (torchvision's ResNet-50, a BERT-base encoder)
 * against ONNX Runtime's outputs in each precision, and (unless
 * --no-dynamic; f32 and f16) each compiled
 * once with its dynamic batch and run at batches 1, 7, 32 and 1 again, every
 * row against the reference's, with the programs and weights that made
 * (NVIDIA_PROGRAMS); async requests giving the sync result; the callback receiving
 * the status; cancel, then the request reused; wait_for; a stress of
 * requests in flight. --bench: the exported ResNet-50 and encoder at batch 1
 * and 32, f32 and f16, and at batch 32 in bf16,
 * LATENCY (median latency) and THROUGHPUT (FPS with the optimal requests in
 * flight), and ratio= against the sum of the per-layer times measured with
 * CUDA events in the same run (NVIDIA_STEP_TIMING). --autotune-ab, alone:
 * the exported ResNet-50 at batch 32 (f16 and f32 as --precision selects)
 * compiled with NVIDIA_AUTOTUNE NO and YES, compile times, latencies and
 * their ratio, the tuned engines, the two outputs compared; the tuned model
 * exported and imported without timing again. --async-ab, alone: the async
 * checks with NVIDIA_ASYNC_STAGES NO and YES (and YES with fewer slots than
 * requests), and with --extra and --seconds > 0 the exported ResNet-50 at
 * batch 32 in f16 for THROUGHPUT with NO and YES in the same run (and with
 * N requests in flight: --async-flight).
 *
 * --precision picks the precisions: one of them, both (f32 and f16) or all
 * (the default: f32, f16 and bf16; bf16 is skipped, saying so, on a device
 * that does not offer it, before compute capability 8.0).
 *
 * Exit status: 0 when every check passed; 1 when one failed; 77 when the
 * device is absent (0 with --allow-skip, as on machines without a GPU). */
#include <stdarg.h>
#include <stdbool.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runnel/runnel.h"
#include "third_party/onnx_proto/onnx.pb-c.h"

static int passed, failed, skipped;

/* The precisions checked and their bounds, |got - ref| <= atol + rtol
 * |ref| (the exported models: atol = rtol x the reference's RMS). f16's
 * unit roundoff is 2^-11, bf16's 2^-8: bf16's bounds are 10 times f16's. */
typedef struct precision_bound {
    const char *name;
    double rtol, atol;
} precision_bound;

static const precision_bound bounds[] = {
    {"f32", 1e-3, 1e-5},
    {"f16", 1e-2, 1e-3},
    {"bf16", 1e-1, 1e-2},
};
#define N_PRECISIONS ((int)(sizeof bounds / sizeof bounds[0]))

static const precision_bound *bound_of(const char *precision)
{
    for (int i = 0; i < N_PRECISIONS; i++)
        if (strcmp(bounds[i].name, precision) == 0)
            return &bounds[i];
    return &bounds[0];
}

/* Whether --precision `sel` takes `precision`: itself, "both" (f32 and
 * f16, as before bf16) or "all". */
static bool selected(const char *sel, const char *precision)
{
    if (strcmp(sel, "all") == 0)
        return true;
    if (strcmp(sel, "both") == 0)
        return strcmp(precision, "bf16") != 0;
    return strcmp(sel, precision) == 0;
}

/* Whether the device offers bf16 (OPTIMIZATION_CAPABILITIES has BF16:
 * compute capability 8.0 and later). */
static bool bf16_offered = true;

/* Whether a check in `precision` can run here; else says why (a skip). */
static bool offered(const char *precision, const char *check)
{
    if (strcmp(precision, "bf16") != 0 || bf16_offered)
        return true;
    printf("SKIP %s: this device does not offer bf16 (compute capability 8.0 and later)\n", check);
    skipped++;
    return false;
}

static void result(bool ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void result(bool ok, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %s: ", ok ? "PASS" : "FAIL", name);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    if (ok)
        passed++;
    else
        failed++;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A TensorProto of floats (raw or float_data), with its dims when asked. */
static float *read_tensor(const char *path, size_t *count, rn_partial_shape *shape)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = size > 0 ? malloc((size_t)size + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)size, f) : 0;
    fclose(f);
    if (buf == NULL || got != (size_t)size) {
        free(buf);
        return NULL;
    }
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, (size_t)size, buf);
    free(buf);
    if (t == NULL)
        return NULL;
    size_t n = 1;
    for (size_t d = 0; d < t->n_dims; d++)
        n *= (size_t)t->dims[d];
    if (shape != NULL) {
        shape->rank = (int)t->n_dims;
        for (size_t d = 0; d < t->n_dims && d < sizeof shape->dims / sizeof shape->dims[0]; d++)
            shape->dims[d] = t->dims[d];
    }
    float *out = malloc(n * sizeof *out + 1);
    if (out != NULL && t->has_raw_data && t->raw_data.len == n * sizeof(float))
        memcpy(out, t->raw_data.data, n * sizeof(float));
    else if (out != NULL && t->n_float_data == n)
        memcpy(out, t->float_data, n * sizeof(float));
    else {
        free(out);
        out = NULL;
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    *count = n;
    return out;
}

static float *read_expected(const char *path, size_t *count)
{
    return read_tensor(path, count, NULL);
}

static void fill_input(rn_infer_request *r, float offset)
{
    rn_tensor *in;
    if (rn_infer_request_get_input_tensor(r, 0, &in) != RN_OK)
        return;
    float *x = rn_tensor_data(in);
    size_t n = rn_tensor_element_count(in);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)i / (float)n + offset;
}

/* Largest violation of |a - b| <= atol + rtol |b| (<= 1 passes). */
static double worst(const float *a, const float *b, size_t n, double rtol, double atol)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]) / (atol + rtol * fabs((double)b[i]));
        if (!(e <= w)) /* NaN counts */
            w = isnan(e) ? INFINITY : e;
    }
    return w;
}

static const float *output(rn_infer_request *r, size_t *n)
{
    rn_tensor *out;
    if (rn_infer_request_get_output_tensor(r, 0, &out) != RN_OK)
        return NULL;
    *n = rn_tensor_element_count(out);
    return rn_tensor_data(out);
}

/* NVIDIA_ASYNC_STAGES of the models compile() compiles (NULL: the
 * device's default) and NVIDIA_MAX_SLOTS (NULL: the default). */
static const char *async_stages, *max_slots;

static rn_compiled_model *compile(rn_core *core, rn_model *m, const char *precision,
                                  const char *hint)
{
    rn_property p[4] = {{"INFERENCE_PRECISION_HINT", precision}, {"PERFORMANCE_HINT", hint}};
    size_t n = 2;
    if (async_stages != NULL)
        p[n++] = (rn_property){"NVIDIA_ASYNC_STAGES", async_stages};
    if (max_slots != NULL)
        p[n++] = (rn_property){"NVIDIA_MAX_SLOTS", max_slots};
    rn_compiled_model *cm = NULL;
    if (rn_core_compile_model(core, m, "NVIDIA", p, n, &cm) != RN_OK)
        return NULL;
    return cm;
}

/* Three runs (eager as warm-up, captured into a CUDA graph, replayed), each
 * compared with `want`: false when one fails; the largest violation in *w. */
static bool run_three(rn_infer_request *r, const float *want, size_t n_want, double rtol,
                      double atol, const float **got, size_t *n, double *w)
{
    bool ran = true;
    for (int run = 0; run < 3 && ran; run++) {
        ran = rn_infer_request_infer(r) == RN_OK && (*got = output(r, n)) != NULL && *n == n_want;
        double e = ran ? worst(*got, want, *n, rtol, atol) : INFINITY;
        *w = e > *w ? e : *w;
    }
    return ran;
}

/* light_peaks.txt of export_models.py: NAME PEAK per line. */
static char peaks_path[1024];

static double light_peak(const char *name)
{
    FILE *f = peaks_path[0] ? fopen(peaks_path, "r") : NULL;
    char n[256];
    double v, found = 0;
    while (f != NULL && fscanf(f, "%255s %lf", n, &v) == 2)
        if (strcmp(n, name) == 0)
            found = v;
    if (f != NULL)
        fclose(f);
    return found;
}

static void check_model(rn_core *core, const char *dir, const char *name, const char *precision)
{
    char path[1024], want_path[1024], check[256];
    snprintf(path, sizeof path, "%s/light_%s.onnx", dir, name);
    snprintf(want_path, sizeof want_path, "%s/light_%s_output_0.pb", dir, name);
    snprintf(check, sizeof check, "model_%s_%s", name, precision);
    if (!offered(precision, check))
        return;
    size_t n_want = 0;
    float *want = read_expected(want_path, &n_want);
    rn_model *m = NULL;
    if (want == NULL || rn_core_read_model(core, path, &m) != RN_OK) {
        result(false, check, "cannot read %s or %s: %s", path, want_path, rn_last_error());
        free(want);
        return;
    }
    double t0 = now_s();
    rn_compiled_model *cm = compile(core, m, precision, "LATENCY");
    double compile_s = now_s() - t0;
    rn_infer_request *r = NULL;
    if (cm == NULL || rn_compiled_model_create_infer_request(cm, &r) != RN_OK) {
        result(false, check, "compile: %s", rn_last_error());
    } else {
        fill_input(r, 0.0f);
        bool f16 = strcmp(precision, "f16") == 0;
        double rtol = bound_of(precision)->rtol, atol = bound_of(precision)->atol, w = 0;
        size_t n = 0;
        const float *got = NULL;
        bool ran = run_three(r, want, n_want, rtol, atol, &got, &n, &w);
        /* The light models' weights are synthetic: in several of them
         * intermediate values reach 1e19 and more (ONNX Runtime's peaks,
         * measured on the machine by export_models.py), which no f16 value
         * holds (65504 at most). Those still run in f16, so that every
         * kernel is exercised, but cannot be compared. bf16 holds them:
         * every model is compared (their outputs, mostly Softmax over equal
         * logits, stayed within 1e-4 of the bf16 bound in an emulation of
         * bf16 storage with ONNX Runtime, bench/LOG.md). */
        double peak = light_peak(name);
        if (!ran) {
            result(false, check, "infer: %zu outputs (ONNX: %zu): %s", n, n_want, rn_last_error());
        } else if (f16 && peak > 65504.0) {
            printf("SKIP %s: ran; not compared: its intermediate values reach %.3g in ONNX "
                   "Runtime, beyond f16's range (65504)\n",
                   check, peak);
            skipped++;
        } else
            result(w <= 1.0, check,
                   "worst |diff| / (%g + %g |ref|) = %.3f over 3 runs, compiled in %.2f s", atol,
                   rtol, w, compile_s);
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    free(want);
}

/* The root mean square of the reference (its typical magnitude). */
static double rms_of(const float *want, size_t n)
{
    double rms = 0;
    for (size_t i = 0; i < n; i++)
        rms += (double)want[i] * want[i];
    return sqrt(rms / (double)(n ? n : 1));
}

/* Rows of `got` ([rows, classes]) whose top-1 class is that of the
 * reference's row (row b against want's row b % ref_rows). */
static int64_t same_top1(const float *got, const float *want, int64_t rows, int64_t ref_rows,
                         int64_t classes)
{
    int64_t same = 0;
    for (int64_t b = 0; b < rows; b++) {
        const float *g = got + b * classes, *e = want + (b % ref_rows) * classes;
        int64_t ag = 0, ae = 0;
        for (int64_t c = 1; c < classes; c++) {
            ag = g[c] > g[ag] ? c : ag;
            ae = e[c] > e[ae] ? c : ae;
        }
        same += ag == ae;
    }
    return same;
}

/* ---- models exported on the GPU machine (tests/nvidia/export_models.py) ---- */

/* Reads NAME.onnx and reshapes its input to the dims of NAME_input_0.pb
 * with the batch replaced by `batch` (0: as the file has it). */
static rn_model *read_exported(rn_core *core, const char *dir, const char *name, int64_t batch,
                               rn_partial_shape *shape)
{
    char path[1024];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/%s_input_0.pb", dir, name);
    float *x = read_tensor(path, &n, shape);
    if (x == NULL) {
        rn_set_error(RN_INVALID_ARG, "cannot read %s", path);
        return NULL;
    }
    free(x);
    if (batch > 0)
        shape->dims[0] = batch;
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    rn_model *m = NULL;
    rn_port port;
    if (rn_core_read_model(core, path, &m) != RN_OK)
        return NULL;
    if (rn_model_input(m, 0, &port) != RN_OK || rn_model_reshape(m, port.name, shape) != RN_OK) {
        rn_model_free(m);
        return NULL;
    }
    return m;
}

/* f32 within rtol 1e-3, f16 within 1e-2, bf16 within 1e-1, each with atol =
 * rtol x the RMS of ONNX Runtime's reference (its typical magnitude); for a
 * classifier also the top-1 class of every row (reported in bf16, not
 * required: within the bound a row whose two best classes are further
 * apart than twice it keeps its class, so top-1 adds nothing there, and a
 * closer row may change class within bf16's wider bound). */
static void check_exported(rn_core *core, const char *dir, const char *name, const char *precision)
{
    char path[1024], check[512];
    snprintf(check, sizeof check, "exported_%s_%s", name, precision);
    if (!offered(precision, check))
        return;
    size_t n_in = 0, n_want = 0;
    rn_partial_shape shape;
    snprintf(path, sizeof path, "%s/%s_input_0.pb", dir, name);
    float *x = read_tensor(path, &n_in, &shape);
    snprintf(path, sizeof path, "%s/%s_output_0.pb", dir, name);
    rn_partial_shape yshape;
    float *want = read_tensor(path, &n_want, &yshape);
    rn_model *m = x != NULL && want != NULL ? read_exported(core, dir, name, 0, &shape) : NULL;
    if (m == NULL) {
        result(false, check, "cannot read the exported model or its data in %s: %s", dir,
               rn_last_error());
        free(x);
        free(want);
        return;
    }
    double t0 = now_s();
    rn_compiled_model *cm = compile(core, m, precision, "LATENCY");
    double compile_s = now_s() - t0;
    rn_infer_request *r = NULL;
    rn_tensor *in = NULL;
    if (cm == NULL || rn_compiled_model_create_infer_request(cm, &r) != RN_OK ||
        rn_infer_request_get_input_tensor(r, 0, &in) != RN_OK ||
        rn_tensor_element_count(in) != n_in) {
        result(false, check, "compile: %s", rn_last_error());
    } else {
        memcpy(rn_tensor_data(in), x, n_in * sizeof *x);
        double rtol = bound_of(precision)->rtol, rms = rms_of(want, n_want), w = 0;
        bool top1_required = strcmp(precision, "bf16") != 0;
        size_t n = 0;
        const float *got = NULL;
        bool ran = run_three(r, want, n_want, rtol, rtol * rms, &got, &n, &w);
        if (!ran) {
            result(false, check, "infer: %zu outputs (ONNX Runtime: %zu): %s", n, n_want,
                   rn_last_error());
        } else {
            /* Top-1 of each row when the output is [batch, classes]. */
            int rows = 0, same = 0;
            if (yshape.rank == 2 && yshape.dims[1] > 1) {
                rows = (int)yshape.dims[0];
                same = (int)same_top1(got, want, rows, rows, yshape.dims[1]);
            }
            result(w <= 1.0 && (same == rows || !top1_required), check,
                   "worst |diff| / (%g rms + %g |ref|) = %.3f over 3 runs (rms %.3g), top-1 "
                   "%d/%d rows%s, compiled in %.2f s",
                   rtol, rtol, w, rms, same, rows, top1_required ? "" : " (not required)",
                   compile_s);
        }
    }
    rn_infer_request_free(r);
    rn_compiled_model_free(cm);
    rn_model_free(m);
    free(x);
    free(want);
}

/* ---- dynamic batch (docs/nvidia.md, "Dynamic batch") ---- */

/* NVIDIA_PROGRAMS of a compiled model, parsed; false when it cannot be read. */
typedef struct programs_line {
    unsigned long long programs, builds, hits, bytes, uploads, reuses;
    int live, cached, weights;
    char text[256];
} programs_line;

static bool read_programs(rn_compiled_model *cm, programs_line *p)
{
    memset(p, 0, sizeof *p);
    if (rn_compiled_model_get_property(cm, "NVIDIA_PROGRAMS", p->text, sizeof p->text) != RN_OK) {
        snprintf(p->text, sizeof p->text, "(NVIDIA_PROGRAMS: %s)", rn_last_error());
        return false;
    }
    return sscanf(p->text,
                  "programs=%llu live=%d shape_builds=%llu shape_hits=%llu shape_cached=%d "
                  "weights=%d bytes=%llu uploads=%llu reuses=%llu",
                  &p->programs, &p->live, &p->builds, &p->hits, &p->cached, &p->weights, &p->bytes,
                  &p->uploads, &p->reuses) == 9;
}

/* Binds to input 0 of r an input of `batch` rows, row i the reference
 * input's row i % its rows; the tensor (the request reads it in place) in
 * *tensor, for the caller to free after the request. */
static rn_status batch_input(rn_infer_request *r, rn_tensor **tensor, int64_t batch, const float *x,
                             const rn_partial_shape *xs)
{
    size_t in_row = 1;
    for (int d = 1; d < xs->rank; d++)
        in_row *= (size_t)xs->dims[d];
    int64_t dims[RN_MAX_RANK];
    memcpy(dims, xs->dims, sizeof dims);
    dims[0] = batch;
    rn_status st = rn_tensor_create(RN_F32, dims, (size_t)xs->rank, tensor);
    if (st != RN_OK)
        return st;
    float *d = rn_tensor_data(*tensor);
    for (int64_t b = 0; b < batch; b++)
        memcpy(d + (size_t)b * in_row, x + (size_t)(b % xs->dims[0]) * in_row, in_row * sizeof *d);
    return rn_infer_request_set_input_tensor(r, 0, *tensor);
}

/* The output rows of r's last run against the reference's (row b against
 * row b % its rows; the rows of these models do not see each other): the
 * largest violation (INFINITY when the output is missing or of another
 * size: *n says how many values came), the row where, and how many rows
 * keep the reference's top-1 class when the output is [batch, classes]. */
typedef struct rows_result {
    double worst;
    int64_t worst_row, top_same, top_rows;
    size_t n;
} rows_result;

static rows_result compare_rows(rn_infer_request *r, int64_t batch, const float *want,
                                const rn_partial_shape *ys, double rtol, double atol)
{
    rows_result q = {.worst = INFINITY};
    size_t out_row = 1;
    for (int d = 1; d < ys->rank; d++)
        out_row *= (size_t)ys->dims[d];
    const float *got = output(r, &q.n);
    if (got == NULL || q.n != (size_t)batch * out_row)
        return q;
    q.worst = 0;
    for (int64_t b = 0; b < batch; b++) {
        double e = worst(got + (size_t)b * out_row, want + (size_t)(b % ys->dims[0]) * out_row,
                         out_row, rtol, atol);
        if (!(e <= q.worst))
            q.worst = e, q.worst_row = b;
    }
    if (ys->rank == 2 && ys->dims[1] > 1) {
        q.top_rows = batch;
        q.top_same = same_top1(got, want, batch, ys->dims[0], ys->dims[1]);
    }
    return q;
}

/* One batch of the dynamic model run three times (eager, captured,
 * replayed), each run's rows compared. */
static void dynamic_batch(rn_infer_request *r, rn_tensor **tensor, const char *check, int64_t batch,
                          const float *x, const rn_partial_shape *xs, const float *want,
                          const rn_partial_shape *ys, double rtol, double atol)
{
    size_t out_row = 1;
    for (int d = 1; d < ys->rank; d++)
        out_row *= (size_t)ys->dims[d];
    rn_status st = batch_input(r, tensor, batch, x, xs);
    double w = 0, t0 = now_s(), first_s = 0;
    rows_result q = {0}, worst_q = {0};
    for (int run = 0; run < 3 && st == RN_OK; run++) {
        if ((st = rn_infer_request_infer(r)) != RN_OK)
            break;
        if (run == 0)
            first_s = now_s() - t0;
        q = compare_rows(r, batch, want, ys, rtol, atol);
        if (q.worst == INFINITY && q.n != (size_t)batch * out_row) {
            st = RN_SHAPE_MISMATCH;
            break;
        }
        if (!(q.worst <= w))
            w = q.worst, worst_q = q;
    }
    if (st != RN_OK)
        result(false, check, "batch %lld: %s (output %zu values, expected %lld x %zu)",
               (long long)batch, st == RN_SHAPE_MISMATCH ? "wrong output size" : rn_last_error(),
               q.n, (long long)batch, out_row);
    else
        result(w <= 1.0 && q.top_same == q.top_rows, check,
               "batch %lld: worst |diff| / (%g + %g |ref|) = %.3f (row %lld) over 3 runs, top-1 "
               "%lld/%lld rows, first run (compiles the shape's program) %.2f s",
               (long long)batch, atol, rtol, w, (long long)worst_q.worst_row, (long long)q.top_same,
               (long long)q.top_rows, first_s);
}

/* Requests of different batches in flight together on a THROUGHPUT
 * compile: each one's program is compiled as it starts (sharing the
 * weights), then they run together on their own slots and streams; two
 * rounds, every row compared. */
#define N_SHAPES 4

static void dynamic_concurrent(rn_core *core, rn_model *m, const char *check, const float *x,
                               const rn_partial_shape *xs, const float *want,
                               const rn_partial_shape *ys, double rtol, double atol)
{
    const int64_t batches[N_SHAPES] = {2, 3, 5, 7};
    rn_compiled_model *cm = compile(core, m, "f32", "THROUGHPUT");
    rn_infer_request *r[N_SHAPES] = {0};
    rn_tensor *t[N_SHAPES] = {0};
    rn_status st = cm != NULL ? RN_OK : RN_DEVICE_ERROR;
    for (int i = 0; i < N_SHAPES && st == RN_OK; i++)
        if ((st = rn_compiled_model_create_infer_request(cm, &r[i])) == RN_OK)
            st = batch_input(r[i], &t[i], batches[i], x, xs);
    char text[1024] = "";
    size_t used = 0;
    double w = 0;
    int bad = -1;
    for (int round = 0; round < 2 && st == RN_OK; round++) {
        for (int i = 0; i < N_SHAPES && st == RN_OK; i++)
            st = rn_infer_request_start_async(r[i]);
        for (int i = 0; i < N_SHAPES; i++) {
            rn_status ws = r[i] != NULL ? rn_infer_request_wait(r[i]) : RN_OK;
            if (ws != RN_OK && st == RN_OK)
                st = ws, bad = i;
        }
        for (int i = 0; i < N_SHAPES && st == RN_OK; i++) {
            rows_result q = compare_rows(r[i], batches[i], want, ys, rtol, atol);
            w = q.worst > w || isnan(q.worst) ? q.worst : w;
            if (round == 1 && used < sizeof text)
                used += (size_t)snprintf(text + used, sizeof text - used,
                                         "%sbatch %lld: %.3f (top-1 %lld/%lld)", i ? ", " : "",
                                         (long long)batches[i], q.worst, (long long)q.top_same,
                                         (long long)q.top_rows);
            if (q.top_same != q.top_rows)
                w = INFINITY;
        }
    }
    programs_line pl;
    bool parsed = cm != NULL && read_programs(cm, &pl);
    if (st != RN_OK)
        result(false, check, "%s%s",
               bad >= 0 ? "a request's run: " : "compile or start: ", rn_last_error());
    else
        result(w <= 1.0 && parsed && pl.programs == N_SHAPES, check,
               "batches 2, 3, 5, 7 in flight together, 2 rounds: worst |diff| / (%g + %g |ref|) "
               "%s; %llu programs (want %d); NVIDIA_PROGRAMS %s",
               atol, rtol, text, parsed ? pl.programs : 0ULL, N_SHAPES, pl.text);
    for (int i = 0; i < N_SHAPES; i++) {
        rn_infer_request_free(r[i]);
        rn_tensor_free(t[i]);
    }
    rn_compiled_model_free(cm);
}

/* An exported model compiled once with its dynamic batch, run at batches 1,
 * 7, 32 and 1 again (the shape cache) against ONNX Runtime's batch-2
 * reference; then the programs it compiled (one per batch, the last from
 * the cache) and the weights they share (one copy). */
static void check_dynamic(rn_core *core, const char *dir, const char *name, const char *precision)
{
    char path[1024], check[512];
    snprintf(check, sizeof check, "dynamic_%s_%s", name, precision);
    size_t n_in = 0, n_want = 0;
    rn_partial_shape xs, ys;
    snprintf(path, sizeof path, "%s/%s_input_0.pb", dir, name);
    float *x = read_tensor(path, &n_in, &xs);
    snprintf(path, sizeof path, "%s/%s_output_0.pb", dir, name);
    float *want = read_tensor(path, &n_want, &ys);
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    rn_model *m = NULL;
    rn_port port;
    if (x == NULL || want == NULL || rn_core_read_model(core, path, &m) != RN_OK ||
        rn_model_input(m, 0, &port) != RN_OK) {
        result(false, check, "cannot read %s or its data: %s", path, rn_last_error());
        goto done;
    }
    if (port.shape.rank != xs.rank || port.shape.dims[0] >= 0) {
        result(false, check, "input '%s' has no dynamic batch (rank %d, dim 0 %lld)", port.name,
               port.shape.rank, port.shape.rank > 0 ? (long long)port.shape.dims[0] : -2LL);
        goto done;
    }
    double t0 = now_s();
    rn_compiled_model *cm = compile(core, m, precision, "LATENCY");
    double compile_s = now_s() - t0;
    rn_infer_request *r = NULL;
    if (cm == NULL || rn_compiled_model_create_infer_request(cm, &r) != RN_OK) {
        result(false, check, "compile with the dynamic batch: %s", rn_last_error());
        rn_compiled_model_free(cm);
        goto done;
    }
    printf("%s: compiled with input %s dynamic in %.2f s\n", check, port.name, compile_s);
    bool f32 = strcmp(precision, "f32") == 0;
    double rtol = bound_of(precision)->rtol, rms = rms_of(want, n_want);
    const int64_t batches[] = {1, 7, 32, 1};
    programs_line first = {0}, last = {0};
    rn_tensor *inputs[4] = {0};
    for (size_t k = 0; k < sizeof batches / sizeof batches[0]; k++) {
        char name_b[600];
        snprintf(name_b, sizeof name_b, "%s_b%lld%s", check, (long long)batches[k],
                 k == 3 ? "_again" : "");
        dynamic_batch(r, &inputs[k], name_b, batches[k], x, &xs, want, &ys, rtol, rtol * rms);
        if (k == 0)
            read_programs(cm, &first);
    }
    bool parsed = read_programs(cm, &last);
    printf("%s: NVIDIA_PROGRAMS after batch 1: %s\n", check, first.text);
    printf("%s: NVIDIA_PROGRAMS after 1, 7, 32, 1: %s\n", check, last.text);
    /* One program per batch (3), the return to 1 from the cache; the
     * weights uploaded once: what batch 1 put on the device, give or take
     * the constants folded for a batch (a mask of its rows). */
    /* Shared: no second copy of the weights (constants that folding made
     * for one shape, a batch's token-type embeddings, are that shape's). */
    bool shared = last.bytes < first.bytes + first.bytes / 2 && last.reuses > 0;
    result(parsed && last.programs == 3 && shared, check,
           "%llu programs for batches 1, 7, 32, 1 (want 3), %llu shape-cache builds, %llu hits; "
           "weights %llu bytes after batch 1, %llu after all (want under 1.5x: shared), "
           "%llu uploads, %llu reuses",
           last.programs, last.builds, last.hits, first.bytes, last.bytes, last.uploads,
           last.reuses);
    rn_infer_request_free(r);
    for (int k = 0; k < 4; k++)
        rn_tensor_free(inputs[k]);
    rn_compiled_model_free(cm);
    if (f32) {
        char name_c[600];
        snprintf(name_c, sizeof name_c, "%s_concurrent", check);
        dynamic_concurrent(core, m, name_c, x, &xs, want, &ys, rtol, rtol * rms);
    }
done:
    rn_model_free(m);
    free(x);
    free(want);
}

/* ---- async, callbacks, cancel, stress ---- */

typedef struct {
    atomic_int calls;
    atomic_int status;
} callback_state;

static void on_done(rn_infer_request *r, rn_status st, void *user)
{
    (void)r;
    callback_state *c = user;
    atomic_store(&c->status, (int)st);
    atomic_fetch_add(&c->calls, 1);
}

#define N_FLIGHT   4
#define MAX_FLIGHT 8

/* `base` with check_async's tag (the properties it ran with). */
static const char *tagged(char *buf, size_t size, const char *base, const char *tag)
{
    snprintf(buf, size, "%s%s", base, tag);
    return buf;
}

/* Async runs of light SqueezeNet, f32, `flight` requests (up to
 * MAX_FLIGHT): each check named with `tag`. */
static void check_async(rn_core *core, const char *dir, int flight, const char *tag)
{
    char nm[160];
    char path[1024];
    snprintf(path, sizeof path, "%s/light_squeezenet.onnx", dir);
    rn_model *m = NULL;
    if (rn_core_read_model(core, path, &m) != RN_OK) {
        result(false, tagged(nm, sizeof nm, "async", tag), "cannot read %s: %s", path,
               rn_last_error());
        return;
    }
    rn_compiled_model *cm = compile(core, m, "f32", "THROUGHPUT");
    rn_infer_request *r[MAX_FLIGHT] = {0};
    float *ref[MAX_FLIGHT] = {0};
    size_t n = 0;
    bool ok = cm != NULL;
    for (int i = 0; i < flight && ok; i++)
        ok = rn_compiled_model_create_infer_request(cm, &r[i]) == RN_OK;
    if (!ok) {
        result(false, tagged(nm, sizeof nm, "async", tag), "compile: %s", rn_last_error());
        goto done;
    }
    /* References: sync runs of each request's input. */
    for (int i = 0; i < flight; i++) {
        fill_input(r[i], 0.1f * (float)i);
        const float *o;
        if (rn_infer_request_infer(r[i]) != RN_OK || (o = output(r[i], &n)) == NULL) {
            result(false, tagged(nm, sizeof nm, "async", tag), "sync infer: %s", rn_last_error());
            goto done;
        }
        ref[i] = malloc(n * sizeof(float));
        memcpy(ref[i], o, n * sizeof(float));
    }
    /* 1: requests in flight together give their sync results. */
    double w = 0;
    bool started = true;
    for (int i = 0; i < flight; i++)
        started &= rn_infer_request_start_async(r[i]) == RN_OK;
    for (int i = 0; i < flight; i++) {
        started &= rn_infer_request_wait(r[i]) == RN_OK;
        const float *o = output(r[i], &n);
        double e = o ? worst(o, ref[i], n, 1e-5, 1e-6) : INFINITY;
        w = e > w ? e : w;
    }
    result(started && w <= 1.0, tagged(nm, sizeof nm, "async_matches_sync", tag),
           "%d in flight, worst %.3f (%s)", flight, w, started ? "ok" : rn_last_error());
    /* 2: the callback receives the status, before wait returns. */
    callback_state cb = {0};
    rn_infer_request_set_callback(r[0], on_done, &cb);
    rn_status st = rn_infer_request_start_async(r[0]);
    if (st == RN_OK)
        st = rn_infer_request_wait(r[0]);
    result(st == RN_OK && atomic_load(&cb.calls) == 1 && atomic_load(&cb.status) == RN_OK,
           tagged(nm, sizeof nm, "callback_gets_status", tag), "calls %d, status %d",
           atomic_load(&cb.calls), atomic_load(&cb.status));
    rn_infer_request_set_callback(r[0], NULL, NULL);
    /* 3: wait_for with no time left says not ready or done; wait finishes. */
    st = rn_infer_request_start_async(r[1]);
    rn_status early = rn_infer_request_wait_for(r[1], 0);
    rn_status late = rn_infer_request_wait(r[1]);
    result(st == RN_OK && (early == RN_RESULT_NOT_READY || early == RN_OK) && late == RN_OK,
           tagged(nm, sizeof nm, "wait_for", tag), "wait_for(0) %s, wait %s", rn_status_name(early),
           rn_status_name(late));
    /* 4: cancel: the run ends cancelled or complete, and the request runs again. */
    st = rn_infer_request_start_async(r[2]);
    rn_infer_request_cancel(r[2]);
    rn_status end = rn_infer_request_wait(r[2]);
    rn_status again = rn_infer_request_infer(r[2]);
    const float *o = output(r[2], &n);
    double e = o ? worst(o, ref[2], n, 1e-5, 1e-6) : INFINITY;
    result(st == RN_OK && (end == RN_OK || end == RN_CANCELLED) && again == RN_OK && e <= 1.0,
           tagged(nm, sizeof nm, "cancel_then_reuse", tag),
           "cancelled run %s, next run %s, worst %.3f", rn_status_name(end), rn_status_name(again),
           e);
    /* 5: stress: rounds of every request in flight, results checked at the end. */
    double t0 = now_s();
    int rounds = 200, errors = 0;
    for (int k = 0; k < rounds; k++) {
        for (int i = 0; i < flight; i++)
            errors += rn_infer_request_start_async(r[i]) != RN_OK;
        for (int i = 0; i < flight; i++)
            errors += rn_infer_request_wait(r[i]) != RN_OK;
    }
    double secs = now_s() - t0;
    w = 0;
    for (int i = 0; i < flight; i++) {
        o = output(r[i], &n);
        e = o ? worst(o, ref[i], n, 1e-5, 1e-6) : INFINITY;
        w = e > w ? e : w;
    }
    result(errors == 0 && w <= 1.0, tagged(nm, sizeof nm, "stress", tag),
           "%d runs, %d errors, worst %.3f, %.0f runs/s", rounds * flight, errors, w,
           rounds * flight / secs);
done:
    for (int i = 0; i < flight; i++) {
        rn_infer_request_free(r[i]);
        free(ref[i]);
    }
    rn_compiled_model_free(cm);
    rn_model_free(m);
}

/* ---- benchmarks ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One model at one batch and precision: LATENCY (one request, median of
 * 50 runs), the sum of the steps' device times measured one by one with
 * CUDA events (NVIDIA_STEP_TIMING, eager launches: each layer alone on the
 * stream), and THROUGHPUT with its optimal number of requests in flight. */
static void bench_one(rn_core *core, rn_model *m, const char *label, int batch,
                      const char *precision, size_t want_out, double seconds)
{
    rn_compiled_model *lat = compile(core, m, precision, "LATENCY");
    rn_infer_request *r = NULL;
    if (lat == NULL || rn_compiled_model_create_infer_request(lat, &r) != RN_OK) {
        printf("bench %s batch=%d %s: %s\n", label, batch, precision, rn_last_error());
        rn_compiled_model_free(lat);
        return;
    }
    fill_input(r, 0.0f);
    for (int i = 0; i < 10; i++)
        rn_infer_request_infer(r);
    size_t n_out = 0;
    if (output(r, &n_out) == NULL || n_out != want_out) {
        printf("bench %s batch=%d %s: %zu outputs, not %zu: %s\n", label, batch, precision, n_out,
               want_out, rn_last_error());
        rn_infer_request_free(r);
        rn_compiled_model_free(lat);
        return;
    }
    double times[50];
    for (int i = 0; i < 50; i++) {
        double t0 = now_s();
        rn_infer_request_infer(r);
        times[i] = now_s() - t0;
    }
    qsort(times, 50, sizeof times[0], cmp_double);
    rn_property on = {"NVIDIA_STEP_TIMING", "YES"};
    rn_compiled_model_set_property(lat, &on, 1);
    double layers[20];
    char buf[64];
    for (int i = 0; i < 20; i++) {
        rn_infer_request_infer(r);
        rn_compiled_model_get_property(lat, "NVIDIA_STEP_TIME_US", buf, sizeof buf);
        layers[i] = atof(buf) * 1e-6;
    }
    qsort(layers, 20, sizeof layers[0], cmp_double);
    char profile[1024] = "";
    rn_compiled_model_get_property(lat, "NVIDIA_STEP_PROFILE", profile, sizeof profile);
    /* The same with the input in a host tensor of NVIDIA's context (pinned
     * memory: the DMA engine reads it without the staging copy), as a user
     * who allocates inputs from the context gets it. */
    double pinned_ms = 0;
    rn_remote_context *ctx = NULL;
    rn_tensor *in = NULL, *host = NULL;
    rn_property off = {"NVIDIA_STEP_TIMING", "NO"};
    rn_compiled_model_set_property(lat, &off, 1);
    size_t n_before = 0;
    const float *o = output(r, &n_before);
    float *before = o != NULL ? malloc(n_before * sizeof *before) : NULL;
    if (before != NULL)
        memcpy(before, o, n_before * sizeof *before);
    if (before != NULL && rn_core_get_default_context(core, "NVIDIA", &ctx) == RN_OK &&
        rn_infer_request_get_input_tensor(r, 0, &in) == RN_OK &&
        rn_remote_context_create_host_tensor(ctx, rn_tensor_element_type(in), rn_tensor_dims(in),
                                             rn_tensor_rank(in), &host) == RN_OK &&
        rn_tensor_copy(in, host) == RN_OK &&
        rn_infer_request_set_input_tensor(r, 0, host) == RN_OK) {
        double pt[50];
        rn_infer_request_infer(r);
        for (int i = 0; i < 50; i++) {
            double t0 = now_s();
            rn_infer_request_infer(r);
            pt[i] = now_s() - t0;
        }
        qsort(pt, 50, sizeof pt[0], cmp_double);
        pinned_ms = pt[25] * 1e3;
        size_t n_after = 0;
        const float *after = output(r, &n_after);
        bool same = after != NULL && n_after == n_before &&
                    memcmp(after, before, n_before * sizeof *before) == 0;
        char name[160];
        snprintf(name, sizeof name, "pinned input %s batch=%d %s", label, batch, precision);
        result(same, name, "%s",
               same ? "the output of a pinned host tensor equals the default's" : "outputs differ");
    } else {
        printf("bench %s: no pinned host tensor: %s\n", label, rn_last_error());
    }
    free(before);
    double limit_fps = layers[10] > 0 ? batch / layers[10] : 0;
    rn_infer_request_free(r);
    rn_tensor_free(host);
    rn_remote_context_free(ctx);
    rn_compiled_model_free(lat);
    rn_compiled_model *tp = compile(core, m, precision, "THROUGHPUT");
    rn_infer_request *rs[16] = {0};
    int nr = 4;
    if (tp != NULL && rn_compiled_model_get_property(tp, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", buf,
                                                     sizeof buf) == RN_OK)
        nr = atoi(buf) > 0 && atoi(buf) <= 16 ? atoi(buf) : 4;
    for (int i = 0; tp != NULL && i < nr; i++)
        if (rn_compiled_model_create_infer_request(tp, &rs[i]) == RN_OK)
            fill_input(rs[i], 0.0f);
    long runs = 0;
    double t0 = now_s(), elapsed = 0;
    while (tp != NULL && rs[nr - 1] != NULL && (elapsed = now_s() - t0) < seconds) {
        for (int i = 0; i < nr; i++)
            rn_infer_request_start_async(rs[i]);
        for (int i = 0; i < nr; i++)
            rn_infer_request_wait(rs[i]);
        runs += nr;
    }
    double fps = elapsed > 0 ? (double)runs * batch / elapsed : 0;
    printf("bench %s batch=%d %s LATENCY median=%.3f ms fps=%.1f | THROUGHPUT requests=%d "
           "fps=%.1f | steps-sum=%.3f ms (fps %.1f) ratio=%.3f\n",
           label, batch, precision, times[25] * 1e3, batch / times[25], nr, fps, layers[10] * 1e3,
           limit_fps, limit_fps > 0 ? fps / limit_fps : 0);
    printf("profile %s batch=%d %s: LATENCY with a pinned input tensor median=%.3f ms | last "
           "timed run: %s\n",
           label, batch, precision, pinned_ms, profile);
    fflush(stdout);
    for (int i = 0; i < nr; i++)
        rn_infer_request_free(rs[i]);
    rn_compiled_model_free(tp);
}

/* ResNet-50 and the encoder exported on the machine (--extra), batch 1 and
 * 32, f32 and f16, and batch 32 in bf16 (where the device offers it); the
 * light ResNet-50 at batch 1 without them. */
static void bench(rn_core *core, const char *dir, const char *extra, double seconds,
                  const char *only, const char *precision)
{
    const char *precisions[] = {"f32", "f16", "bf16"};
    int batches[] = {1, 32};
    const char *names[] = {"tv_resnet50", "bert_encoder"};
    for (int k = 0; k < 2; k++)
        for (int pi = 0; pi < 3; pi++)
            for (int bi = 0; bi < 2; bi++) {
                if ((only != NULL && strcmp(only, names[k]) != 0) ||
                    !selected(precision, precisions[pi]) ||
                    (pi == 2 && (batches[bi] != 32 || !bf16_offered)))
                    continue;
                rn_partial_shape shape;
                rn_model *m = extra != NULL
                                  ? read_exported(core, extra, names[k], batches[bi], &shape)
                                  : NULL;
                if (m == NULL) {
                    printf("bench %s: not exported here (%s)\n", names[k],
                           extra ? rn_last_error() : "no --extra");
                    if (k == 0 && pi == 0 && bi == 0) {
                        char path[1024];
                        snprintf(path, sizeof path, "%s/light_resnet50.onnx", dir);
                        if (rn_core_read_model(core, path, &m) == RN_OK) {
                            bench_one(core, m, "light_resnet50", 1, "f32", 1000, seconds);
                            rn_model_free(m);
                        }
                    }
                    break;
                }
                size_t want = 1;
                for (int d = 0; d < shape.rank; d++)
                    want *= (size_t)shape.dims[d];
                /* ResNet: [batch, 1000]; the encoder: as its input. */
                if (k == 0)
                    want = (size_t)batches[bi] * 1000;
                bench_one(core, m, names[k], batches[bi], precisions[pi], want, seconds);
                rn_model_free(m);
            }
}

/* ---- NVIDIA_AUTOTUNE A/B (--autotune-ab) ---- */

/* Compiled for LATENCY with NVIDIA_AUTOTUNE `tune`; *seconds its compile. */
static rn_compiled_model *compile_tune(rn_core *core, rn_model *m, const char *precision,
                                       const char *tune, double *seconds)
{
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", precision},
                       {"PERFORMANCE_HINT", "LATENCY"},
                       {"NVIDIA_AUTOTUNE", tune}};
    rn_compiled_model *cm = NULL;
    double t0 = now_s();
    rn_status st = rn_core_compile_model(core, m, "NVIDIA", p, 3, &cm);
    *seconds = now_s() - t0;
    return st == RN_OK ? cm : NULL;
}

/* The tuned model exported and imported with NVIDIA_AUTOTUNE YES: the
 * blob carries the choices, so the import times no candidate (unless the
 * compile ran out of its budget: those graphs tune again). */
static void autotune_import(rn_core *core, const rn_compiled_model *tuned, const char *name,
                            double compile_s, const char *engines)
{
    char check[128];
    snprintf(check, sizeof check, "%s export+import", name);
    void *blob = NULL;
    size_t size = 0;
    rn_compiled_model *im = NULL;
    rn_property p[] = {{"NVIDIA_AUTOTUNE", "YES"}, {"PERFORMANCE_HINT", "LATENCY"}};
    double t0 = now_s();
    bool ok = rn_compiled_model_export(tuned, &blob, &size) == RN_OK &&
              rn_core_import_model(core, blob, size, "NVIDIA", p, 2, &im) == RN_OK;
    double import_s = now_s() - t0;
    static char again[8192];
    again[0] = '\0';
    if (ok)
        rn_compiled_model_get_property(im, "NVIDIA_CONV_ENGINES", again, sizeof again);
    bool budget_spent = strstr(engines, " over_budget=0 ") == NULL;
    bool untimed = strstr(again, " timed=0 ") != NULL;
    if (!ok)
        result(false, check, "%s", rn_last_error());
    else
        result(untimed || budget_spent, check,
               "blob %zu bytes, export+import %.2f s against the tuned compile's %.2f s; the "
               "import %s: %.160s",
               size, import_s, compile_s,
               untimed ? "timed no candidate" : "timed candidates (the compile's budget ran out)",
               again);
    rn_compiled_model_free(im);
    free(blob);
}

/* The exported ResNet-50 at batch 32 in f16 and f32 (as --precision
 * selects) compiled with NVIDIA_AUTOTUNE NO and YES in the same run: each
 * compile's time, the latency of each (median over rounds that alternate
 * NO and YES, 10 runs a side a round), the ratio YES/NO and what tuning did
 * (NVIDIA_CONV_ENGINES). It passes when both compile and run and the tuned
 * engines' outputs match the heuristic's within twice the precision's
 * bound (each engine within one of the truth); the ratio is measured, not
 * judged. Then autotune_import. */
static void autotune_ab(rn_core *core, const char *extra, const char *precision)
{
    const char *precs[] = {"f16", "f32"};
    for (int pi = 0; pi < 2; pi++) {
        const char *prec = precs[pi];
        if (!selected(precision, prec))
            continue;
        char name[96];
        snprintf(name, sizeof name, "autotune tv_resnet50 batch=32 %s", prec);
        rn_partial_shape shape;
        rn_model *m = extra != NULL ? read_exported(core, extra, "tv_resnet50", 32, &shape) : NULL;
        if (m == NULL) {
            result(false, name, "not exported here (%s)", extra ? rn_last_error() : "no --extra");
            continue;
        }
        double compile_s[2] = {0, 0};
        rn_compiled_model *cm[2] = {compile_tune(core, m, prec, "NO", &compile_s[0]),
                                    compile_tune(core, m, prec, "YES", &compile_s[1])};
        rn_infer_request *r[2] = {NULL, NULL};
        bool ok = true;
        for (int t = 0; t < 2 && ok; t++)
            ok = cm[t] != NULL && rn_compiled_model_create_infer_request(cm[t], &r[t]) == RN_OK;
        if (!ok) {
            result(false, name, "compile or request: %s", rn_last_error());
        } else {
            for (int t = 0; t < 2; t++) {
                fill_input(r[t], 0.0f);
                for (int i = 0; i < 5; i++)
                    ok &= rn_infer_request_infer(r[t]) == RN_OK;
            }
            size_t n[2] = {0, 0};
            const float *y[2] = {output(r[0], &n[0]), output(r[1], &n[1])};
            const precision_bound *b = bound_of(prec);
            double w = ok && y[0] != NULL && y[1] != NULL && n[0] == n[1] && n[0] > 0
                           ? worst(y[1], y[0], n[0], b->rtol, b->rtol * rms_of(y[0], n[0]))
                           : INFINITY;
            enum { ROUNDS = 7, RUNS = 10 };
            double times[2][ROUNDS * RUNS];
            for (int round = 0; round < ROUNDS; round++)
                for (int k = 0; k < 2; k++) {
                    int t = (round + k) % 2; /* NO first, then YES first, ... */
                    for (int i = 0; i < RUNS; i++) {
                        double t0 = now_s();
                        rn_infer_request_infer(r[t]);
                        times[t][round * RUNS + i] = now_s() - t0;
                    }
                }
            for (int t = 0; t < 2; t++)
                qsort(times[t], ROUNDS * RUNS, sizeof times[t][0], cmp_double);
            double med[2] = {times[0][ROUNDS * RUNS / 2] * 1e3, times[1][ROUNDS * RUNS / 2] * 1e3};
            static char engines[8192];
            engines[0] = '\0';
            rn_compiled_model_get_property(cm[1], "NVIDIA_CONV_ENGINES", engines, sizeof engines);
            printf("autotune tv_resnet50 batch=32 %s: compile NO %.2f s YES %.2f s | LATENCY "
                   "median NO %.3f ms YES %.3f ms ratio YES/NO %.3f\n",
                   prec, compile_s[0], compile_s[1], med[0], med[1],
                   med[0] > 0 ? med[1] / med[0] : 0);
            printf("autotune tv_resnet50 batch=32 %s engines: %.600s\n", prec, engines);
            autotune_import(core, cm[1], name, compile_s[1], engines);
            result(ok && w <= 2.0, name,
                   "tuned against the heuristic's engines: worst |diff| / (%g + %g |ref|) = %.3f "
                   "(<= 2 passes)",
                   b->rtol * (y[0] != NULL ? rms_of(y[0], n[0]) : 0), b->rtol, w);
        }
        for (int t = 0; t < 2; t++) {
            rn_infer_request_free(r[t]);
            rn_compiled_model_free(cm[t]);
        }
        rn_model_free(m);
    }
}

/* ---- NVIDIA_ASYNC_STAGES A/B (--async-ab) ---- */

/* THROUGHPUT of the exported ResNet-50 at batch 32 in f16 with
 * NVIDIA_ASYNC_STAGES `on`, `nr` requests in flight (0: the optimal
 * number) for `seconds`: its frames per second; the first request's output
 * into *out (malloc'ed, *n_out values) unless NULL. */
static double async_throughput(rn_core *core, rn_model *m, const char *on, int nr, double seconds,
                               float **out, size_t *n_out)
{
    async_stages = on;
    rn_compiled_model *tp = compile(core, m, "f16", "THROUGHPUT");
    async_stages = NULL;
    if (tp == NULL) {
        printf("async-ab: compile with NVIDIA_ASYNC_STAGES %s: %s\n", on, rn_last_error());
        return 0;
    }
    char buf[64];
    if (nr <= 0)
        nr = rn_compiled_model_get_property(tp, "OPTIMAL_NUMBER_OF_INFER_REQUESTS", buf,
                                            sizeof buf) == RN_OK
                 ? atoi(buf)
                 : 4;
    nr = nr < 1 ? 1 : nr > 16 ? 16 : nr;
    rn_infer_request *rs[16] = {0};
    bool ok = true;
    for (int i = 0; i < nr && ok; i++)
        if ((ok = rn_compiled_model_create_infer_request(tp, &rs[i]) == RN_OK))
            fill_input(rs[i], 0.01f * (float)i);
    for (int i = 0; i < nr && ok; i++) /* warm-up: every slot's first run and capture */
        ok = rn_infer_request_infer(rs[i]) == RN_OK && rn_infer_request_infer(rs[i]) == RN_OK;
    long runs = 0, errors = 0;
    double t0 = now_s(), elapsed = 0;
    while (ok && (elapsed = now_s() - t0) < seconds) {
        for (int i = 0; i < nr; i++)
            errors += rn_infer_request_start_async(rs[i]) != RN_OK;
        for (int i = 0; i < nr; i++)
            errors += rn_infer_request_wait(rs[i]) != RN_OK;
        runs += nr;
    }
    double fps = ok && elapsed > 0 && errors == 0 ? (double)runs * 32 / elapsed : 0;
    printf("async-ab tv_resnet50 batch=32 f16 THROUGHPUT NVIDIA_ASYNC_STAGES=%s requests=%d "
           "fps=%.1f (%ld runs, %ld errors)\n",
           on, nr, fps, runs, errors);
    fflush(stdout);
    if (out != NULL && ok) {
        size_t n = 0;
        const float *o = output(rs[0], &n);
        if (o != NULL && (*out = malloc(n * sizeof **out)) != NULL) {
            memcpy(*out, o, n * sizeof **out);
            *n_out = n;
        }
    }
    for (int i = 0; i < nr; i++)
        rn_infer_request_free(rs[i]);
    rn_compiled_model_free(tp);
    return fps;
}

/* The async checks of light SqueezeNet with NVIDIA_ASYNC_STAGES NO and YES;
 * with YES also more requests in flight than slots (NVIDIA_MAX_SLOTS 2, 8
 * requests: a run finishes another's to take its slot); with --extra and
 * seconds > 0, the exported ResNet-50 at batch 32 in f16 for THROUGHPUT
 * with NO and YES in the same process, at the optimal number of requests
 * and (flight > 0) at `flight`, and the first request's outputs compared
 * byte for byte. */
static void async_ab(rn_core *core, const char *dir, const char *extra, double seconds, int flight)
{
    async_stages = "NO";
    check_async(core, dir, N_FLIGHT, " NVIDIA_ASYNC_STAGES=NO");
    async_stages = "YES";
    check_async(core, dir, N_FLIGHT, " NVIDIA_ASYNC_STAGES=YES");
    max_slots = "2";
    check_async(core, dir, MAX_FLIGHT, " NVIDIA_ASYNC_STAGES=YES NVIDIA_MAX_SLOTS=2");
    max_slots = NULL;
    async_stages = NULL;
    if (extra == NULL || seconds <= 0)
        return;
    rn_partial_shape shape;
    rn_model *m = read_exported(core, extra, "tv_resnet50", 32, &shape);
    if (m == NULL) {
        result(false, "async-ab throughput", "tv_resnet50 not exported here (%s)", rn_last_error());
        return;
    }
    float *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    double no = async_throughput(core, m, "NO", 0, seconds, &a, &na);
    double yes = async_throughput(core, m, "YES", 0, seconds, &b, &nb);
    /* More requests than the streams (--async-flight): with YES a stream
     * worker serves several requests in flight. */
    double no2 = flight > 0 ? async_throughput(core, m, "NO", flight, seconds, NULL, NULL) : -1;
    double yes2 = flight > 0 ? async_throughput(core, m, "YES", flight, seconds, NULL, NULL) : -1;
    printf("async-ab tv_resnet50 batch=32 f16 THROUGHPUT ratio YES/NO=%.3f (optimal requests), "
           "%.3f (%d requests)\n",
           no > 0 ? yes / no : 0, no2 > 0 ? yes2 / no2 : 0, flight);
    bool same = a != NULL && b != NULL && na == nb && memcmp(a, b, na * sizeof *a) == 0;
    result(same && no > 0 && yes > 0 && no2 != 0 && yes2 != 0, "async-ab tv_resnet50 b32 f16",
           "%s; fps NO %.1f YES %.1f; %d requests NO %.1f YES %.1f",
           same ? "NVIDIA_ASYNC_STAGES YES gives NO's bytes" : "outputs differ or missing", no, yes,
           flight, no2, yes2);
    free(a);
    free(b);
    rn_model_free(m);
}

int main(int argc, char **argv)
{
    const char *plugin = "libnvidia.so", *dir = "models", *precision = "all", *only = NULL;
    const char *extra = NULL;
    bool do_bench = false, allow_skip = false, dynamic = true, autotune = false, async = false;
    int async_flight = 0;
    double seconds = 10;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc)
            plugin = argv[++i];
        else if (strcmp(argv[i], "--models") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc)
            precision = argv[++i];
        else if (strcmp(argv[i], "--extra") == 0 && i + 1 < argc)
            extra = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--bench") == 0)
            do_bench = true;
        else if (strcmp(argv[i], "--allow-skip") == 0)
            allow_skip = true;
        else if (strcmp(argv[i], "--no-dynamic") == 0)
            dynamic = false;
        else if (strcmp(argv[i], "--autotune-ab") == 0)
            autotune = true;
        else if (strcmp(argv[i], "--async-ab") == 0)
            async = true;
        else if (strcmp(argv[i], "--async-flight") == 0 && i + 1 < argc)
            async_flight = atoi(argv[++i]);
        else {
            fprintf(stderr,
                    "usage: %s [--plugin PATH] [--models DIR] [--precision f32|f16|bf16|both|all] "
                    "[--only MODEL] [--extra DIR] [--no-dynamic] [--bench [--seconds S]] "
                    "[--autotune-ab] [--async-ab [--async-flight N]] [--allow-skip]\n",
                    argv[0]);
            return 2;
        }
    }
    if (extra != NULL)
        snprintf(peaks_path, sizeof peaks_path, "%s/light_peaks.txt", extra);
    rn_core *core;
    if (rn_core_create(&core) != RN_OK) {
        fprintf(stderr, "rn_core_create: %s\n", rn_last_error());
        return 1;
    }
    if (rn_core_load_plugin(core, "NVIDIA", plugin) != RN_OK) {
        printf("SKIP NVIDIA: %s\n", rn_last_error());
        printf("0 passed, 0 failed (device absent: every check skipped)\n");
        rn_core_free(core);
        return allow_skip ? 0 : 77;
    }
    const char *keys[] = {"FULL_DEVICE_NAME",        "DEVICE_ARCHITECTURE",
                          "NVIDIA_CUDA_VERSION",     "NVIDIA_DRIVER_VERSION",
                          "NVIDIA_CUDNN_VERSION",    "NVIDIA_CUBLAS_VERSION",
                          "INFERENCE_PRECISION_HINT"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char buf[256];
        if (rn_core_get_property(core, "NVIDIA", keys[k], buf, sizeof buf) == RN_OK)
            printf("%s = %s\n", keys[k], buf);
    }
    char caps[256];
    if (rn_core_get_property(core, "NVIDIA", "OPTIMIZATION_CAPABILITIES", caps, sizeof caps) ==
        RN_OK) {
        printf("OPTIMIZATION_CAPABILITIES = %s\n", caps);
        bf16_offered = strstr(caps, "BF16") != NULL;
    }
    if (async) { /* the A/B alone, as --autotune-ab */
        async_ab(core, dir, extra, seconds, async_flight);
        printf("%d passed, %d failed\n", passed, failed);
        rn_core_free(core);
        return failed == 0 ? 0 : 1;
    }
    if (autotune) { /* the A/B alone: the harness's checks ran before it */
        autotune_ab(core, extra, precision);
        printf("%d passed, %d failed\n", passed, failed);
        rn_core_free(core);
        return failed == 0 ? 0 : 1;
    }
    const char *names[] = {"bvlc_alexnet", "densenet121", "inception_v1",
                           "inception_v2", "resnet50",    "shufflenet",
                           "squeezenet",   "vgg19",       "zfnet512"};
    for (int p = 0; p < N_PRECISIONS; p++) {
        const char *prec = bounds[p].name;
        if (!selected(precision, prec))
            continue;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (only == NULL || strcmp(only, names[i]) == 0)
                check_model(core, dir, names[i], prec);
    }
    if (extra != NULL) {
        /* The models export_models.py wrote (models.txt lists them). */
        char list[1024], line[256];
        snprintf(list, sizeof list, "%s/models.txt", extra);
        FILE *f = fopen(list, "r");
        if (f == NULL)
            result(false, "exported", "no %s: the export failed (see its log)", list);
        while (f != NULL && fgets(line, sizeof line, f) != NULL) {
            line[strcspn(line, "\r\n")] = 0;
            for (int p = 0; p < N_PRECISIONS && line[0] != 0; p++) {
                const char *prec = bounds[p].name;
                if (selected(precision, prec) && (only == NULL || strcmp(only, line) == 0))
                    check_exported(core, extra, line, prec);
            }
            /* The dynamic batch in f32 and f16 (what it checks, the shape
             * cache and shared weights, does not depend on the type). */
            for (int p = 0; p < 2 && line[0] != 0 && dynamic; p++) {
                const char *prec = bounds[p].name;
                if (selected(precision, prec) && (only == NULL || strcmp(only, line) == 0))
                    check_dynamic(core, extra, line, prec);
            }
        }
        if (f != NULL)
            fclose(f);
    }
    if (only == NULL)
        check_async(core, dir, N_FLIGHT, "");
    if (do_bench)
        bench(core, dir, extra, seconds, only, precision);
    if (skipped > 0)
        printf("%d checks skipped (said why above)\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    rn_core_free(core);
    return failed == 0 ? 0 : 1;
}
