/* The static memory plan: offsets of a spec's arena values.
 *
 * Each root (a value with its own bytes; views and in-place outputs share
 * their root's) is a block. Two blocks may share bytes only when one's whole
 * life happens before the other's begins in the task DAG, not merely in
 * the exec order: requests run independent branches in parallel. So block B,
 * produced by node P, may reuse the bytes of block C only when every node
 * that touches C (its producer, the producers of its aliases, every reader
 * of any of them) is an ancestor of P. Blocks are placed in exec order,
 * first fit among the blocks they conflict with, 64-byte aligned. Results
 * keep their bytes to the end of the run; with device arenas (a non-host
 * allocator) plain results are placed in a host arena of their own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/plan_internal.h"

#define ALIGN 64
/* Beyond this many exec nodes the ancestor sets (n^2 bits) are not built
 * and every block gets bytes of its own. */
#define MAX_REUSE_NODES 16384

typedef struct block {
    int root;
    int producer; /* its earliest writer in exec order */
    int n_writers;
    int *writers; /* the nodes that write it first: producers of its members */
    size_t offset, size;
    bool forever; /* a result's bytes, or a block nobody produces */
    int n_touch;
    int *touch;
} block;

static size_t align_up(size_t x)
{
    return (x + ALIGN - 1) / ALIGN * ALIGN;
}

static int by_producer(const void *a, const void *b)
{
    const block *x = a, *y = b;
    return x->producer < y->producer ? -1 : x->producer > y->producer;
}

static int by_offset(const void *a, const void *b)
{
    const block *x = *(const block *const *)a, *y = *(const block *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

rn_status plan_memory(plan_spec *s)
{
    int n = s->n_nodes;
    int nb = 0;
    int *block_of = malloc(((size_t)s->n_values + 1) * sizeof *block_of);
    block *blocks = calloc((size_t)s->n_values + 1, sizeof *blocks);
    block **conflict = calloc((size_t)s->n_values + 1, sizeof *conflict);
    uint64_t *anc = NULL;
    size_t words = ((size_t)n + 63) / 64;
    rn_status st = RN_OK;
    if (block_of == NULL || blocks == NULL || conflict == NULL)
        goto oom;
    /* Device arenas: plain results live in the host arena, one block each. */
    const rn_allocator *alloc = s->plan->options.allocator;
    s->host_bytes = 0;
    if (alloc != NULL && !alloc->host)
        for (int r = 0; r < s->n_results; r++) {
            plan_value *root = &s->values[s->values[s->results[r]].root];
            if (root->storage != PLAN_ARENA || root->desc.layout != NULL || root->host)
                continue;
            root->host = true;
            root->host_offset = s->host_bytes;
            s->host_bytes += align_up(root->nbytes ? root->nbytes : 1);
        }
    for (int v = 0; v < s->n_values; v++) {
        block_of[v] = -1;
        const plan_value *pv = &s->values[v];
        if (pv->storage != PLAN_ARENA || pv->root != v || pv->host)
            continue;
        block *b = &blocks[nb];
        b->root = v;
        b->producer = -1;
        b->size = align_up(pv->nbytes ? pv->nbytes : 1);
        b->forever = pv->producer < 0;
        block_of[v] = nb++;
    }
    /* Results (and their aliases' roots) live to the end. */
    for (int r = 0; r < s->n_results; r++) {
        int v = s->results[r];
        if (s->values[v].storage == PLAN_ARENA && block_of[s->values[v].root] >= 0)
            blocks[block_of[s->values[v].root]].forever = true;
    }
    /* Writers of every block: the producers of its members (a Concat's
     * inputs written in place start its life before its own producer). */
    for (int v = 0; v < s->n_values; v++) {
        const plan_value *pv = &s->values[v];
        if (pv->storage != PLAN_ARENA || pv->producer < 0 || block_of[pv->root] < 0)
            continue;
        block *b = &blocks[block_of[pv->root]];
        if (b->producer < 0 || pv->producer < b->producer)
            b->producer = pv->producer;
    }
    qsort(blocks, (size_t)nb, sizeof *blocks, by_producer);
    for (int b = 0; b < nb; b++)
        block_of[blocks[b].root] = b;
    for (int v = 0; v < s->n_values; v++) {
        const plan_value *pv = &s->values[v];
        if (pv->storage != PLAN_ARENA || pv->producer < 0 || block_of[pv->root] < 0)
            continue;
        block *b = &blocks[block_of[pv->root]];
        int *w = realloc(b->writers, ((size_t)b->n_writers + 1) * sizeof *w);
        if (w == NULL)
            goto oom;
        b->writers = w;
        b->writers[b->n_writers++] = pv->producer;
    }
    /* Touchers of every block. */
    int *count = calloc((size_t)nb + 1, sizeof *count);
    if (count == NULL)
        goto oom;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            const plan_node *nd = &s->nodes[i];
            for (int k = 0; k < nd->n_in + nd->n_out + nd->n_implicit + 1; k++) {
                int v = k < nd->n_in               ? nd->in[k]
                        : k < nd->n_in + nd->n_out ? nd->out[k - nd->n_in]
                        : k < nd->n_in + nd->n_out + nd->n_implicit
                            ? nd->implicit[k - nd->n_in - nd->n_out]
                            : nd->scratch;
                if (v < 0 || s->values[v].storage != PLAN_ARENA)
                    continue;
                int bi = block_of[s->values[v].root];
                if (bi < 0)
                    continue;
                if (pass == 0)
                    count[bi]++;
                else
                    blocks[bi].touch[blocks[bi].n_touch++] = i;
            }
        }
        if (pass == 0)
            for (int b = 0; b < nb; b++)
                if ((blocks[b].touch = malloc(((size_t)count[b] + 1) * sizeof(int))) == NULL) {
                    free(count);
                    goto oom;
                }
    }
    free(count);
    bool reuse = n <= MAX_REUSE_NODES;
    if (reuse) {
        /* anc[i]: the exec nodes that happen before node i. */
        anc = calloc((size_t)n * words + 1, sizeof *anc);
        if (anc == NULL)
            goto oom;
        for (int i = 0; i < n; i++) {
            const plan_node *nd = &s->nodes[i];
            uint64_t *ai = anc + (size_t)i * words;
            for (int k = 0; k < nd->n_in + nd->n_implicit; k++) {
                int v = k < nd->n_in ? nd->in[k] : nd->implicit[k - nd->n_in];
                int p = v >= 0 ? s->values[v].producer : -1;
                if (p < 0)
                    continue;
                const uint64_t *ap = anc + (size_t)p * words;
                for (size_t w = 0; w < words; w++)
                    ai[w] |= ap[w];
                ai[p / 64] |= 1ull << (p % 64);
            }
        }
    }
    /* Place blocks in the order of their producers (exec order). */
    size_t total = 0;
    for (int bi = 0; bi < nb; bi++) {
        block *b = &blocks[bi];
        int nc = 0;
        for (int ci = 0; ci < bi; ci++) {
            block *c = &blocks[ci];
            bool before = reuse && !c->forever && b->n_writers > 0;
            for (int w = 0; before && w < b->n_writers; w++) {
                const uint64_t *ap = anc + (size_t)b->writers[w] * words;
                for (int t = 0; before && t < c->n_touch; t++)
                    before = (ap[c->touch[t] / 64] >> (c->touch[t] % 64)) & 1;
            }
            if (!before)
                conflict[nc++] = c;
        }
        qsort(conflict, (size_t)nc, sizeof *conflict, by_offset);
        size_t off = 0;
        for (int k = 0; k < nc; k++) {
            if (conflict[k]->offset >= off + b->size)
                break;
            size_t end = conflict[k]->offset + conflict[k]->size;
            if (end > off)
                off = end;
        }
        b->offset = off;
        if (off + b->size > total)
            total = off + b->size;
    }
    for (int v = 0; v < s->n_values; v++) {
        plan_value *pv = &s->values[v];
        if (pv->storage != PLAN_ARENA)
            continue;
        if (s->values[pv->root].host)
            pv->offset = s->values[pv->root].host_offset + pv->alias_offset;
        else if (block_of[pv->root] >= 0)
            pv->offset = blocks[block_of[pv->root]].offset + pv->alias_offset;
    }
    s->arena_bytes = total;
    goto done;
oom:
    st = rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory planning buffers");
done:
    for (int b = 0; blocks != NULL && b < nb; b++) {
        free(blocks[b].touch);
        free(blocks[b].writers);
    }
    free(blocks);
    free(block_of);
    free(conflict);
    free(anc);
    return st;
}
