/* The GPU's program-binary cache (plugins/gpu/program_cache.c, export.c):
 * the first compile with CACHE_DIR builds runnel's OpenCL program from
 * source and leaves its binary in CACHE_DIR/gpu-programs; a later device
 * (a new Core: a new OpenCL context) loads that binary instead
 * (GPU_PROGRAM_FROM_CACHE=YES); an exported blob carries the binary. A
 * corrupted or foreign (another driver's) entry is rebuilt from source and
 * replaced, and the results still match REF; a blob whose record was
 * changed is refused by its checksum. Skips, saying why, where the GPU
 * device cannot start. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "runnel/runnel.h"

#include "tests/gpu/gpu_core.h"
#include "tests/gpu/pocl_lsan.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

/* A core with the GPU loaded and CACHE_DIR `dir` (NULL: none); skips the
 * test, with the reason, when the GPU cannot start. */
static rn_core *cache_core(const char *dir)
{
    rn_core *core = gpu_core();
    if (dir != NULL) {
        rn_property p = {"CACHE_DIR", dir};
        cr_assert_eq(rn_core_set_property(core, NULL, &p, 1), RN_OK, "%s", rn_last_error());
    }
    return core;
}

static rn_model *node_model(rn_core *core, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, name);
    rn_model *model;
    cr_assert_eq(rn_core_read_model(core, path, &model), RN_OK, "%s: %s", name, rn_last_error());
    return model;
}

static rn_compiled_model *compile(rn_core *core, rn_model *model, const char *device)
{
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_compile_model(core, model, device, NULL, 0, &cm), RN_OK, "%s: %s", device,
                 rn_last_error());
    return cm;
}

static const char *from_cache(rn_compiled_model *cm)
{
    static char buf[16];
    cr_assert_eq(rn_compiled_model_get_property(cm, "GPU_PROGRAM_FROM_CACHE", buf, sizeof buf),
                 RN_OK, "%s", rn_last_error());
    return buf;
}

/* Output 0 of one run with deterministic inputs in [-1, 1) (malloc'ed). */
static float *infer(rn_compiled_model *cm, size_t *count)
{
    rn_infer_request *r;
    cr_assert_eq(rn_compiled_model_create_infer_request(cm, &r), RN_OK, "%s", rn_last_error());
    gpu_fill_inputs(cm, r);
    cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK, "%s", rn_last_error());
    *count = rn_tensor_element_count(out);
    float *copy = malloc(*count * sizeof *copy + 1);
    memcpy(copy, rn_tensor_data(out), *count * sizeof *copy);
    rn_infer_request_free(r);
    return copy;
}

/* The GPU compiled model's output equals REF's on the same inputs (rtol
 * 1e-3, ONNX's). */
static void expect_like_ref(rn_core *core, rn_model *model, rn_compiled_model *gpu)
{
    rn_compiled_model *ref = compile(core, model, "REF");
    size_t n_ref, n_gpu;
    float *want = infer(ref, &n_ref), *got = infer(gpu, &n_gpu);
    cr_assert_eq(n_gpu, n_ref);
    for (size_t i = 0; i < n_ref; i++)
        cr_assert(fabsf(got[i] - want[i]) <= 1e-3f * fabsf(want[i]) + 1e-5f,
                  "element %zu: GPU %g, REF %g", i, got[i], want[i]);
    free(want);
    free(got);
    rn_compiled_model_free(ref);
}

static void make_dir(char *buf, size_t size)
{
    const char *tmp = getenv("TEST_TMPDIR");
    snprintf(buf, size, "%s/rn_gpu_cache_XXXXXX", tmp != NULL ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(buf));
}

/* The number of program entries in dir/gpu-programs, and the path of the
 * last (path holds 1024 bytes). */
static int program_entries(const char *dir, char *path, size_t size)
{
    char sub[600];
    snprintf(sub, sizeof sub, "%s/gpu-programs", dir);
    DIR *d = opendir(sub);
    int n = 0;
    path[0] = '\0';
    if (d == NULL)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && strstr(e->d_name, ".rnblob") != NULL) {
            snprintf(path, size, "%s/%s", sub, e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

/* Compiles `name` on the GPU in a new core with CACHE_DIR `dir`, checks
 * where the program came from and the result against REF. */
static void compile_in_new_core(const char *dir, const char *name, const char *expect)
{
    rn_core *core = cache_core(dir);
    rn_model *model = node_model(core, name);
    rn_compiled_model *cm = compile(core, model, "GPU");
    cr_assert_str_eq(from_cache(cm), expect, "%s", name);
    expect_like_ref(core, model, cm);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(gpu_cache, the_second_compile_with_the_same_cache_dir_loads_the_binary)
{
    char dir[512], entry[1024];
    make_dir(dir, sizeof dir);
    compile_in_new_core(dir, "test_sigmoid", "NO");
    cr_assert_eq(program_entries(dir, entry, sizeof entry), 1, "no program entry in %s", dir);
    /* Another model: the Core's model cache misses, the program's hits. */
    compile_in_new_core(dir, "test_softmax_axis_1", "YES");
    /* The same model: the Core's cache imports the blob, whose record
     * holds the binary. */
    compile_in_new_core(dir, "test_sigmoid", "YES");
    /* The device reports the folder the Core gave it. */
    rn_core *core = cache_core(dir);
    char back[512];
    rn_model *model = node_model(core, "test_sigmoid");
    rn_compiled_model *cm = compile(core, model, "GPU");
    cr_assert_eq(rn_core_get_property(core, "GPU", "CACHE_DIR", back, sizeof back), RN_OK);
    cr_assert_str_eq(back, dir);
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
}

Test(gpu_cache, without_a_cache_dir_the_program_is_built_from_source)
{
    compile_in_new_core(NULL, "test_sigmoid", "NO");
    compile_in_new_core(NULL, "test_sigmoid", "NO");
}

/* Overwrites `n` bytes in the middle of the file with 0x5a. */
static void corrupt(const char *path, size_t n)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    cr_assert_gt(size, (long)n);
    fseek(f, size / 2, SEEK_SET);
    for (size_t i = 0; i < n; i++)
        fputc(0x5a, f);
    fclose(f);
}

Test(gpu_cache, a_corrupted_entry_is_rebuilt_from_source_and_replaced)
{
    char dir[512], entry[1024];
    make_dir(dir, sizeof dir);
    compile_in_new_core(dir, "test_sigmoid", "NO");
    cr_assert_eq(program_entries(dir, entry, sizeof entry), 1);
    corrupt(entry, 64);
    compile_in_new_core(dir, "test_softmax_axis_1", "NO");
    /* The rebuilt program replaced the entry: the next device loads it. */
    compile_in_new_core(dir, "test_add_bcast", "YES");
    /* A truncated entry, likewise. */
    cr_assert_eq(truncate(entry, 100), 0);
    compile_in_new_core(dir, "test_leakyrelu", "NO");
    compile_in_new_core(dir, "test_lrn", "YES");
}

/* Makes the record at b (size bytes) look written by another driver: one
 * character of its key text changed ("options" → "Options"), the checksum
 * recomputed, so that only the key check can refuse it. */
static void forge_other_driver(uint8_t *b, size_t size)
{
    cr_assert_gt(size, 40);
    cr_assert_eq(memcmp(b, "RNGPUPRG", 8), 0);
    /* magic 8, version 4, key 8, text length 4, then the text */
    cr_assert_eq(memcmp(b + 24, "options", 7), 0, "the key text starts with its options");
    b[24] = 'O';
    uint64_t sum = XXH64(b, size - 8, 0);
    for (int i = 0; i < 8; i++)
        b[size - 8 + (size_t)i] = (uint8_t)(sum >> (8 * i));
}

static void forge_file(const char *path)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    cr_assert_gt(size, 0);
    uint8_t *b = malloc((size_t)size);
    rewind(f);
    cr_assert_eq(fread(b, 1, (size_t)size, f), (size_t)size);
    forge_other_driver(b, (size_t)size);
    rewind(f);
    cr_assert_eq(fwrite(b, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    free(b);
}

Test(gpu_cache, an_entry_of_another_driver_is_rebuilt_from_source_and_replaced)
{
    char dir[512], entry[1024];
    make_dir(dir, sizeof dir);
    compile_in_new_core(dir, "test_sigmoid", "NO");
    cr_assert_eq(program_entries(dir, entry, sizeof entry), 1);
    forge_file(entry);
    compile_in_new_core(dir, "test_softmax_axis_1", "NO");
    compile_in_new_core(dir, "test_add_bcast", "YES");
}

/* Exports test_sigmoid compiled on the GPU (malloc'ed bytes). */
static void *export_sigmoid(size_t *size)
{
    rn_core *core = cache_core(NULL);
    rn_model *model = node_model(core, "test_sigmoid");
    rn_compiled_model *cm = compile(core, model, "GPU");
    void *blob;
    cr_assert_eq(rn_compiled_model_export(cm, &blob, size), RN_OK, "%s", rn_last_error());
    rn_compiled_model_free(cm);
    rn_model_free(model);
    rn_core_free(core);
    return blob;
}

/* Imports the blob into a new core without CACHE_DIR: where the program
 * came from, and the result against REF. */
static void import_in_new_core(const void *blob, size_t size, const char *expect)
{
    rn_core *core = cache_core(NULL);
    rn_compiled_model *cm;
    cr_assert_eq(rn_core_import_model(core, blob, size, "GPU", NULL, 0, &cm), RN_OK, "%s",
                 rn_last_error());
    cr_assert_str_eq(from_cache(cm), expect);
    rn_model *model = node_model(core, "test_sigmoid");
    expect_like_ref(core, model, cm);
    rn_model_free(model);
    rn_compiled_model_free(cm);
    rn_core_free(core);
}

/* Where the blob's GPU_PROGRAM_RECORD header entry (hexadecimal) starts,
 * and its length; fails the test when there is none. */
static size_t record_entry(const uint8_t *blob, size_t size, size_t *len)
{
    static const char key[] = "GPU_PROGRAM_RECORD";
    const uint8_t *k = memmem(blob, size, key, sizeof key - 1);
    cr_assert_not_null(k, "the blob has no program record");
    /* key string, then the value: u32 length, bytes */
    const uint8_t *v = k + sizeof key - 1;
    *len = (size_t)v[0] | (size_t)v[1] << 8 | (size_t)v[2] << 16 | (size_t)v[3] << 24;
    return (size_t)(v + 4 - blob);
}

Test(gpu_cache, an_exported_blob_carries_the_program_binary)
{
    size_t size, len;
    uint8_t *blob = export_sigmoid(&size);
    size_t at = record_entry(blob, size, &len);
    cr_assert_gt(len, 1000, "a program binary is more than a few bytes");
    cr_assert_eq(memcmp(blob + at, "524e475055505247", 16), 0, "hex of RNGPUPRG");
    import_in_new_core(blob, size, "YES");
    /* A byte of the record changed: the blob's checksum refuses it. */
    blob[at + len / 2] = blob[at + len / 2] == 'a' ? 'b' : 'a';
    rn_core *core = cache_core(NULL);
    rn_compiled_model *cm = NULL;
    cr_assert_neq(rn_core_import_model(core, blob, size, "GPU", NULL, 0, &cm), RN_OK);
    cr_assert(strstr(rn_last_error(), "checksum") != NULL, "%s", rn_last_error());
    cr_assert_null(cm);
    rn_core_free(core);
    free(blob);
}
