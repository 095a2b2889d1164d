/* runnel's OpenCL program, built once per context, and its binary cache.
 *
 * The program (program.c's source) is built the first time a kernel needs
 * it. Building from source costs seconds on PoCL (its LLVM front end, then a
 * code generation per kernel), so a built program's binary
 * (CL_PROGRAM_BINARIES) is kept as a *program record*:
 *
 *   "RNGPUPRG" u32 version, u64 key, string key text, u64 n, n binary bytes,
 *   u64 XXH64 (seed 0) of every byte before it
 *
 * The key text names everything the binary depends on: the build options,
 * the platform, the device, its OpenCL and driver versions and a hash of the
 * source; the key is its XXH64. Records live in CACHE_DIR (the folder
 * `gpu-programs`, one file per key, written atomically by graph_cache_store)
 * and inside exported blobs (export.c). A record that is corrupt, truncated,
 * of another key or that the driver refuses is ignored and the program is
 * built from source: a bad cache never fails a compile. A build from source
 * that fails reports the build log. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/serialize.h"
#include "plugins/gpu/gpu.h"

#define RECORD_MAGIC   "RNGPUPRG"
#define RECORD_VERSION 1u
#define BUILD_OPTIONS  "-cl-std=CL1.2"
#define CACHE_SUBDIR   "gpu-programs"

/* ---- the key ---- */

static void key_text(const gpu_device *d, char *text, size_t size)
{
    char dev_version[128] = "", driver[128] = "", plat_name[128] = "", plat_version[128] = "";
    clGetDeviceInfo(d->device, CL_DEVICE_VERSION, sizeof dev_version - 1, dev_version, NULL);
    clGetDeviceInfo(d->device, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL);
    clGetPlatformInfo(d->platform, CL_PLATFORM_NAME, sizeof plat_name - 1, plat_name, NULL);
    clGetPlatformInfo(d->platform, CL_PLATFORM_VERSION, sizeof plat_version - 1, plat_version,
                      NULL);
    uint64_t src = 0;
    size_t src_bytes = 0;
    for (int i = 0; gpu_program_sources[i] != NULL; i++) {
        size_t n = strlen(gpu_program_sources[i]);
        src = graph_hash_bytes(gpu_program_sources[i], n, src);
        src_bytes += n;
    }
    snprintf(text, size,
             "options %s\nplatform %s; %s\ndevice %s; %s\ndriver %s\nsource %016" PRIx64
             " (%zu bytes)",
             BUILD_OPTIONS, plat_name, plat_version, d->name, dev_version, driver, src, src_bytes);
}

/* ---- records ---- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24);
}

/* The record of `n` binary bytes (malloc'ed). */
static rn_status record_encode(const gpu_device *d, const uint8_t *bin, size_t n, uint8_t **out,
                               size_t *out_size)
{
    size_t tlen = strlen(d->key_text);
    size_t size = 8 + 4 + 8 + 4 + tlen + 8 + n + 8;
    uint8_t *r = malloc(size), *p = r;
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "GPU: out of memory for a program record");
    memcpy(p, RECORD_MAGIC, 8), p += 8;
    put32(p, RECORD_VERSION), p += 4;
    put64(p, d->key), p += 8;
    put32(p, (uint32_t)tlen), p += 4;
    memcpy(p, d->key_text, tlen), p += tlen;
    put64(p, n), p += 8;
    memcpy(p, bin, n), p += n;
    put64(p, graph_hash_bytes(r, (size_t)(p - r), 0));
    *out = r;
    *out_size = size;
    return RN_OK;
}

/* Whether the bytes are an intact record (magic, version, checksum);
 * false and the reason when not. */
static bool record_intact(const uint8_t *r, size_t size, char *why, size_t why_size)
{
    if (size < 8 + 4 + 8 + 4 + 8 + 8 || memcmp(r, RECORD_MAGIC, 8) != 0) {
        snprintf(why, why_size, "not a program record (%zu bytes)", size);
        return false;
    }
    if (get32(r + 8) != RECORD_VERSION) {
        snprintf(why, why_size, "record version %" PRIu32 ", this build reads %u", get32(r + 8),
                 RECORD_VERSION);
        return false;
    }
    if (get64(r + size - 8) != graph_hash_bytes(r, size - 8, 0)) {
        snprintf(why, why_size, "checksum mismatch: the record is corrupted or truncated");
        return false;
    }
    return true;
}

rn_status gpu_program_record_check(const void *record, size_t size)
{
    char why[128];
    if (!record_intact(record, size, why, sizeof why))
        return rn_set_error(RN_PARSE_ERROR, "the GPU program record: %s", why);
    return RN_OK;
}

/* The binary in a record for this device's key; NULL and the reason when
 * the record is not one. */
static const uint8_t *record_decode(const gpu_device *d, const uint8_t *r, size_t size,
                                    size_t *n_out, char *why, size_t why_size)
{
    size_t tlen = strlen(d->key_text);
    if (!record_intact(r, size, why, why_size))
        return NULL;
    if (get64(r + 12) != d->key || get32(r + 20) != tlen || 24 + tlen + 8 + 8 > size ||
        memcmp(r + 24, d->key_text, tlen) != 0) {
        snprintf(why, why_size, "built for another device, driver, source or options");
        return NULL;
    }
    uint64_t n = get64(r + 24 + tlen);
    if (n != size - (24 + tlen + 8 + 8) || n == 0) {
        snprintf(why, why_size, "binary size %" PRIu64 " disagrees with the record's", n);
        return NULL;
    }
    *n_out = (size_t)n;
    return r + 24 + tlen + 8;
}

/* ---- building ---- */

static rn_status build_failed(gpu_device *d, cl_program prog, cl_int err)
{
    size_t len = 0;
    clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
    char *log = malloc(len + 1);
    if (log != NULL) {
        log[0] = '\0';
        clGetProgramBuildInfo(prog, d->device, CL_PROGRAM_BUILD_LOG, len, log, NULL);
        log[len] = '\0';
    }
    rn_status st =
        rn_set_error(RN_DEVICE_ERROR, "GPU: building runnel's OpenCL kernels failed (%s): %.3000s",
                     gpu_cl_error(err), log != NULL ? log : "(no build log)");
    free(log);
    return st;
}

static rn_status build_from_source(gpu_device *d, cl_program *out)
{
    cl_uint parts = 0;
    while (gpu_program_sources[parts] != NULL)
        parts++;
    cl_int err;
    cl_program prog = clCreateProgramWithSource(d->context, parts,
                                                (const char **)gpu_program_sources, NULL, &err);
    if (prog == NULL)
        return rn_set_error(RN_DEVICE_ERROR, "GPU: clCreateProgramWithSource failed: %s",
                            gpu_cl_error(err));
    if ((err = clBuildProgram(prog, 1, &d->device, BUILD_OPTIONS, NULL, NULL)) != CL_SUCCESS) {
        rn_status st = build_failed(d, prog, err);
        clReleaseProgram(prog);
        return st;
    }
    *out = prog;
    return RN_OK;
}

/* The program from a record; NULL (and the reason) when it is unusable. */
static cl_program build_from_record(gpu_device *d, const uint8_t *record, size_t size, char *why,
                                    size_t why_size)
{
    size_t n = 0;
    const uint8_t *bin = record_decode(d, record, size, &n, why, why_size);
    if (bin == NULL)
        return NULL;
    cl_int err, status = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(d->context, 1, &d->device, &n, &bin, &status, &err);
    if (prog == NULL || status != CL_SUCCESS) {
        snprintf(why, why_size, "the driver refused the binary: %s",
                 gpu_cl_error(prog == NULL ? err : status));
        if (prog != NULL)
            clReleaseProgram(prog);
        return NULL;
    }
    if ((err = clBuildProgram(prog, 1, &d->device, BUILD_OPTIONS, NULL, NULL)) != CL_SUCCESS) {
        snprintf(why, why_size, "building the binary failed: %s", gpu_cl_error(err));
        clReleaseProgram(prog);
        return NULL;
    }
    return prog;
}

/* The program's binary now (malloc'ed); PoCL's grows as kernels get code
 * generated for the sizes they run at. */
static uint8_t *program_binary(cl_program prog, size_t *n)
{
    size_t size = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0)
        return NULL;
    uint8_t *bin = malloc(size);
    if (bin == NULL)
        return NULL;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) != CL_SUCCESS) {
        free(bin);
        return NULL;
    }
    *n = size;
    return bin;
}

static void cache_folder(const gpu_device *d, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", d->cache_dir, CACHE_SUBDIR);
}

/* Writes the program's current binary into CACHE_DIR (when set) unless the
 * entry there already has this size. A cache that cannot be written is no
 * error: the next process builds from source again. Under build_lock. */
static void store_locked(gpu_device *d)
{
    if (d->cache_dir[0] == '\0' || d->program == NULL)
        return;
    size_t n = 0;
    uint8_t *bin = program_binary(d->program, &n);
    uint8_t *record = NULL;
    size_t size = 0;
    if (bin != NULL && n != d->stored_binary_size &&
        record_encode(d, bin, n, &record, &size) == RN_OK) {
        char dir[sizeof d->cache_dir + sizeof CACHE_SUBDIR + 1];
        cache_folder(d, dir, sizeof dir);
        if (graph_cache_store(dir, d->key, record, size) == RN_OK)
            d->stored_binary_size = n;
    }
    free(bin);
    free(record);
    rn_clear_error();
}

/* Tries the record at hand, then the one in CACHE_DIR. Under build_lock. */
static void load_locked(gpu_device *d, const uint8_t *record, size_t size)
{
    char why[256] = "";
    if (record != NULL && (d->program = build_from_record(d, record, size, why, sizeof why)))
        d->program_origin = GPU_PROGRAM_FROM_BLOB;
    if (d->program != NULL || d->cache_dir[0] == '\0')
        return;
    char dir[sizeof d->cache_dir + sizeof CACHE_SUBDIR + 1];
    cache_folder(d, dir, sizeof dir);
    void *bytes = NULL;
    size_t n = 0;
    if (graph_cache_load(dir, d->key, &bytes, &n) == RN_OK) {
        d->program = build_from_record(d, bytes, n, why, sizeof why);
        if (d->program != NULL) {
            d->program_origin = GPU_PROGRAM_FROM_CACHE_DIR;
            /* Rewritten at the end only if code was generated since. */
            size_t bn = 0;
            uint8_t *bin = program_binary(d->program, &bn);
            d->stored_binary_size = bin != NULL ? bn : 0;
            free(bin);
        }
    }
    free(bytes);
    rn_clear_error();
}

static void key_init_locked(gpu_device *d)
{
    if (d->key_text[0] != '\0')
        return;
    key_text(d, d->key_text, sizeof d->key_text);
    d->key = graph_hash_bytes(d->key_text, strlen(d->key_text), 0);
}

rn_status gpu_device_program(gpu_device *d, cl_program *out)
{
    rn_status st = RN_OK;
    pthread_mutex_lock(&d->build_lock);
    key_init_locked(d);
    if (d->program == NULL)
        load_locked(d, NULL, 0);
    if (d->program == NULL) {
        st = build_from_source(d, &d->program);
        if (st == RN_OK) {
            d->program_origin = GPU_PROGRAM_FROM_SOURCE;
            store_locked(d);
        }
    }
    if (st == RN_OK)
        *out = d->program;
    pthread_mutex_unlock(&d->build_lock);
    return st;
}

void gpu_device_offer_program(gpu_device *d, const void *record, size_t size)
{
    pthread_mutex_lock(&d->build_lock);
    key_init_locked(d);
    if (d->program == NULL)
        load_locked(d, record, size);
    pthread_mutex_unlock(&d->build_lock);
}

rn_status gpu_device_program_record(gpu_device *d, uint8_t **record, size_t *size)
{
    cl_program prog;
    rn_status st = gpu_device_program(d, &prog);
    if (st != RN_OK)
        return st;
    pthread_mutex_lock(&d->build_lock);
    size_t n = 0;
    uint8_t *bin = program_binary(prog, &n);
    if (bin == NULL)
        st = rn_set_error(RN_DEVICE_ERROR, "GPU: the driver gave no binary of runnel's program");
    else
        st = record_encode(d, bin, n, record, size);
    free(bin);
    pthread_mutex_unlock(&d->build_lock);
    return st;
}

void gpu_device_set_cache_dir(gpu_device *d, const char *dir)
{
    pthread_mutex_lock(&d->build_lock);
    if (strcmp(d->cache_dir, dir) != 0) { /* the Core passes it before every compile */
        snprintf(d->cache_dir, sizeof d->cache_dir, "%s", dir);
        d->stored_binary_size = 0;
    }
    pthread_mutex_unlock(&d->build_lock);
}

void gpu_device_cache_dir(gpu_device *d, char *buf, size_t size)
{
    pthread_mutex_lock(&d->build_lock);
    snprintf(buf, size, "%s", d->cache_dir);
    pthread_mutex_unlock(&d->build_lock);
}

gpu_program_origin gpu_device_program_origin(gpu_device *d)
{
    pthread_mutex_lock(&d->build_lock);
    gpu_program_origin o = d->program_origin;
    pthread_mutex_unlock(&d->build_lock);
    return o;
}

void gpu_device_program_release(gpu_device *d)
{
    pthread_mutex_lock(&d->build_lock);
    /* What ran since the build (PoCL's code for the sizes run) goes into the
     * cache for the next process. */
    store_locked(d);
    if (d->program != NULL)
        clReleaseProgram(d->program);
    d->program = NULL;
    pthread_mutex_unlock(&d->build_lock);
}
