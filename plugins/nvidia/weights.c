/* The device copies of a compiled model's constants, shared by its programs:
 * a model with a dynamic batch gets a program per input shape its runs
 * specialise for (the plan's shape cache, 8 by default), and each would
 * otherwise upload every weight again. One copy per constant identity (the
 * key the compiled model gives: the constant of its base graph) and device
 * type (f32, f16 or bf16), counted per program that uses it and freed with the
 * last; the table itself goes with the last of the compiled model and its
 * programs. Uploads run under the table's lock, so two programs being
 * compiled at once upload a constant once. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/nvidia/exec.h"

typedef struct nv_weight {
    const void *key; /* NULL: one program's own copy */
    rn_element_type type;
    bool nhwc; /* a filter stored KRSC */
    size_t nbytes;
    void *dev;
    int refs;
} nv_weight;

struct nv_weights {
    atomic_int refs;
    int device;
    pthread_mutex_t lock;
    nv_weight *items;
    int n, cap;
    size_t bytes;
    uint64_t uploads, reuses;
};

rn_status nv_weights_create(int device, nv_weights **out)
{
    nv_weights *w = calloc(1, sizeof *w);
    if (w == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
    atomic_init(&w->refs, 1);
    w->device = device;
    pthread_mutex_init(&w->lock, NULL);
    *out = w;
    return RN_OK;
}

nv_weights *nv_weights_retain(nv_weights *w)
{
    atomic_fetch_add(&w->refs, 1);
    return w;
}

void nv_weights_release(nv_weights *w)
{
    if (w == NULL || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    for (int i = 0; i < w->n; i++)
        cudaFree(w->items[i].dev); /* none left when every program put its own */
    pthread_mutex_destroy(&w->lock);
    free(w->items);
    free(w);
}

void nv_round_to(rn_element_type type, const float *x, uint16_t *y, size_t n)
{
    uint16_t (*round)(float) = type == RN_BF16 ? plugin_f32_to_bf16 : plugin_f32_to_f16;
    for (size_t i = 0; i < n; i++)
        y[i] = round(x[i]);
}

/* Uploads constant c as c->type (f32 host data converted to f16 or bf16
 * when the program computes in it). */
static rn_status upload(const nv_value *c, void **dev)
{
    cudaError_t e = cudaMalloc(dev, c->nbytes ? c->nbytes : 1);
    if (e != cudaSuccess) {
        *dev = NULL;
        return rn_set_error(RN_DEVICE_ERROR,
                            "NVIDIA: cannot allocate the weight '%s' (%zu bytes): %s", c->name,
                            c->nbytes, cudaGetErrorString(e));
    }
    const void *src = c->host_data;
    uint16_t *narrow = NULL;
    float *krsc = NULL;
    if (c->nhwc && c->rank == 4 && c->host_type == RN_F32) {
        /* A filter KCRS -> KRSC, for channels-last convolutions. */
        int64_t k = c->dims[0], ch = c->dims[1], rs = c->dims[2] * c->dims[3];
        if ((krsc = malloc(c->count * sizeof *krsc + 1)) == NULL) {
            cudaFree(*dev);
            *dev = NULL;
            return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
        }
        const float *w = c->host_data;
        for (int64_t o = 0; o < k; o++)
            for (int64_t i = 0; i < ch; i++)
                for (int64_t r = 0; r < rs; r++)
                    krsc[(o * rs + r) * ch + i] = w[(o * ch + i) * rs + r];
        src = krsc;
    }
    if ((c->type == RN_F16 || c->type == RN_BF16) && c->host_type == RN_F32) {
        if ((narrow = malloc(c->nbytes + 1)) == NULL) {
            free(krsc);
            cudaFree(*dev);
            *dev = NULL;
            return rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
        }
        nv_round_to(c->type, src, narrow, c->count);
        src = narrow;
    }
    e = c->nbytes ? cudaMemcpy(*dev, src, c->nbytes, cudaMemcpyHostToDevice) : cudaSuccess;
    free(narrow);
    free(krsc);
    if (e != cudaSuccess) {
        cudaFree(*dev);
        *dev = NULL;
        return rn_set_error(RN_DEVICE_ERROR, "NVIDIA: uploading the weight '%s': %s", c->name,
                            cudaGetErrorString(e));
    }
    return RN_OK;
}

rn_status nv_weights_get(nv_weights *w, const void *key, const nv_value *c, void **dev)
{
    pthread_mutex_lock(&w->lock);
    for (int i = 0; key != NULL && i < w->n; i++) {
        nv_weight *it = &w->items[i];
        if (it->key == key && it->type == c->type && it->nbytes == c->nbytes &&
            it->nhwc == c->nhwc) {
            it->refs++;
            w->reuses++;
            *dev = it->dev;
            pthread_mutex_unlock(&w->lock);
            return RN_OK;
        }
    }
    rn_status st = RN_OK;
    if (w->n == w->cap) {
        int cap = w->cap * 2 + 64;
        nv_weight *items = realloc(w->items, (size_t)cap * sizeof *items);
        if (items == NULL)
            st = rn_set_error(RN_OUT_OF_MEMORY, "NVIDIA: out of memory");
        else
            w->items = items, w->cap = cap;
    }
    cudaError_t e = st == RN_OK ? cudaSetDevice(w->device) : cudaSuccess;
    if (e != cudaSuccess)
        st = rn_set_error(RN_DEVICE_ERROR, "NVIDIA: cudaSetDevice: %s", cudaGetErrorString(e));
    if (st == RN_OK)
        st = upload(c, dev);
    if (st == RN_OK) {
        w->items[w->n++] = (nv_weight){.key = key,
                                       .type = c->type,
                                       .nhwc = c->nhwc,
                                       .nbytes = c->nbytes,
                                       .dev = *dev,
                                       .refs = 1};
        w->bytes += c->nbytes;
        w->uploads++;
    }
    pthread_mutex_unlock(&w->lock);
    return st;
}

void nv_weights_put(nv_weights *w, void *dev)
{
    if (dev == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    for (int i = 0; i < w->n; i++) {
        nv_weight *it = &w->items[i];
        if (it->dev != dev)
            continue;
        if (--it->refs == 0) {
            cudaFree(it->dev);
            w->bytes -= it->nbytes;
            w->items[i] = w->items[--w->n];
        }
        break;
    }
    pthread_mutex_unlock(&w->lock);
}

void nv_weights_get_stats(nv_weights *w, nv_weights_stats *out)
{
    pthread_mutex_lock(&w->lock);
    *out = (nv_weights_stats){
        .copies = w->n, .bytes = w->bytes, .uploads = w->uploads, .reuses = w->reuses};
    pthread_mutex_unlock(&w->lock);
}
