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

const nv_tune_record *nv_tune_find(const nv_tuner *t, const int64_t *key)
{
    for (int i = 0; i < t->n_records; i++)
        if (memcmp(t->records[i].key, key, sizeof t->records[i].key) == 0)
            return &t->records[i];
    return NULL;
}

void nv_tune_remember(nv_tuner *t, const int64_t *key, int rank, float first_ms, float best_ms)
{
    if (t->n_records == t->records_cap) {
        int cap = t->records_cap ? 2 * t->records_cap : 16;
        nv_tune_record *r = realloc(t->records, (size_t)cap * sizeof *r);
        if (r == NULL)
            return;
        t->records = r;
        t->records_cap = cap;
    }
    nv_tune_record *r = &t->records[t->n_records++];
    memcpy(r->key, key, sizeof r->key);
    r->rank = rank;
    r->first_ms = first_ms;
    r->best_ms = best_ms;
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
    free(t->records);
    free(t);
}
