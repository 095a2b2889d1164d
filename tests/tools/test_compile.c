/* compile, run as a subprocess: the blob it exports, bench on the blob
 * (same outputs as on the model), and its errors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tools/tool_util.h"

static void assert_one_line_error(const tool_run *r, int status, const char *needle)
{
    cr_assert_eq(r->status, status, "exit status %d, expected %d; stderr: %s", r->status, status,
                 r->err);
    cr_assert_eq(tool_count_lines(r->err), 1, "expected one line on stderr, got:\n%s", r->err);
    cr_assert(strstr(r->err, needle) != NULL, "'%s' is not in: %s", needle, r->err);
}

/* Compiles `model` into dir/model.blob with extra flags. */
static void compile_ok(const char *model, const char *blob, const char *const *extra)
{
    const char *args[32] = {"-m", model, "-d", "REF", "-o", blob};
    size_t n = 6;
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    tool_run r = tool_exec("compile", args, NULL);
    cr_assert_eq(r.status, 0, "compile failed: %s", r.err);
    cr_expect(strstr(r.out, blob) != NULL, "%s", r.out);
    tool_run_free(&r);
}

/* Runs bench (sync, 3 iterations) and writes the outputs into out. */
static void bench_outputs(const char *model, const char *out, const char *const *extra)
{
    const char *args[32] = {"-m", model, "-api", "sync", "-niter", "3", "-o", out};
    size_t n = 8;
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    tool_run r = tool_exec("bench", args, NULL);
    cr_assert_eq(r.status, 0, "bench on %s failed: %s", model, r.err);
    tool_run_free(&r);
}

static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = tool_read_file(a, &na), *y = tool_read_file(b, &nb);
    cr_assert(x != NULL && y != NULL, "missing %s or %s", a, b);
    cr_expect_eq(na, nb, "%s and %s differ in size", a, b);
    cr_expect(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

Test(compile, exports_a_blob_that_bench_runs_with_the_same_outputs)
{
    char dir[512], blob[600], from_model[600], from_blob[600], a[700], b[700];
    tool_temp_dir(dir, sizeof dir);
    snprintf(blob, sizeof blob, "%s/conv.blob", dir);
    snprintf(from_model, sizeof from_model, "%s/model_out", dir);
    snprintf(from_blob, sizeof from_blob, "%s/blob_out", dir);
    compile_ok(CONV_MODEL, blob, NULL);
    size_t size;
    char *bytes = tool_read_file(blob, &size);
    cr_assert(bytes != NULL && size > 16);
    cr_expect(memcmp(bytes, "RNNLBLOB", 8) == 0, "the blob does not start with its magic");
    free(bytes);
    bench_outputs(CONV_MODEL, from_model, NULL);
    /* No -d: bench takes the device from the blob's header. */
    bench_outputs(blob, from_blob, NULL);
    snprintf(a, sizeof a, "%s/y.npy", from_model);
    snprintf(b, sizeof b, "%s/y.npy", from_blob);
    assert_same_file(a, b);
}

Test(compile, properties_are_stored_in_the_blob)
{
    char dir[512], blob[600], json[600];
    tool_temp_dir(dir, sizeof dir);
    snprintf(blob, sizeof blob, "%s/add.blob", dir);
    snprintf(json, sizeof json, "%s/report.json", dir);
    const char *extra[] = {"-hint", "latency", "-prop", "EXECUTION_MODE_HINT=ACCURACY", NULL};
    compile_ok(ADD_MODEL, blob, extra);
    /* -hint none on bench: the blob's own hint stays. */
    const char *args[] = {"-m", blob, "-niter", "2", "-hint", "none", "-json", json, NULL};
    tool_run r = tool_exec("bench", args, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "Importing the compiled blob") != NULL, "%s", r.out);
    tool_run_free(&r);
    char *text = tool_read_file(json, NULL);
    char error[256];
    json_value *root = json_parse(text, error, sizeof error);
    cr_assert_not_null(root, "%s", error);
    cr_expect_str_eq(json_at(root, "compiled_model_properties.PERFORMANCE_HINT")->string,
                     "LATENCY");
    cr_expect_eq(json_at(root, "settings.model_is_blob")->boolean, true);
    json_free(root);
    free(text);
}

Test(compile, shape_reshapes_the_model_before_compiling)
{
    char dir[512], blob[600];
    tool_temp_dir(dir, sizeof dir);
    snprintf(blob, sizeof blob, "%s/x.blob", dir);
    const char *args[] = {"-m", DYN_MODEL, "-shape", "x[2,4],y[2,4]", "-o", blob, NULL};
    tool_run r = tool_exec("compile", args, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "reshaped") != NULL, "%s", r.out);
    tool_run_free(&r);
    /* The reshaped blob runs without -data_shape. */
    const char *bench[] = {"-m", blob, "-niter", "1", NULL};
    r = tool_exec("bench", bench, NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "Input x (f32) [2,4]") != NULL, "%s", r.out);
    tool_run_free(&r);
}

Test(compile, errors_are_one_line)
{
    char dir[512], blob[600], corrupt[600];
    tool_temp_dir(dir, sizeof dir);
    snprintf(blob, sizeof blob, "%s/out.blob", dir);
    struct {
        const char *args[10];
        int status;
        const char *needle;
    } cases[] = {
        {{"-m", ADD_MODEL, "-o", blob, "-what", NULL}, 2, "unknown flag '-what'"},
        {{"-o", blob, NULL}, 2, "no model"},
        {{"-m", ADD_MODEL, "-prop", "NOEQUALS", NULL}, 2, "KEY=VALUE"},
        {{"-m", "/nonexistent.onnx", "-o", blob, NULL}, 1, "/nonexistent.onnx"},
        {{"-m", ADD_MODEL, "-d", "NOPE", "-o", blob, NULL}, 1, "device 'NOPE' is not available"},
        {{"-m", ADD_MODEL, "-o", blob, "-prop", "BOGUS_KEY=1", NULL}, 1, "BOGUS_KEY"},
        {{"-m", ADD_MODEL, "-o", blob, "-shape", "x[9,9,9]", NULL}, 1, "'x'"},
        {{"-m", ADD_MODEL, "-o", "/nonexistent/dir/out.blob", NULL}, 1, "/nonexistent/dir"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tool_run r = tool_exec("compile", cases[i].args, NULL);
        assert_one_line_error(&r, cases[i].status, cases[i].needle);
        tool_run_free(&r);
    }
    /* A blob cut short is refused by bench with the import's reason. */
    compile_ok(ADD_MODEL, blob, NULL);
    size_t size;
    char *bytes = tool_read_file(blob, &size);
    cr_assert_not_null(bytes);
    snprintf(corrupt, sizeof corrupt, "%s/cut.blob", dir);
    FILE *f = fopen(corrupt, "wb");
    fwrite(bytes, 1, size / 2, f);
    fclose(f);
    free(bytes);
    const char *args[] = {"-m", corrupt, "-niter", "1", NULL};
    tool_run r = tool_exec("bench", args, NULL);
    assert_one_line_error(&r, 1, "cut.blob");
    tool_run_free(&r);
}
