/* The CPU device against REF on generated models (tests/cpu/diff_gen.h):
 * for every op the CPU device runs on oneDNN or fuses, seeded cases over
 * shapes, axes, element types, static and dynamic shapes, If and Loop
 * bodies and constant folding, compiled on REF and on CPU at f32 and bf16
 * (INFERENCE_PRECISION_HINT) through the public API and run on the same
 * inputs. A case fails when CPU errs where REF runs, or when an output
 * differs in type, shape or values beyond the precision's tolerance:
 *
 *   f32   |cpu - ref| <= 1e-4 |ref| + 1e-5 scale + 1e-5
 *   bf16  |cpu - ref| <= 2e-2 |ref| + 2e-2 scale + 1e-3
 *
 * where scale is the largest |ref| of that output (sums of products lose
 * precision relative to their largest terms, not to each result). Integer
 * outputs must be equal (QuantizeLinear's one step excepted, docs/cpu.md,
 * and that step times the scale after a DequantizeLinear; LayerNormalization
 * adds its conditioning, diff_gen.h);
 * NaNs must be NaNs in both, infinities equal.
 *
 * A case REF cannot compile or run is a bug of the generator and fails too,
 * so that every case tests something. Each family must also have run its op
 * on oneDNN in at least one of its cases (CPU falls back to REF's kernel
 * where `supports` declines, which would compare REF with itself).
 *
 * CI runs a fixed slice (RN_CPU_DIFF_SEEDS cases per family, default 32,
 * seeds 1..N; bf16 on every fourth). The long mode is `scripts/fuzz
 * cpu_diff SECONDS`: RN_CPU_DIFF_SECONDS gives each family its share of
 * the time, from seed RN_CPU_DIFF_FIRST_SEED, with bf16 on every case.
 * RN_CPU_DIFF_FAMILY (one family), RN_CPU_DIFF_CONTEXT (static, dynamic,
 * fold, if_const, if, loop) and RN_CPU_DIFF_SEEDS / _FIRST_SEED narrow a
 * run to reproduce one case; RN_CPU_DIFF_VERBOSE=1 prints each case before
 * it runs (to find one that crashes), =2 also CPU's runtime model. A failing case prints its seed,
 * op, shapes and attributes, and with RN_CPU_DIFF_DUMP=DIR (or under Bazel, in the test's
 * undeclared outputs) writes its model and its first run's inputs as DIR/<family>-<seed>.onnx and
 * .npy files for tools/run.
 *
 * Failures of the lead's open work (issue 24) are listed in
 * `expected_failures` with the reason: they are reported and counted but do
 * not fail the test. The list is matched on the error message only (a
 * wrong value is never expected), and is meant to be emptied. Cases that
 * would corrupt the heap for a reported reason are in `known_bugs` and are
 * not run (RN_CPU_DIFF_KNOWN=1 runs them). Bugs the test found and that
 * were fixed keep a hand-built regression case at the end of this file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runnel/runnel.h"
#include "tests/cpu/diff_gen.h"

typedef struct expected_failure {
    const char *family;  /* NULL: any */
    const char *message; /* a substring of the error */
    const char *also;    /* a second substring (NULL: none) */
    const char *why;
} expected_failure;

static const expected_failure expected_failures[] = {
    /* Empty since the lead's fixes (fallback to REF's kernel, constant
     * folding with scratch and plain layouts); the entry ends the list. */
    {NULL, NULL, NULL, NULL},
};

/* Cases not run at all, because they corrupt the heap or compute wrong
 * values for a reason already reported, each with that reason. They are
 * counted and named in the summary; RN_CPU_DIFF_KNOWN=1 runs them. */
typedef struct known_bug {
    dg_context context;
    const char *families; /* space-separated; a case whose description has "Conv" too */
    const char *why;
} known_bug;

static const known_bug known_bugs[] = {
    /* Empty since constant folding runs plain-layout kernels with their
     * scratch (plugins/api/const_eval.c); the entry ends the list. */
    {DG_FOLD, NULL, NULL},
};

static const char *known_bug_for(const dg_case *c)
{
    if (getenv("RN_CPU_DIFF_KNOWN") != NULL && strcmp(getenv("RN_CPU_DIFF_KNOWN"), "1") == 0)
        return NULL;
    for (size_t i = 0; known_bugs[i].why != NULL; i++) {
        const known_bug *k = &known_bugs[i];
        /* A model whose op reads no input (every one a constant) is folded
         * whole (the If's condition, the one BOOL input, does not count). */
        int op_inputs = 0;
        for (int j = 0; j < c->n_inputs; j++)
            op_inputs += c->inputs[j].type != RN_BOOL;
        dg_context context = op_inputs == 0 ? DG_FOLD : c->context;
        if (k->context != context)
            continue;
        size_t n = strlen(c->family);
        for (const char *f = strstr(k->families, c->family); f != NULL;
             f = strstr(f + 1, c->family))
            if ((f == k->families || f[-1] == ' ') && (f[n] == ' ' || f[n] == '\0'))
                return k->why;
        if (strstr(c->desc, "Conv") != NULL)
            return k->why;
    }
    return NULL;
}

static const expected_failure *expected_for(const dg_case *c, const char *message)
{
    for (size_t i = 0; expected_failures[i].why != NULL; i++) {
        const expected_failure *e = &expected_failures[i];
        if ((e->family == NULL || strcmp(e->family, c->family) == 0) &&
            strstr(message, e->message) != NULL &&
            (e->also == NULL || strstr(message, e->also) != NULL))
            return e;
    }
    return NULL;
}

/* ---- environment ---- */

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v ? strtol(v, NULL, 10) : dflt;
}

static bool family_wanted(const char *family)
{
    const char *only = getenv("RN_CPU_DIFF_FAMILY");
    return only == NULL || !*only || strcmp(only, family) == 0;
}

static dg_context context_wanted(void)
{
    const char *v = getenv("RN_CPU_DIFF_CONTEXT");
    for (int c = 0; v != NULL && c < DG_CONTEXT_COUNT; c++)
        if (strcmp(v, dg_context_name((dg_context)c)) == 0)
            return (dg_context)c;
    return DG_CONTEXT_COUNT;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- inputs ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Input k of run r: values drawn from the case's seed. A BOOL input is an
 * If's condition: true in the first run, false in the second. */
static rn_tensor *make_input(const dg_case *c, int k, int r)
{
    const dg_input *in = &c->inputs[k];
    rn_tensor *t;
    rn_status st = rn_tensor_create(in->type, in->dims[r], (size_t)in->rank, &t);
    cr_assert_eq(st, RN_OK, "%s", rn_last_error());
    size_t n = rn_tensor_element_count(t);
    void *d = rn_tensor_data(t);
    uint64_t s = mix(c->seed * 131 + (uint64_t)k * 7 + (uint64_t)r);
    for (size_t i = 0; i < n; i++) {
        s = mix(s);
        double u = (double)(s >> 11) * (1.0 / 9007199254740992.0);
        double v = in->lo + (in->hi - in->lo) * u;
        long iv = lround(floor(in->lo + (in->hi - in->lo + 1) * u));
        switch (in->type) {
        case RN_F32:
            ((float *)d)[i] = (float)v;
            break;
        case RN_I32:
            ((int32_t *)d)[i] = (int32_t)iv;
            break;
        case RN_I64:
            ((int64_t *)d)[i] = iv;
            break;
        case RN_I8:
            ((int8_t *)d)[i] = (int8_t)iv;
            break;
        case RN_U8:
            ((uint8_t *)d)[i] = (uint8_t)iv;
            break;
        case RN_BOOL:
            ((uint8_t *)d)[i] = r == 0;
            break;
        default:
            cr_assert_fail("input type %d", (int)in->type);
        }
    }
    return t;
}

/* ---- dumps ---- */

static const char *dump_dir(void)
{
    const char *d = getenv("RN_CPU_DIFF_DUMP");
    if (d == NULL || !*d)
        d = getenv("TEST_UNDECLARED_OUTPUTS_DIR");
    return d != NULL && *d ? d : NULL;
}

static void write_npy(const char *path, const rn_tensor *t)
{
    const char *descr;
    switch (rn_tensor_element_type(t)) {
    case RN_F32:
        descr = "<f4";
        break;
    case RN_I32:
        descr = "<i4";
        break;
    case RN_I64:
        descr = "<i8";
        break;
    case RN_I8:
        descr = "|i1";
        break;
    case RN_U8:
        descr = "|u1";
        break;
    case RN_BOOL:
        descr = "|b1";
        break;
    default:
        return;
    }
    char shape[160] = "";
    for (size_t d = 0; d < rn_tensor_rank(t); d++)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld,",
                 (long long)rn_tensor_dims(t)[d]);
    char header[256];
    int n = snprintf(header, sizeof header,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return;
    uint16_t hl = (uint16_t)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fwrite(header, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(rn_tensor_data(t), 1, rn_tensor_byte_size(t), f);
    fclose(f);
}

/* Writes the case's model and its first run's inputs; prints how to run it. */
static void dump_case(const dg_case *c, const uint8_t *onnx, size_t size)
{
    const char *dir = dump_dir();
    if (dir == NULL)
        return;
    mkdir(dir, 0777);
    char path[1024], cmd[4096];
    snprintf(path, sizeof path, "%s/%s-%llu.onnx", dir, c->family, (unsigned long long)c->seed);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return;
    fwrite(onnx, 1, size, f);
    fclose(f);
    int n = snprintf(cmd, sizeof cmd, "tools/run -m %s -d CPU", path);
    for (int k = 0; k < c->n_inputs; k++) {
        char npy[1100];
        snprintf(npy, sizeof npy, "%s/%s-%llu.%s.npy", dir, c->family, (unsigned long long)c->seed,
                 c->inputs[k].name);
        rn_tensor *t = make_input(c, k, 0);
        write_npy(npy, t);
        rn_tensor_free(t);
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " -i %s=%s", c->inputs[k].name, npy);
        if (n >= (int)sizeof cmd)
            break;
    }
    fprintf(stderr, "    written: %s\n    run: %s\n", path, cmd);
}

/* How to run case c alone. */
static void print_reproduce(FILE *f, const dg_case *c)
{
    fprintf(f,
            "    reproduce: RN_CPU_DIFF_FAMILY=%s RN_CPU_DIFF_FIRST_SEED=%llu RN_CPU_DIFF_SEEDS=1 "
            "RN_CPU_DIFF_CONTEXT=%s bazel-bin/tests/cpu/test_cpu_diff\n",
            c->family, (unsigned long long)c->seed, dg_context_name(c->context));
}

/* In the long mode, the case about to run (DIR/<family>.current.txt and
 * .onnx), so that one that kills the process can be found and rerun. */
static void note_current(const dg_case *c, const char *precision, const uint8_t *onnx, size_t size)
{
    const char *dir = dump_dir();
    if (dir == NULL || env_long("RN_CPU_DIFF_SECONDS", 0) <= 0)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.current.txt", dir, c->family);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    fprintf(f, "cpu_diff case (%s): %s\n", precision, c->desc);
    print_reproduce(f, c);
    fclose(f);
    snprintf(path, sizeof path, "%s/%s.current.onnx", dir, c->family);
    if ((f = fopen(path, "wb")) != NULL) {
        fwrite(onnx, 1, size, f);
        fclose(f);
    }
}

/* ---- comparison ---- */

typedef struct tolerance {
    double rel, scale, abs;
} tolerance;

static const tolerance f32_tol = {1e-4, 1e-5, 1e-5};
static const tolerance bf16_tol = {2e-2, 2e-2, 1e-3};

static double value_at(const rn_tensor *t, size_t i)
{
    const void *d = rn_tensor_data(t);
    switch (rn_tensor_element_type(t)) {
    case RN_F32:
        return ((const float *)d)[i];
    case RN_I32:
        return ((const int32_t *)d)[i];
    case RN_I64:
        return (double)((const int64_t *)d)[i];
    case RN_I8:
        return ((const int8_t *)d)[i];
    case RN_U8:
        return ((const uint8_t *)d)[i];
    case RN_BOOL:
        return ((const uint8_t *)d)[i];
    default:
        return NAN;
    }
}

/* Compares CPU's output with REF's; false with why written on a mismatch. */
static bool same_output(const dg_case *c, const rn_tensor *cpu, const rn_tensor *ref,
                        const tolerance *tol, char *why, size_t size)
{
    rn_element_type t = rn_tensor_element_type(ref);
    if (rn_tensor_element_type(cpu) != t) {
        snprintf(why, size, "element type %s, REF %s",
                 rn_element_type_name(rn_tensor_element_type(cpu)), rn_element_type_name(t));
        return false;
    }
    size_t rank = rn_tensor_rank(ref);
    bool shape = rn_tensor_rank(cpu) == rank;
    for (size_t d = 0; shape && d < rank; d++)
        shape = rn_tensor_dims(cpu)[d] == rn_tensor_dims(ref)[d];
    if (!shape) {
        snprintf(why, size, "shape differs (rank %zu, REF rank %zu)", rn_tensor_rank(cpu), rank);
        return false;
    }
    size_t n = rn_tensor_element_count(ref);
    if (t != RN_F32) {
        for (size_t i = 0; i < n; i++) {
            double a = value_at(cpu, i), b = value_at(ref, i);
            if (fabs(a - b) > c->int_steps) {
                snprintf(why, size, "element %zu: CPU %g, REF %g (%d steps allowed)", i, a, b,
                         c->int_steps);
                return false;
            }
        }
        return true;
    }
    const float *a = rn_tensor_data(cpu), *b = rn_tensor_data(ref);
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(b[i]) && fabs(b[i]) > scale)
            scale = fabs(b[i]);
    for (size_t i = 0; i < n; i++) {
        bool ok;
        if (isnan(b[i]) || isnan(a[i]))
            ok = isnan(b[i]) && isnan(a[i]);
        else if (isinf(b[i]) || isinf(a[i]))
            ok = a[i] == b[i];
        else
            ok = fabs((double)a[i] - b[i]) <= tol->rel * fabs(b[i]) + tol->scale * scale +
                                                  tol->abs + c->f32_step + c->f32_conditioning;
        if (!ok) {
            snprintf(why, size,
                     "element %zu of %zu: CPU %.9g, REF %.9g (difference %.3g, scale %.3g)", i, n,
                     a[i], b[i], fabs((double)a[i] - b[i]), scale);
            return false;
        }
    }
    return true;
}

/* ---- one case on both devices ---- */

typedef enum outcome { PASS, FAIL, EXPECTED, INVALID } outcome;

typedef struct stats {
    int cases, bf16, bf16_layouts, onednn, fallbacks, failures, expected, invalid, known;
    int contexts[DG_CONTEXT_COUNT];
} stats;

/* CPU's performance hint for case c: every third case THROUGHPUT (one
 * thread per primitive, which oneDNN may serve with other implementations),
 * the others LATENCY (a team of every core). */
static const char *hint_of(const dg_case *c)
{
    return c->seed % 3 == 0 ? "THROUGHPUT" : "LATENCY";
}

/* Compiles for `device`; with a precision (CPU), also with c's hint. */
static rn_status compile(rn_core *core, rn_model *model, const char *device, const dg_case *c,
                         const char *precision, rn_compiled_model **out)
{
    rn_property p[2] = {{"INFERENCE_PRECISION_HINT", precision}, {"PERFORMANCE_HINT", hint_of(c)}};
    return rn_core_compile_model(core, model, device, precision ? p : NULL, precision ? 2 : 0, out);
}

#define RAN_ONEDNN   1u /* the op ran on oneDNN */
#define RAN_BF16     2u /* some kernel kept bf16 */
#define RAN_FALLBACK 4u /* oneDNN refused the op's node: it fell back to REF */

/* Where the CPU runtime model has the case's op (or its fused form): on a
 * oneDNN kernel (RAN_ONEDNN), and whether a primitive refused it
 * (RAN_FALLBACK, its reason printed). */
static unsigned op_placement(rn_compiled_model *cm, const dg_case *c)
{
    unsigned ran = 0;
    const rn_runtime_node *nodes;
    size_t n;
    if (c->op == NULL || rn_compiled_model_runtime_model(cm, &nodes, &n) != RN_OK)
        return 0;
    /* REF's kernels say "ref" (or "view"); oneDNN's name the primitive's
     * implementation ("jit:avx2", and "ref:any" for oneDNN's own reference). */
    for (size_t i = 0; i < n; i++) {
        const char *impl = nodes[i].impl_type;
        if (strstr(nodes[i].layer_type, c->op) != NULL && nodes[i].fallback != NULL) {
            fprintf(stderr, "cpu_diff %s seed %llu: fell back to %s: %s\n", c->family,
                    (unsigned long long)c->seed, impl, nodes[i].fallback);
            ran |= RAN_FALLBACK;
        }
        if (strstr(nodes[i].layer_type, c->op) != NULL && strcmp(impl, "ref") != 0 &&
            strcmp(impl, "view") != 0 && strncmp(impl, "ref ", 4) != 0)
            ran |= RAN_ONEDNN;
    }
    /* Folded into a convolution or a GEMM. */
    for (size_t i = 0; i < n; i++)
        if ((strcmp(c->op, "BatchNormalization") == 0 || strcmp(c->op, "Relu") == 0) &&
            strstr(nodes[i].layer_type, "Fused") != NULL && strcmp(nodes[i].impl_type, "ref") != 0)
            ran |= RAN_ONEDNN;
    return ran;
}

/* Whether some kernel of the CPU runtime model reads or writes bf16. */
static bool has_bf16(rn_compiled_model *cm)
{
    const rn_runtime_node *nodes;
    size_t n;
    if (rn_compiled_model_runtime_model(cm, &nodes, &n) != RN_OK)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strstr(nodes[i].input_layouts, "bf16") != NULL ||
            strstr(nodes[i].output_layouts, "bf16") != NULL)
            return true;
    return false;
}

static outcome run_case(rn_core *core, const dg_case *c, const char *precision, unsigned *ran,
                        char *msg, size_t size)
{
    size_t bytes;
    uint8_t *onnx = dm_pack(c->model, &bytes);
    note_current(c, precision, onnx, bytes);
    rn_model *model = NULL;
    rn_compiled_model *ref = NULL, *cpu = NULL;
    rn_infer_request *rr = NULL, *cr = NULL;
    rn_tensor *ins[DG_MAX_RUNS][DG_MAX_INPUTS] = {{NULL}};
    outcome result = PASS;
    rn_status st = rn_core_read_model_from_memory(core, onnx, bytes, NULL, &model);
    if (st != RN_OK) {
        snprintf(msg, size, "reading the model: %s: %s", rn_status_name(st), rn_last_error());
        result = INVALID;
        goto done;
    }
    if ((st = compile(core, model, "REF", c, NULL, &ref)) != RN_OK ||
        (st = rn_compiled_model_create_infer_request(ref, &rr)) != RN_OK) {
        snprintf(msg, size, "REF compile: %s: %s", rn_status_name(st), rn_last_error());
        result = INVALID;
        goto done;
    }
    if ((st = compile(core, model, "CPU", c, precision, &cpu)) != RN_OK ||
        (st = rn_compiled_model_create_infer_request(cpu, &cr)) != RN_OK) {
        snprintf(msg, size, "CPU compile (%s, %s): %s: %s", precision, hint_of(c),
                 rn_status_name(st), rn_last_error());
        result = FAIL;
        goto done;
    }
    *ran = op_placement(cpu, c) | (has_bf16(cpu) ? RAN_BF16 : 0);
    if (env_long("RN_CPU_DIFF_VERBOSE", 0) > 1) {
        const rn_runtime_node *rows;
        size_t n_rows;
        if (rn_compiled_model_runtime_model(cpu, &rows, &n_rows) == RN_OK)
            for (size_t i = 0; i < n_rows; i++)
                fprintf(stderr, "    CPU runs %s (%s): %s, in %s, out %s\n", rows[i].name,
                        rows[i].layer_type, rows[i].impl_type, rows[i].input_layouts,
                        rows[i].output_layouts);
    }
    for (int r = 0; r < c->n_runs && result == PASS; r++) {
        for (int k = 0; k < c->n_inputs; k++) {
            ins[r][k] = make_input(c, k, r);
            cr_assert_eq(rn_infer_request_set_tensor(rr, c->inputs[k].name, ins[r][k]), RN_OK, "%s",
                         rn_last_error());
            if ((st = rn_infer_request_set_tensor(cr, c->inputs[k].name, ins[r][k])) != RN_OK) {
                snprintf(msg, size, "CPU set_tensor '%s' (run %d): %s: %s", c->inputs[k].name, r,
                         rn_status_name(st), rn_last_error());
                result = FAIL;
                goto done;
            }
        }
        if ((st = rn_infer_request_infer(rr)) != RN_OK) {
            snprintf(msg, size, "REF infer (run %d): %s: %s", r, rn_status_name(st),
                     rn_last_error());
            result = INVALID;
            break;
        }
        if ((st = rn_infer_request_infer(cr)) != RN_OK) {
            snprintf(msg, size, "CPU infer (%s, %s, run %d): %s: %s", precision, hint_of(c), r,
                     rn_status_name(st), rn_last_error());
            result = FAIL;
            break;
        }
        size_t n = rn_compiled_model_output_count(ref);
        if (rn_compiled_model_output_count(cpu) != n) {
            snprintf(msg, size, "%zu outputs, REF %zu", rn_compiled_model_output_count(cpu), n);
            result = FAIL;
            break;
        }
        for (size_t o = 0; o < n && result == PASS; o++) {
            rn_tensor *a, *b;
            cr_assert_eq(rn_infer_request_get_output_tensor(cr, o, &a), RN_OK);
            cr_assert_eq(rn_infer_request_get_output_tensor(rr, o, &b), RN_OK);
            char why[512];
            if (!same_output(c, a, b, strcmp(precision, "bf16") == 0 ? &bf16_tol : &f32_tol, why,
                             sizeof why)) {
                snprintf(msg, size, "%s, %s, run %d, output %zu: %s", precision, hint_of(c), r, o,
                         why);
                result = FAIL;
            }
        }
    }
done:
    if (result == FAIL && expected_for(c, msg) != NULL)
        result = EXPECTED;
    if (result == FAIL || result == INVALID)
        dump_case(c, onnx, bytes);
    rn_infer_request_free(rr);
    rn_infer_request_free(cr);
    for (int r = 0; r < DG_MAX_RUNS; r++)
        for (int k = 0; k < DG_MAX_INPUTS; k++)
            rn_tensor_free(ins[r][k]);
    rn_compiled_model_free(ref);
    rn_compiled_model_free(cpu);
    rn_model_free(model);
    free(onnx);
    return result;
}

/* Runs one generated case at f32 (and bf16 where asked), counting. */
static void check(rn_core *core, int family, uint64_t seed, bool bf16, stats *s)
{
    dg_case c;
    dg_case_make(family, seed, context_wanted(), &c);
    const char *known = known_bug_for(&c);
    if (known != NULL) {
        if (s->known++ == 0)
            fprintf(stderr, "cpu_diff %s: not running cases like \"%s\": %s\n", c.family, c.desc,
                    known);
        dg_case_free(&c);
        return;
    }
    const char *precisions[2] = {"f32", "bf16"};
    for (int p = 0; p < (bf16 ? 2 : 1); p++) {
        if (env_long("RN_CPU_DIFF_VERBOSE", 0))
            fprintf(stderr, "cpu_diff case (%s): %s\n", precisions[p], c.desc);
        char msg[2048] = "";
        unsigned ran = 0;
        outcome o = run_case(core, &c, precisions[p], &ran, msg, sizeof msg);
        s->cases++;
        s->bf16 += p;
        s->onednn += (ran & RAN_ONEDNN) != 0;
        s->fallbacks += (ran & RAN_FALLBACK) != 0;
        s->bf16_layouts += (ran & RAN_BF16) != 0;
        s->contexts[c.context]++;
        if (o == PASS)
            continue;
        const expected_failure *e = o == EXPECTED ? expected_for(&c, msg) : NULL;
        fprintf(stderr, "cpu_diff %s: %s\n    %s\n    %s%s\n",
                o == FAIL       ? "FAILURE"
                : o == EXPECTED ? "expected failure"
                                : "INVALID CASE (REF refuses it: a generator bug)",
                c.desc, msg, e ? "expected: " : "", e ? e->why : "");
        print_reproduce(stderr, &c);
        s->failures += o == FAIL;
        s->expected += o == EXPECTED;
        s->invalid += o == INVALID;
    }
    dg_case_free(&c);
}

/* The family's cases: the CI slice, or the long mode's share of time. */
static void run_family(const char *name)
{
    if (!family_wanted(name))
        cr_skip_test("RN_CPU_DIFF_FAMILY selects another family");
    int family = dg_family_find(name);
    cr_assert_geq(family, 0, "no family %s", name);
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    long seconds = env_long("RN_CPU_DIFF_SECONDS", 0);
    long first = env_long("RN_CPU_DIFF_FIRST_SEED", 1);
    long seeds = env_long("RN_CPU_DIFF_SEEDS", seconds > 0 ? 1000000 : 32);
    double share = seconds > 0 ? (double)seconds / dg_family_count : 0, t0 = now_s();
    stats s = {0};
    for (long i = 0; i < seeds; i++) {
        if (share > 0 && now_s() - t0 > share)
            break;
        /* bf16 on every fourth case in CI (its cost), on each in the long mode. */
        check(core, family, (uint64_t)(first + i), seconds > 0 || i % 4 == 3, &s);
    }
    char isa[64] = "?";
    rn_core_get_property(core, "CPU", "CPU_ISA", isa, sizeof isa);
    rn_core_free(core);
    if (s.bf16 > 0 && s.bf16_layouts == 0)
        fprintf(stderr,
                "cpu_diff %s: the %d bf16 cases kept every kernel in f32: oneDNN has no bf16 "
                "primitive for them on this CPU (CPU_ISA %s), so they test only the bf16 compile "
                "path (at the bf16 tolerance)\n",
                name, s.bf16, isa);
    fprintf(
        stderr,
        "cpu_diff %s: %d cases (%d bf16, %d with a bf16 kernel) from seed %ld, %d ran the op on "
        "oneDNN; contexts: "
        "static %d, dynamic %d, fold %d, if_const %d, if %d, loop %d; %d failures, %d "
        "expected failures, %d invalid, %d not run (known bugs)\n",
        name, s.cases, s.bf16, s.bf16_layouts, first, s.onednn, s.contexts[DG_STATIC],
        s.contexts[DG_DYNAMIC], s.contexts[DG_FOLD], s.contexts[DG_IF_CONST], s.contexts[DG_IF],
        s.contexts[DG_LOOP], s.failures, s.expected, s.invalid, s.known);
    cr_expect_eq(s.invalid, 0, "%s: %d generated cases REF refuses (see above)", name, s.invalid);
    cr_expect_eq(s.failures, 0, "%s: %d cases where CPU errs or disagrees with REF (see above)",
                 name, s.failures);
    /* A refused primitive runs REF's kernel and agrees, so only this sees
     * it: a oneDNN kernel that cannot be created for shapes its supports()
     * accepts (the Concat failures of issue 24) is a defect to fix in
     * supports() or the kernel. */
    cr_expect_eq(s.fallbacks, 0,
                 "%s: %d cases where oneDNN refused the op and it fell back to REF (reasons above)",
                 name, s.fallbacks);
    if (s.cases >= 8)
        cr_expect_gt(s.onednn, 0,
                     "%s: no case ran the op on oneDNN: the family compares REF with "
                     "itself",
                     name);
}

#define FAMILY_TEST(name)                                                                          \
    Test(cpu_diff, name, .timeout = 600)                                                           \
    {                                                                                              \
        run_family(#name);                                                                         \
    }

FAMILY_TEST(unary)
FAMILY_TEST(binary)
FAMILY_TEST(concat)
FAMILY_TEST(concat_grid)
FAMILY_TEST(transpose)
FAMILY_TEST(softmax)
FAMILY_TEST(pool)
FAMILY_TEST(lrn)
FAMILY_TEST(batchnorm)
FAMILY_TEST(layernorm)
FAMILY_TEST(conv)
FAMILY_TEST(conv_winograd)
FAMILY_TEST(conv_transpose)
FAMILY_TEST(gemm)
FAMILY_TEST(matmul)
FAMILY_TEST(reduce)
FAMILY_TEST(resize)
FAMILY_TEST(shuffle)
FAMILY_TEST(attention)
FAMILY_TEST(quant)
FAMILY_TEST(qdq)

/* Every family has its test above. */
Test(cpu_diff, every_family_has_a_test)
{
    cr_assert_eq(dg_family_count, 21, "a family was added: add its FAMILY_TEST");
}

/* ---- regressions: cases the generator found, built by hand ---- */

/* Runs a hand-built model of one f32 input (static shape) on both devices
 * at f32 and expects agreement and the op in the runtime model. */
static void expect_like_ref_of(dm_model *m, const char *name, rn_element_type type, int rank,
                               const int64_t *dims, const char *op, int int_steps)
{
    dg_case c = {.family = name,
                 .context = DG_STATIC,
                 .model = m,
                 .n_inputs = 1,
                 .n_runs = 1,
                 .op = op,
                 .int_steps = int_steps};
    bool u8 = type == RN_U8;
    c.inputs[0] =
        (dg_input){.name = "x", .type = type, .rank = rank, .lo = u8 ? 0 : -2, .hi = u8 ? 255 : 2};
    memcpy(c.inputs[0].dims[0], dims, sizeof(int64_t) * (size_t)rank);
    snprintf(c.desc, sizeof c.desc, "%s", name);
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    char msg[2048] = "";
    unsigned ran = 0;
    outcome o = run_case(core, &c, "f32", &ran, msg, sizeof msg);
    cr_expect_eq(o, PASS, "%s: %s", name, msg);
    rn_core_free(core);
    dm_model_free(m);
}

static void expect_like_ref(dm_model *m, const char *name, int rank, const int64_t *dims,
                            const char *op)
{
    expect_like_ref_of(m, name, RN_F32, rank, dims, op, 0);
}

/* Transpose of a tensor with a zero dim: oneDNN 2.6's reorder divided by
 * zero (SIGFPE) when it ran; CPU now leaves it to REF's kernel
 * (transpose seed 109, dynamic). */
Test(cpu_diff, transpose_of_an_empty_tensor)
{
    int64_t dims[2] = {9, 0}, perm[2] = {1, 0};
    dm_model *m = dm_model_create(17);
    dm_graph *g = dm_main(m);
    dm_input(g, "x", RN_F32, 2, dims, NULL);
    const char *y = dm_op1(g, "Transpose", "x");
    dm_attr_ints(g, "perm", 2, perm);
    dm_output(g, y, RN_F32);
    expect_like_ref(m, "transpose_of_an_empty_tensor", 2, dims, "Transpose");
}

/* ConvTranspose with an output_padding of the stride (ONNX allows it where
 * the dilation is larger): oneDNN refused the descriptor ("invalid
 * arguments", end pad -1 with stride 1) and the compile failed; CPU now
 * leaves it to REF's kernel (conv_transpose seed 3, if). */
Test(cpu_diff, conv_transpose_output_padding_of_the_stride)
{
    int64_t dims[4] = {1, 2, 3, 3}, wd[4] = {2, 3, 2, 2};
    int64_t k[2] = {2, 2}, s[2] = {1, 2}, dl[2] = {2, 1}, pads[4] = {0, 1, 0, 0}, op[2] = {1, 1};
    float w[24];
    for (int i = 0; i < 24; i++)
        w[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
    dm_model *m = dm_model_create(17);
    dm_graph *g = dm_main(m);
    dm_input(g, "x", RN_F32, 4, dims, NULL);
    const char *y = dm_op2(g, "ConvTranspose", "x", dm_init_f32(g, 4, wd, w));
    dm_attr_ints(g, "kernel_shape", 2, k);
    dm_attr_ints(g, "strides", 2, s);
    dm_attr_ints(g, "dilations", 2, dl);
    dm_attr_ints(g, "pads", 4, pads);
    dm_attr_ints(g, "output_padding", 2, op);
    dm_output(g, y, RN_F32);
    expect_like_ref(m, "conv_transpose_output_padding_of_the_stride", 4, dims, "ConvTranspose");
}

/* The model of issue 24's repro (../shared/repro/make_anchors_dyn.py, a
 * detection head's anchor grid), node for node: x [1, 4, h, w] -> Shape ->
 * Gather H, W -> Cast -> Range -> Unsqueeze -> Expand to [H, W] ->
 * Unsqueeze(-1) -> Concat(-1), then Concat(-1) with ReduceMean(x) over C,
 * run with h = w = 40 and then 20 x 30. CPU failed it while re-specialising
 * ("running the primitive: out of memory (oneDNN status 1)"): until the
 * lead's fix empties expected_failures, that failure is accepted; after,
 * only agreement with REF is. */
Test(cpu_diff, anchor_grid_of_issue_24)
{
    dm_model *m = dm_model_create(17);
    dm_graph *g = dm_main(m);
    int64_t dims[4] = {1, 4, 40, 40}, zero = 0, one = 1, last = -1;
    const char *params[4] = {NULL, NULL, "h", "w"};
    dm_input(g, "x", RN_F32, 4, dims, params);
    const char *s = dm_op1(g, "Shape", "x");
    const char *h = dm_op2(g, "Gather", s, dm_scalar_i64(g, 2));
    dm_attr_int(g, "axis", 0);
    const char *w = dm_op2(g, "Gather", s, dm_scalar_i64(g, 3));
    dm_attr_int(g, "axis", 0);
    const char *hf = dm_op1(g, "Cast", h);
    dm_attr_int(g, "to", RN_F32);
    const char *wf = dm_op1(g, "Cast", w);
    dm_attr_int(g, "to", RN_F32);
    float zf = 0.0f, onef = 1.0f;
    const char *z = dm_init_f32(g, 0, NULL, &zf), *o = dm_init_f32(g, 0, NULL, &onef);
    const char *r1[3] = {z, hf, o}, *r2[3] = {z, wf, o};
    const char *ry = dm_node(g, "Range", 3, r1, 1, NULL);
    const char *rx = dm_node(g, "Range", 3, r2, 1, NULL);
    const char *ry2 = dm_op2(g, "Unsqueeze", ry, dm_vec_i64(g, 1, &one));
    const char *rx2 = dm_op2(g, "Unsqueeze", rx, dm_vec_i64(g, 1, &zero));
    const char *hw[2] = {dm_op2(g, "Unsqueeze", h, dm_vec_i64(g, 1, &zero)),
                         dm_op2(g, "Unsqueeze", w, dm_vec_i64(g, 1, &zero))};
    const char *shape = dm_node(g, "Concat", 2, hw, 1, NULL);
    dm_attr_int(g, "axis", 0);
    const char *gy = dm_op2(g, "Expand", ry2, shape), *gx = dm_op2(g, "Expand", rx2, shape);
    const char *grid[2] = {dm_op2(g, "Unsqueeze", gx, dm_vec_i64(g, 1, &last)),
                           dm_op2(g, "Unsqueeze", gy, dm_vec_i64(g, 1, &last))};
    const char *gc = dm_node(g, "Concat", 2, grid, 1, NULL);
    dm_attr_int(g, "axis", -1);
    const char *xm0 = dm_op1(g, "ReduceMean", "x");
    dm_attr_ints(g, "axes", 1, &one);
    dm_attr_int(g, "keepdims", 0);
    const char *xm = dm_op2(g, "Squeeze", xm0, dm_vec_i64(g, 1, &zero));
    const char *y[2] = {gc, dm_op2(g, "Unsqueeze", xm, dm_vec_i64(g, 1, &last))};
    const char *out = dm_node(g, "Concat", 2, y, 1, NULL);
    dm_attr_int(g, "axis", -1);
    dm_output(g, out, RN_F32);

    dg_case c = {.family = "anchor_grid_of_issue_24",
                 .context = DG_DYNAMIC,
                 .model = m,
                 .n_inputs = 1,
                 .n_runs = 2,
                 .op = "Concat"};
    c.inputs[0] = (dg_input){.name = "x", .type = RN_F32, .rank = 4, .lo = -1, .hi = 1};
    int64_t second[4] = {1, 4, 20, 30};
    memcpy(c.inputs[0].dims[0], dims, sizeof dims);
    memcpy(c.inputs[0].dims[1], second, sizeof second);
    snprintf(c.desc, sizeof c.desc, "issue 24's anchors_dyn model, x [1,4,40,40] then [1,4,20,30]");
    rn_core *core;
    cr_assert_eq(rn_core_create(&core), RN_OK, "%s", rn_last_error());
    char msg[2048] = "";
    unsigned ran = 0;
    outcome r = run_case(core, &c, "f32", &ran, msg, sizeof msg);
    if (r == EXPECTED)
        fprintf(stderr, "cpu_diff anchor_grid_of_issue_24: expected failure: %s\n", msg);
    cr_expect(r == PASS || r == EXPECTED, "%s", msg);
    rn_core_free(core);
    dm_model_free(m);
}

/* A QDQ Gemm (u8 x with zero point 65): fuse_qdq makes it a runnel
 * QLinearFusedGemm, and oneDNN 2.6's int8 inner product has no source zero
 * point, so creating it was "unimplemented" and the compile failed where
 * REF runs it; CPU now leaves such a Gemm to REF's kernel (qdq seed 22). */
Test(cpu_diff, qdq_gemm_with_an_x_zero_point)
{
    int64_t dims[2] = {3, 5}, wd[2] = {4, 5};
    int8_t w[20];
    for (int i = 0; i < 20; i++)
        w[i] = (int8_t)((i * 37) % 127 - 63);
    float xs = 0.02f, ws = 0.01f, ys = 0.05f;
    uint8_t zx = 65, zy = 100;
    int8_t zw = 0;
    dm_model *m = dm_model_create(17);
    dm_graph *g = dm_main(m);
    dm_input(g, "x", RN_U8, 2, dims, NULL);
    const char *dx_in[3] = {"x", dm_init_f32(g, 0, NULL, &xs), dm_init(g, RN_U8, 1, 0, NULL, &zx)};
    const char *dx = dm_node(g, "DequantizeLinear", 3, dx_in, 1, NULL);
    const char *dw_in[3] = {dm_init(g, RN_I8, 1, 2, wd, w), dm_init_f32(g, 0, NULL, &ws),
                            dm_init(g, RN_I8, 1, 0, NULL, &zw)};
    const char *dw = dm_node(g, "DequantizeLinear", 3, dw_in, 1, NULL);
    const char *y = dm_op2(g, "Gemm", dx, dw);
    dm_attr_int(g, "transB", 1);
    const char *q_in[3] = {y, dm_init_f32(g, 0, NULL, &ys), dm_init(g, RN_U8, 1, 0, NULL, &zy)};
    dm_output(g, dm_node(g, "QuantizeLinear", 3, q_in, 1, NULL), RN_U8);
    expect_like_ref_of(m, "qdq_gemm_with_an_x_zero_point", RN_U8, 2, dims, "QLinearFusedGemm", 1);
}

/* x [1, 0, 2] @ constant [2, 12] (+ a bias, then Relu: runnel FusedMatMul,
 * or alone): creating oneDNN 2.6's matmul primitive for an M of 0 divided
 * by zero (SIGFPE, the process died at compile); CPU now leaves an empty
 * MatMul to REF's kernel (matmul seed 43102, static). */
static void expect_empty_matmul_like_ref(bool fused)
{
    int64_t dims[3] = {1, 0, 2}, wd[2] = {2, 12}, n = 12;
    float w[24], b[12];
    for (int i = 0; i < 24; i++)
        w[i] = (float)((i * 5) % 9) / 9.0f - 0.5f;
    for (int i = 0; i < 12; i++)
        b[i] = (float)i / 12.0f;
    dm_model *m = dm_model_create(17);
    dm_graph *g = dm_main(m);
    dm_input(g, "x", RN_F32, 3, dims, NULL);
    const char *y = dm_op2(g, "MatMul", "x", dm_init_f32(g, 2, wd, w));
    if (fused)
        y = dm_op1(g, "Relu", dm_op2(g, "Add", y, dm_init_f32(g, 1, &n, b)));
    dm_output(g, y, RN_F32);
    expect_like_ref(m, fused ? "fused_matmul_of_an_empty_tensor" : "matmul_of_an_empty_tensor", 3,
                    dims, "MatMul");
}

Test(cpu_diff, fused_matmul_of_an_empty_tensor)
{
    expect_empty_matmul_like_ref(true);
}

Test(cpu_diff, matmul_of_an_empty_tensor)
{
    expect_empty_matmul_like_ref(false);
}
