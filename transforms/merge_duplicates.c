/* Common subexpression elimination: two nodes of one op type with the same
 * attributes that read the same inputs compute the same outputs, so the
 * second one's readers read the first one's outputs and the second goes.
 * Inputs are the same when they are the same value, or constants of one
 * element type and shape with equal bytes (a model often holds one weight
 * tensor twice under two names: ONNX's light models fill their
 * ConstantOfShape weights with one number, which constant folding makes
 * into equal constants). OpenVINO's SharedOpOptimization does the same; on
 * Inception-v2 it takes 9 of the 69 convolutions (docs/transforms.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transforms/rewrite.h"

/* Ops whose outputs are not a function of their inputs and attributes. */
static bool nondeterministic(const graph_node *n)
{
    static const char *const ops[] = {
        "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
        "Multinomial",  "Bernoulli",        "Dropout"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->op_type, ops[i]) == 0)
            return true;
    return false;
}

/* A node this pass may merge away or keep: default domain, deterministic,
 * no subgraphs, at least one input (a node reading nothing is a constant
 * generator, which folding handles), every output present and none of
 * them a result (a result keeps its name and its producer). */
static bool candidate(const graph *g, const graph_node *n)
{
    if (n->domain[0] != '\0' || n->n_inputs == 0 || n->n_outputs == 0 || nondeterministic(n) ||
        transforms_has_subgraphs(n))
        return false;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] == NULL || transforms_is_result(g, n->outputs[k]))
            return false;
    return true;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

static uint64_t hash_string(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = mix(h, (unsigned char)*s);
    return h;
}

/* What two equal nodes share, cheap to compute: the op, and per input the
 * value itself, or for a constant its type and shape (its bytes are
 * compared only between nodes that agree on all of this). */
static uint64_t node_key(const graph_node *n)
{
    uint64_t h = hash_string(hash_string(14695981039346656037ULL, n->op_type), n->domain);
    h = mix(h, (uint64_t)n->n_inputs);
    for (int k = 0; k < n->n_inputs; k++) {
        const graph_value *v = n->inputs[k];
        if (v == NULL) {
            h = mix(h, 1);
        } else if (transforms_is_constant(v)) {
            h = mix(h, (uint64_t)v->constant->type);
            for (int d = 0; d < v->constant->rank; d++)
                h = mix(h, (uint64_t)v->constant->dims[d]);
        } else {
            h = mix(h, (uint64_t)(uintptr_t)v);
        }
    }
    return h;
}

static bool same_dims(int rank, const int64_t *a, int rank_b, const int64_t *b)
{
    return rank == rank_b && (rank <= 0 || memcmp(a, b, sizeof *a * (size_t)rank) == 0);
}

/* Dense tensors of one type and shape with equal contents (strings by
 * value, numbers bitwise: NaNs alike, +0 and -0 not). */
static bool same_tensor(const graph_tensor *a, const graph_tensor *b)
{
    if (a->kind != RN_KERNEL_TENSOR || b->kind != RN_KERNEL_TENSOR || a->type != b->type ||
        !same_dims(a->rank, a->dims, b->rank, b->dims))
        return false;
    size_t count = graph_tensor_count(a);
    if (count == 0)
        return true;
    if (a->data == NULL || b->data == NULL)
        return false;
    if (a->type == RN_STRING) {
        char *const *sa = a->data, *const *sb = b->data;
        for (size_t i = 0; i < count; i++)
            if ((sa[i] == NULL) != (sb[i] == NULL) || (sa[i] != NULL && strcmp(sa[i], sb[i]) != 0))
                return false;
        return true;
    }
    size_t size = rn_element_type_size(a->type);
    return size > 0 && memcmp(a->data, b->data, count * size) == 0;
}

static bool same_input(const graph_value *a, const graph_value *b)
{
    if (a == b)
        return true;
    return a != NULL && b != NULL && transforms_is_constant(a) && transforms_is_constant(b) &&
           same_tensor(a->constant, b->constant);
}

static bool same_attr(const graph_attr *a, const graph_attr *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case GRAPH_ATTR_FLOAT:
        return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case GRAPH_ATTR_INT:
        return a->i == b->i;
    case GRAPH_ATTR_STRING:
        return strcmp(a->s, b->s) == 0;
    case GRAPH_ATTR_TENSOR:
        return same_tensor(a->t, b->t);
    case GRAPH_ATTR_FLOATS:
        return a->count == b->count &&
               (a->count == 0 || memcmp(a->floats, b->floats, sizeof *a->floats * a->count) == 0);
    case GRAPH_ATTR_INTS:
        return a->count == b->count &&
               (a->count == 0 || memcmp(a->ints, b->ints, sizeof *a->ints * a->count) == 0);
    case GRAPH_ATTR_STRINGS:
        if (a->count != b->count)
            return false;
        for (int i = 0; i < a->count; i++)
            if (strcmp(a->strings[i], b->strings[i]) != 0)
                return false;
        return true;
    case GRAPH_ATTR_TENSORS:
        if (a->count != b->count)
            return false;
        for (int i = 0; i < a->count; i++)
            if (!same_tensor(&a->tensors[i], &b->tensors[i]))
                return false;
        return true;
    case GRAPH_ATTR_TYPE_PROTO:
        return a->tp.kind == b->tp.kind && a->tp.elem == b->tp.elem &&
               same_dims(a->tp.shape.rank, a->tp.shape.dims, b->tp.shape.rank, b->tp.shape.dims);
    default:
        return false; /* graphs (never here: no subgraphs) and anything unknown */
    }
}

static const graph_attr *find_attr(const graph_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

static bool same_node(const graph_node *a, const graph_node *b)
{
    if (strcmp(a->op_type, b->op_type) != 0 || strcmp(a->domain, b->domain) != 0 ||
        a->opset != b->opset || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        a->n_attrs != b->n_attrs)
        return false;
    for (int k = 0; k < a->n_outputs; k++)
        if (a->outputs[k]->type != b->outputs[k]->type ||
            a->outputs[k]->kind != b->outputs[k]->kind)
            return false;
    for (int k = 0; k < a->n_inputs; k++)
        if (!same_input(a->inputs[k], b->inputs[k]))
            return false;
    for (int i = 0; i < a->n_attrs; i++) {
        const graph_attr *other = find_attr(b, a->attrs[i].name);
        if (other == NULL || !same_attr(&a->attrs[i], other))
            return false;
    }
    return true;
}

rn_status transforms_merge_duplicates(graph *g, void *ctx, int *changes)
{
    (void)ctx;
    *changes = 0;
    if (g->n_nodes < 2)
        return RN_OK;
    size_t cap = 16;
    while (cap < (size_t)g->n_nodes * 2)
        cap *= 2;
    /* Open addressing over the nodes kept so far: slot = node index + 1. */
    int *slots = calloc(cap, sizeof *slots);
    uint64_t *keys = malloc(sizeof *keys * (size_t)g->n_nodes);
    if (slots == NULL || keys == NULL) {
        free(slots);
        free(keys);
        return rn_set_error(RN_OUT_OF_MEMORY, "merge_duplicates: out of memory");
    }
    transforms_node_list removed = {0};
    rn_status st = RN_OK;
    /* In topological order a node's inputs are rewired before it is looked
     * at, so chains of duplicates (a duplicate Conv, then the Relus reading
     * the two) go in one run. */
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        graph_node *n = g->nodes[i];
        if (!candidate(g, n))
            continue;
        uint64_t key = keys[i] = node_key(n);
        size_t s = (size_t)key & (cap - 1);
        graph_node *kept = NULL;
        for (; slots[s] != 0; s = (s + 1) & (cap - 1)) {
            int j = slots[s] - 1;
            if (keys[j] == key && same_node(g->nodes[j], n)) {
                kept = g->nodes[j];
                break;
            }
        }
        if (kept == NULL) {
            slots[s] = i + 1;
            continue;
        }
        if ((st = transforms_merge_fused(kept, n)) != RN_OK)
            break;
        for (int k = 0; k < n->n_outputs; k++) {
            transforms_replace_uses(g, n->outputs[k], kept->outputs[k]);
            n->outputs[k]->producer = NULL;
            n->outputs[k] = NULL;
        }
        for (int k = 0; k < n->n_inputs; k++)
            n->inputs[k] = NULL;
        st = transforms_node_list_push(&removed, n);
    }
    free(slots);
    free(keys);
    return transforms_finish_removal(g, &removed, st, changes);
}
