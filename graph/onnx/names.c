/* A small open-addressing hash map from names to pointers, used while reading
 * a graph: value look-ups by name and the set of node names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx/onnx_internal.h"

/* FNV-1a: short keys, no adversary worth a keyed hash (a crafted model can at
 * worst make its own reading slower). */
static size_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return (size_t)h;
}

/* The slot holding `key`, or the empty slot where it would go. cap > 0. */
static size_t find_slot(const onnx_name_map *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = hash_name(key) & mask;
    while (m->keys[i] != NULL && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

static rn_status grow(onnx_name_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    char **keys = calloc(ncap, sizeof *keys);
    void **vals = calloc(ncap, sizeof *vals);
    if (keys == NULL || vals == NULL) {
        free(keys);
        free(vals);
        return rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory indexing names");
    }
    onnx_name_map n = {.cap = ncap, .count = m->count, .keys = keys, .vals = vals};
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == NULL)
            continue;
        size_t j = find_slot(&n, m->keys[i]);
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    *m = n;
    return RN_OK;
}

void onnx_name_map_free(onnx_name_map *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void *onnx_name_map_get(const onnx_name_map *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t i = find_slot(m, key);
    return m->keys[i] != NULL ? m->vals[i] : NULL;
}

bool onnx_name_map_has(const onnx_name_map *m, const char *key)
{
    return m->cap != 0 && m->keys[find_slot(m, key)] != NULL;
}

rn_status onnx_name_map_put(onnx_name_map *m, const char *key, void *val)
{
    /* Keep the load factor under 1/2 so probe sequences stay short. */
    if ((m->count + 1) * 2 > m->cap) {
        rn_status st = grow(m);
        if (st != RN_OK)
            return st;
    }
    size_t i = find_slot(m, key);
    if (m->keys[i] == NULL) {
        size_t n = strlen(key) + 1;
        char *copy = malloc(n);
        if (copy == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "onnx: out of memory indexing names");
        memcpy(copy, key, n);
        m->keys[i] = copy;
        m->count++;
    }
    m->vals[i] = val;
    return RN_OK;
}
