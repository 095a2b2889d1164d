/* CPU export blobs (plugins/cpu/blob.c): export -> import round trips
 * whose outputs equal the compiled model's, bit for bit, with every weight
 * copied from the blob and no weight reorder run at import (the CPU
 * device's counters); the ISA refusal; a blob of another oneDNN version
 * (its weights converted from the graph's, same outputs); malformed,
 * truncated and corrupted blobs (an error with a message, nothing built).
 * Blobs are patched by rewriting their header with graph/serialize.h and
 * sealing them again, as a blob from elsewhere would be. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize.h"
#include "plugins/cpu/blob.h"
#include "runnel/runnel.h"
#include "tests/cpu/cpu_testing.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* Output 0's bytes after one run (malloc'ed, *size): input 0 is
 * cpu_testing_run_once's pattern in f32, else bytes i * 37 mod 200 (the
 * operator-format int8 models take u8 or i8). */
static void *run_bytes(rn_compiled_model *cm, size_t *size)
{
    rn_infer_request *r;
    OK(rn_compiled_model_create_infer_request(cm, &r));
    rn_tensor *in;
    OK(rn_infer_request_get_input_tensor(r, 0, &in));
    if (rn_tensor_element_type(in) == RN_F32) {
        rn_infer_request_free(r);
        size_t n;
        float *out = cpu_testing_run_once(cm, &n);
        *size = n * sizeof *out;
        return out;
    }
    unsigned char *x = rn_tensor_data(in);
    for (size_t i = 0; i < rn_tensor_byte_size(in); i++)
        x[i] = (unsigned char)(i * 37u % 200u);
    OK(rn_infer_request_infer(r));
    rn_tensor *out;
    OK(rn_infer_request_get_output_tensor(r, 0, &out));
    *size = rn_tensor_byte_size(out);
    void *copy = malloc(*size);
    cr_assert_not_null(copy);
    memcpy(copy, rn_tensor_data(out), *size);
    rn_infer_request_free(r);
    return copy;
}

typedef struct exported {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm;
    void *blob;
    size_t size;
    void *out;
    size_t out_bytes;
    uint64_t compile_reorders; /* the constant conversions compiling ran */
} exported;

/* Compiles `path` for CPU at `precision`, runs it and exports it. */
static void export_model(const char *path, const char *precision, exported *e)
{
    OK(rn_core_create(&e->core));
    OK(rn_core_read_model(e->core, path, &e->model));
    rn_property p[] = {{"INFERENCE_PRECISION_HINT", precision}};
    uint64_t r0, o0, r1, o1;
    cpu_blob_counters(&r0, &o0);
    OK(rn_core_compile_model(e->core, e->model, "CPU", p, 1, &e->cm));
    cpu_blob_counters(&r1, &o1);
    e->compile_reorders = o1 - o0;
    e->out = run_bytes(e->cm, &e->out_bytes);
    OK(rn_compiled_model_export(e->cm, &e->blob, &e->size));
}

static void exported_free(exported *e)
{
    free(e->out);
    free(e->blob);
    rn_compiled_model_free(e->cm);
    rn_model_free(e->model);
    rn_core_free(e->core);
}

/* Imports a blob; *restored and *reordered: the weights it copied from the
 * blob and the reorders run meanwhile. */
static rn_status import_counted(rn_core *core, const void *blob, size_t size,
                                rn_compiled_model **cm, uint64_t *restored, uint64_t *reordered)
{
    uint64_t r0, o0, r1, o1;
    cpu_blob_counters(&r0, &o0);
    rn_status st = rn_core_import_model(core, blob, size, "CPU", NULL, 0, cm);
    cpu_blob_counters(&r1, &o1);
    *restored = r1 - r0;
    *reordered = o1 - o0;
    return st;
}

/* Export -> import: the same output, bit for bit; each weight the compile
 * converted restored from the blob, no reorder, but for Winograd's weights
 * (plugins/cpu/conv.c), which the import converts again from the graph's.
 * Returns the number of weights restored; *wino (when not NULL) the
 * Winograd convolutions. */
static uint64_t round_trip_wino(const char *path, const char *precision, uint64_t *wino_out)
{
    exported e = {0};
    export_model(path, precision, &e);
    uint64_t wino = (uint64_t)cpu_testing_winograd_nodes(e.cm);
    if (wino_out != NULL)
        *wino_out = wino;
    rn_compiled_model *imp;
    uint64_t restored, reordered;
    OK(import_counted(e.core, e.blob, e.size, &imp, &restored, &reordered));
    cr_assert_eq(restored + wino, e.compile_reorders,
                 "%s: %llu weights came from the blob and %llu are Winograd's, the compile "
                 "converted %llu",
                 path, (unsigned long long)restored, (unsigned long long)wino,
                 (unsigned long long)e.compile_reorders);
    cr_assert_eq(reordered, wino, "%s: the import ran %llu reorders for %llu Winograd weights",
                 path, (unsigned long long)reordered, (unsigned long long)wino);
    size_t n;
    void *out = run_bytes(imp, &n);
    cr_assert_eq(n, e.out_bytes);
    cr_assert(memcmp(out, e.out, n) == 0,
              "%s: the imported model's output differs from the compiled model's", path);
    free(out);
    rn_compiled_model_free(imp);
    exported_free(&e);
    return restored;
}

static uint64_t round_trip(const char *path, const char *precision)
{
    return round_trip_wino(path, precision, NULL);
}

Test(cpu_export, conv_round_trip, .timeout = 300)
{
    char path[512];
    cr_assert_gt(round_trip(cpu_testing_light("squeezenet", path, sizeof path), "f32"), 0);
}

Test(cpu_export, gemm_round_trip)
{
    cr_assert_eq(round_trip("tests/cpu/export_gemm.onnx", "f32"), 2, "two inner products");
}

/* MatMul by constant weights: oneDNN 2.6's AVX2 matmul reads them plain
 * (nothing converted, nothing stored); brgemm (AVX-512) blocks them. */
Test(cpu_export, matmul_round_trip)
{
    round_trip("tests/cpu/attention_encoder.onnx", "f32");
}

Test(cpu_export, int8_round_trip)
{
    cr_assert_eq(round_trip("tests/cpu/export_int8.onnx", "f32"), 1, "one int8 convolution");
}

/* The operator format's QLinearConv and QLinearMatMul (fuse_qop, on
 * oneDNN int8): u8 in, u8 out. Their weights are small enough for oneDNN
 * to read them plain on avx2 (nothing converted, nothing stored): the
 * round trip checks the outputs and that the import reorders nothing. */
Test(cpu_export, qlinear_conv_round_trip)
{
    round_trip("tests/cpu/qop_conv_u8.onnx", "f32");
}

Test(cpu_export, qlinear_matmul_round_trip)
{
    round_trip("tests/cpu/qop_matmul.onnx", "f32");
}

Test(cpu_export, bf16_round_trip, .timeout = 300)
{
    if (!cpu_has_bf16())
        cr_skip_test("oneDNN runs %s here, without native bf16 (avx512_bf16 or AMX)",
                     cpu_isa_name());
    char path[512];
    round_trip(cpu_testing_light("squeezenet", path, sizeof path), "bf16");
}

/* tests/cpu/winograd.onnx: two 3x3 convolutions, which oneDNN 2.x runs as
 * Winograd on AVX-512 (plugins/cpu/conv.c) with weights in a layout of the
 * kernel's own that a blob does not store: the import converts those
 * again and restores the rest (round_trip_wino). Where they run direct
 * (AVX2, oneDNN 3.x) every converted weight comes from the blob. */
Test(cpu_export, winograd_round_trip)
{
    uint64_t wino = 0;
    round_trip_wino("tests/cpu/winograd.onnx", "f32", &wino);
    cr_log_info("%llu Winograd convolutions on %s", (unsigned long long)wino, cpu_isa_name());
    cr_assert(wino == 0 || wino == 2, "%llu Winograd convolutions of 2 3x3 ones",
              (unsigned long long)wino);
}

/* ---- patched blobs ---- */

/* The blob with its CPU_BLOB header entry passed through `patch` (which
 * returns a malloc'ed replacement), sealed again. */
static void repatch(const void *blob, size_t size, char *(*patch)(const char *), void **out,
                    size_t *out_size)
{
    graph_blob_expect expect = {0};
    graph_blob_header hdr = {0};
    graph *g = NULL;
    OK(graph_blob_read(blob, size, &expect, &hdr, &g));
    const char **values = calloc(hdr.n_props, sizeof *values);
    cr_assert_not_null(values);
    char *patched = NULL;
    for (size_t i = 0; i < hdr.n_props; i++) {
        values[i] = hdr.values[i];
        if (strcmp(hdr.keys[i], "CPU_BLOB") == 0)
            values[i] = patched = patch(hdr.values[i]);
    }
    cr_assert_not_null(patched, "the blob has no CPU_BLOB entry");
    graph_blob_header h2 = hdr;
    h2.values = values;
    graph_buffer buf = {0};
    OK(graph_blob_write(&h2, g, &buf));
    *out = buf.data;
    *out_size = buf.size;
    free(patched);
    free(values);
    graph_blob_header_release(&hdr);
    graph_free(g);
}

/* `from` replaced by `to` in s, once (malloc'ed). */
static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    cr_assert_not_null(at, "'%s' is not in the entry", from);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *r = malloc(n);
    cr_assert_not_null(r);
    snprintf(r, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
    return r;
}

static char *claim_amx(const char *entry)
{
    const char *isa = strstr(entry, "\nisa ");
    cr_assert_not_null(isa);
    const char *end = strchr(isa + 1, '\n');
    char line[128];
    snprintf(line, sizeof line, "%.*s", (int)(end - isa), isa);
    return replace(entry, line, "\nisa avx512_core_amx 3e7");
}

static char *other_version(const char *entry)
{
    char mine[64];
    const dnnl_version_t *v = dnnl_version();
    snprintf(mine, sizeof mine, "onednn %d.%d.%d ", v->major, v->minor, v->patch);
    return replace(entry, mine, "onednn 9.9.9 ");
}

/* The first weight's byte count one more than its descriptor's. */
static char *wrong_size(const char *entry)
{
    const char *w = strstr(entry, "runnel.cpu_blob.weights.0 ");
    cr_assert_not_null(w);
    char name[64], hash[32];
    size_t bytes;
    cr_assert_eq(sscanf(w, "%63s %31s %zu", name, hash, &bytes), 3);
    char from[160], to[160];
    snprintf(from, sizeof from, "%s %s %zu ", name, hash, bytes);
    snprintf(to, sizeof to, "%s %s %zu ", name, hash, bytes + 1);
    return replace(entry, from, to);
}

/* The first weight's descriptors cut short. */
static char *truncated_md(const char *entry)
{
    const char *w = strstr(entry, "runnel.cpu_blob.weights.0 ");
    cr_assert_not_null(w);
    const char *end = strchr(w, '\n');
    size_t n = (size_t)(end - entry);
    char *r = malloc(strlen(entry) + 1);
    cr_assert_not_null(r);
    snprintf(r, strlen(entry) + 1, "%.*s%s", (int)(n - 40), entry, end);
    return r;
}

/* The first weight's converted descriptor claiming 99 dims (ndims, the
 * descriptor's first int, little-endian). */
static char *bad_ndims(const char *entry)
{
    char *r = strdup(entry);
    cr_assert_not_null(r);
    char *w = strstr(r, "runnel.cpu_blob.weights.0 ");
    cr_assert_not_null(w);
    for (int field = 0; field < 4; field++) {
        w = strchr(w, ' ');
        cr_assert_not_null(w);
        w++;
    }
    memcpy(w, "63000000", 8);
    return r;
}

static char *fewer_lines(const char *entry)
{
    return replace(entry, "\nentries ", "\nentries 9");
}

static char *garbage(const char *entry)
{
    (void)entry;
    return strdup("not a\nCPU blob\nentry\n");
}

static void gemm_exported(exported *e)
{
    export_model("tests/cpu/export_gemm.onnx", "f32", e);
}

/* The gemm model's blob patched by `patch` is refused with `status` and a
 * message holding `what` and `what2`; nothing is built. */
static void expect_refused(char *(*patch)(const char *), rn_status status, const char *what,
                           const char *what2)
{
    exported e = {0};
    gemm_exported(&e);
    void *b;
    size_t n;
    repatch(e.blob, e.size, patch, &b, &n);
    rn_compiled_model *imp = NULL;
    cr_assert_eq(rn_core_import_model(e.core, b, n, "CPU", NULL, 0, &imp), status, "%s",
                 rn_last_error());
    cr_assert_null(imp);
    cr_assert(strstr(rn_last_error(), what) != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), what2) != NULL, "%s", rn_last_error());
    free(b);
    exported_free(&e);
}

Test(cpu_export, import_refuses_an_isa_this_cpu_lacks)
{
    if (dnnl_get_effective_cpu_isa() == dnnl_cpu_isa_avx512_core_amx)
        cr_skip_test("this CPU has AMX: no ISA to claim that it lacks");
    expect_refused(claim_amx, RN_UNSUPPORTED, "avx512_core_amx", cpu_isa_name());
}

Test(cpu_export, another_onednn_version_converts_from_the_graph)
{
    exported e = {0};
    gemm_exported(&e);
    void *b;
    size_t n;
    repatch(e.blob, e.size, other_version, &b, &n);
    rn_compiled_model *imp;
    uint64_t restored, reordered;
    OK(import_counted(e.core, b, n, &imp, &restored, &reordered));
    cr_assert_eq(restored, 0);
    cr_assert_eq(reordered, 2, "the two weights are converted from the graph's");
    size_t count;
    void *out = run_bytes(imp, &count);
    cr_assert_eq(count, e.out_bytes);
    cr_assert(memcmp(out, e.out, count) == 0);
    free(out);
    rn_compiled_model_free(imp);
    free(b);
    exported_free(&e);
}

static void expect_parse_error(char *(*patch)(const char *), const char *what)
{
    expect_refused(patch, RN_PARSE_ERROR, "CPU_BLOB", what);
}

Test(cpu_export, a_weight_of_the_wrong_size_is_refused)
{
    expect_parse_error(wrong_size, "not the size of its descriptor");
}

Test(cpu_export, a_truncated_descriptor_is_refused)
{
    expect_parse_error(truncated_md, "not hexadecimal descriptors");
}

Test(cpu_export, a_descriptor_of_99_dims_is_refused)
{
    expect_parse_error(bad_ndims, "not a blocked descriptor of 1 to 12 dims");
}

Test(cpu_export, missing_entries_are_refused)
{
    expect_parse_error(fewer_lines, "lists 2 of 92 weights");
}

Test(cpu_export, a_garbled_entry_is_refused)
{
    expect_parse_error(garbage, "does not start with");
}

/* Bytes of the stored weights flipped, or the blob cut short: the
 * container's checksum or length check refuses it. */
Test(cpu_export, corrupted_or_truncated_blobs_are_refused)
{
    exported e = {0};
    gemm_exported(&e);
    unsigned char *b = malloc(e.size);
    cr_assert_not_null(b);
    memcpy(b, e.blob, e.size);
    b[e.size / 2] ^= 0x5a;
    rn_compiled_model *imp = NULL;
    cr_assert_eq(rn_core_import_model(e.core, b, e.size, "CPU", NULL, 0, &imp), RN_PARSE_ERROR);
    cr_assert(strstr(rn_last_error(), "checksum") != NULL, "%s", rn_last_error());
    cr_assert_null(imp);
    for (size_t cut = 1; cut < e.size; cut += e.size / 7 + 1) {
        cr_assert_neq(rn_core_import_model(e.core, e.blob, cut, "CPU", NULL, 0, &imp), RN_OK);
        cr_assert_null(imp);
    }
    free(b);
    exported_free(&e);
}

/* CACHE_DIR: the second compile imports the stored blob (its weights
 * restored, no reorder) and gives the same output. */
Test(cpu_export, cache_dir_second_compile_restores_the_weights)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/rn_cpu_export_XXXXXX",
             getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    rn_core *core;
    OK(rn_core_create(&core));
    rn_property p[] = {{"CACHE_DIR", dir}, {"INFERENCE_PRECISION_HINT", "f32"}};
    OK(rn_core_set_property(core, NULL, p, 1));
    rn_model *model;
    OK(rn_core_read_model(core, "tests/cpu/export_gemm.onnx", &model));
    rn_compiled_model *first, *second;
    OK(rn_core_compile_model(core, model, "CPU", p + 1, 1, &first));
    uint64_t r0, o0, r1, o1;
    cpu_blob_counters(&r0, &o0);
    OK(rn_core_compile_model(core, model, "CPU", p + 1, 1, &second));
    cpu_blob_counters(&r1, &o1);
    char loaded[16];
    OK(rn_compiled_model_get_property(second, "LOADED_FROM_CACHE", loaded, sizeof loaded));
    cr_assert_str_eq(loaded, "YES");
    cr_assert_eq(r1 - r0, 2, "the second compile did not import the cached blob's weights");
    cr_assert_eq(o1 - o0, 0);
    size_t n1, n2;
    float *a = cpu_testing_run_once(first, &n1), *b = cpu_testing_run_once(second, &n2);
    cr_assert_eq(n1, n2);
    cr_assert(memcmp(a, b, n1 * sizeof *a) == 0);
    free(a);
    free(b);
    rn_compiled_model_free(first);
    rn_compiled_model_free(second);
    rn_model_free(model);
    rn_core_free(core);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
