/* NVIDIA_AUTOTUNE: what choosing among cuDNN's candidate engines by their
 * time needs beside the plans themselves (cudnn_graph.c finalises and times
 * them). The policy — how many candidates, which one wins, how the choice
 * is named — is pure and tested without a device; the tuner holds the
 * device scratch and the events one program's tuning reuses for every
 * graph, and its budget. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/nvidia.h"

int nv_tune_cap(double spent_ms, double budget_ms)
{
    return spent_ms < budget_ms ? NV_TUNE_MAX_CANDIDATES : 1;
}

static bool timing_ok(float ms)
{
    return isfinite(ms) && ms > 0.0f;
}

int nv_tune_pick(const float *ms, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (timing_ok(ms[i]) && (best < 0 || ms[i] < ms[best]))
            best = i;
    return best;
}

float nv_tune_min(const float *runs, int n)
{
    float m = -1.0f;
    for (int i = 0; i < n; i++) {
        if (!timing_ok(runs[i]))
            return -1.0f;
        if (m < 0.0f || runs[i] < m)
            m = runs[i];
    }
    return m;
}

void nv_tune_label(char *buf, size_t size, long long engine, bool fallback, const float *ms, int n,
                   int best)
{
    const char *from = fallback ? "fallback, " : "";
    if (n < 2)
        snprintf(buf, size, "engine %lld%s", engine, fallback ? " (fallback)" : "");
    else if (best < 0)
        snprintf(buf, size, "engine %lld (%stuning failed: the heuristic's first)", engine, from);
    else if (best == 0)
        snprintf(buf, size, "engine %lld (%stuned: the first, %d timed)", engine, from, n);
    else if (timing_ok(ms[0]))
        snprintf(buf, size, "engine %lld (%stuned: %.2f of the first's time, %d timed)", engine,
                 from, (double)(ms[best] / ms[0]), n);
    else /* the first failed to run: no ratio */
        snprintf(buf, size, "engine %lld (%stuned: the first failed, %d timed)", engine, from, n);
}

void nv_tune_label_again(char *buf, size_t size, long long engine, bool fallback,
                         const nv_tune_record *r, bool same)
{
    const char *from = fallback ? "fallback, " : "";
    if (!same)
        snprintf(buf, size,
                 "engine %lld (%sthe first: fewer candidates than an earlier graph of "
                 "its shapes)",
                 engine, from);
    else if (r->rank == 0)
        snprintf(buf, size, "engine %lld (%stuned as an earlier graph of its shapes: the first)",
                 engine, from);
    else if (r->first_ms > 0.0f)
        snprintf(
            buf, size,
            "engine %lld (%stuned as an earlier graph of its shapes: %.2f of the first's time)",
            engine, from, (double)(r->best_ms / r->first_ms));
    else
        snprintf(buf, size, "engine %lld (%stuned as an earlier graph of its shapes)", engine,
                 from);
}

const nv_tune_record *nv_tune_find(const nv_tune_table *t, const int64_t *key)
{
    for (int i = 0; i < t->n; i++)
        if (memcmp(t->records[i].key, key, sizeof t->records[i].key) == 0)
            return &t->records[i];
    return NULL;
}

void nv_tune_remember(nv_tune_table *t, const int64_t *key, int rank, float first_ms, float best_ms)
{
    if (nv_tune_find(t, key) != NULL)
        return;
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 16;
        nv_tune_record *r = realloc(t->records, (size_t)cap * sizeof *r);
        if (r == NULL)
            return;
        t->records = r;
        t->cap = cap;
    }
    nv_tune_record *r = &t->records[t->n++];
    memcpy(r->key, key, sizeof r->key);
    r->rank = rank;
    r->first_ms = first_ms;
    r->best_ms = best_ms;
}

void nv_tune_merge(nv_tune_table *t, const nv_tune_table *from)
{
    for (int i = 0; i < from->n; i++)
        nv_tune_remember(t, from->records[i].key, from->records[i].rank, from->records[i].first_ms,
                         from->records[i].best_ms);
}

void nv_tune_table_release(nv_tune_table *t)
{
    free(t->records);
    *t = (nv_tune_table){0};
}

rn_status nv_tune_format(const nv_tune_table *t, size_t cudnn_version, bool allow_tf32, char **text)
{
    /* A record: 28 keys of up to 20 characters, the rank, two times. */
    size_t size = 64 + (size_t)t->n * (NV_CONV_KEY * 21 + 64);
    char *buf = malloc(size);
    if (buf == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    size_t used =
        (size_t)snprintf(buf, size, "nvtune1 cudnn=%zu tf32=%d", cudnn_version, (int)allow_tf32);
    for (int i = 0; i < t->n && used < size; i++) {
        const nv_tune_record *r = &t->records[i];
        for (int k = 0; k < NV_CONV_KEY && used < size; k++)
            used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "," : " ",
                                     (long long)r->key[k]);
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, ":%d:%.6g:%.6g", r->rank,
                                     (double)r->first_ms, (double)r->best_ms);
    }
    if (used >= size) { /* cannot happen with the sizes above */
        free(buf);
        return rn_set_error(RN_INTERNAL, "NVIDIA: the tuned choices do not fit their text");
    }
    *text = buf;
    return RN_OK;
}

/* One record "K0,...,K27:RANK:FIRST:BEST" at *at; *at past it. */
static bool parse_record(const char **at, nv_tune_record *r)
{
    const char *p = *at;
    char *end;
    for (int k = 0; k < NV_CONV_KEY; k++) {
        if (k > 0 && *p++ != ',')
            return false;
        r->key[k] = strtoll(p, &end, 10);
        if (end == p)
            return false;
        p = end;
    }
    if (*p++ != ':')
        return false;
    long rank = strtol(p, &end, 10);
    if (end == p || *end != ':' || rank < 0 || rank >= NV_TUNE_MAX_CANDIDATES)
        return false;
    p = end + 1;
    r->rank = (int)rank;
    r->first_ms = strtof(p, &end);
    if (end == p || *end != ':')
        return false;
    p = end + 1;
    r->best_ms = strtof(p, &end);
    if (end == p || (*end != ' ' && *end != '\0'))
        return false;
    *at = end;
    return true;
}

bool nv_tune_parse(const char *text, size_t cudnn_version, bool allow_tf32, nv_tune_table *t)
{
    size_t version;
    int tf32, n = 0;
    if (text == NULL || sscanf(text, "nvtune1 cudnn=%zu tf32=%d%n", &version, &tf32, &n) != 2 ||
        n == 0 || version != cudnn_version || (tf32 != 0) != allow_tf32)
        return false;
    nv_tune_table read = {0};
    const char *at = text + n;
    while (*at == ' ') {
        at++;
        nv_tune_record r;
        if (!parse_record(&at, &r)) {
            nv_tune_table_release(&read);
            return false;
        }
        nv_tune_remember(&read, r.key, r.rank, r.first_ms, r.best_ms);
    }
    bool ok = *at == '\0' && read.n > 0;
    if (ok)
        nv_tune_merge(t, &read);
    nv_tune_table_release(&read);
    return ok;
}

rn_status nv_tuner_create(double budget_ms, nv_tuner **out)
{
    nv_tuner *t = calloc(1, sizeof *t);
    if (t == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    t->budget_ms = budget_ms;
    cudaError_t e;
    if ((e = cudaEventCreate((cudaEvent_t *)&t->start)) != cudaSuccess ||
        (e = cudaEventCreate((cudaEvent_t *)&t->stop)) != cudaSuccess) {
        cudaGetLastError();
        nv_tuner_free(t);
        return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: NVIDIA_AUTOTUNE's events: %s",
                            cudaGetErrorString(e));
    }
    *out = t;
    return RN_OK;
}

rn_status nv_tuner_reserve(nv_tuner *t, size_t bytes, void **scratch)
{
    if (bytes > t->scratch_bytes) {
        cudaFree(t->scratch);
        t->scratch = NULL;
        t->scratch_bytes = 0;
        cudaError_t e = cudaMalloc(&t->scratch, bytes);
        if (e != cudaSuccess) {
            cudaGetLastError();
            t->scratch = NULL;
            return rn_set_error(RN_OUT_OF_MEMORY,
                                "NVIDIA: NVIDIA_AUTOTUNE: cannot allocate %zu bytes of scratch: %s",
                                bytes, cudaGetErrorString(e));
        }
        t->scratch_bytes = bytes;
    }
    *scratch = t->scratch;
    return RN_OK;
}

void nv_tuner_free(nv_tuner *t)
{
    if (t == NULL)
        return;
    if (t->scratch != NULL)
        cudaFree(t->scratch);
    if (t->start != NULL)
        cudaEventDestroy((cudaEvent_t)t->start);
    if (t->stop != NULL)
        cudaEventDestroy((cudaEvent_t)t->stop);
    nv_tune_table_release(&t->table);
    free(t);
}
