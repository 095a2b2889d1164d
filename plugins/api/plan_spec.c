/* Lowering a graph of fixed input shapes to a spec: partitions, kernels,
 * layouts and conversions, storage of every value, views and in-place
 * outputs, the memory plan, and the task DAG. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/log.h"
#include "plugins/api/plan_internal.h"

static rn_status oom(void)
{
    return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
}

void plan_dense_strides(graph_tensor *t)
{
    /* Saturates instead of overflowing: a shape too large to be a real
     * tensor (an imported blob's, say) keeps strides no index reaches, and
     * its byte count refuses it where storage is planned. */
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        t->strides[d] = s;
        if (t->dims[d] > 0 && __builtin_mul_overflow(s, t->dims[d], &s))
            s = INT64_MAX;
    }
}

/* ---- freeing ---- */

static void free_node(plan_node *n)
{
    if (n->kernel != NULL && n->kernel->release != NULL && n->state != NULL)
        n->kernel->release(n->state);
    free(n->in);
    free(n->out);
    free(n->implicit);
    free(n->owned_name);
    free(n->fallback);
    free(n->original_names);
    free(n->in_layouts);
    free(n->out_layouts);
}

static void spec_free(plan_spec *s)
{
    if (s == NULL)
        return;
    executors_pipeline_free(s->pipeline);
    executors_pipeline_free(s->pipeline_direct);
    for (int i = 0; s->nodes != NULL && i < s->n_nodes; i++)
        free_node(&s->nodes[i]);
    free(s->nodes);
    plugin_slab_free(s->constants); /* every value's owned_data */
    free(s->values);
    free(s->results);
    free(s->dynamic);
    free(s->consumers);
    free(s->task_begin);
    free(s->task_nodes);
    plan_branches_free(s->branches);
    free(s->input_shapes);
    free((void *)s->last_us);
    graph_free(s->g);
    free(s);
}

void plan_spec_release(plan_spec *spec)
{
    if (spec != NULL && atomic_fetch_sub(&spec->refs, 1) == 1)
        spec_free(spec);
}

bool plan_spec_matches(const plan_spec *spec, const graph_shape *shapes)
{
    for (int i = 0; i < spec->n_inputs; i++) {
        const graph_shape *a = &spec->input_shapes[i], *b = &shapes[i];
        if (a->rank != b->rank)
            return false;
        for (int d = 0; d < a->rank; d++)
            if (a->dims[d] != b->dims[d])
                return false;
    }
    return true;
}

/* Makes room for one more element in a growing array of *cap. */
static rn_status grow(void **array, int *cap, int used, size_t elem)
{
    if (used < *cap)
        return RN_OK;
    int c = *cap * 2 + 16;
    void *p = realloc(*array, (size_t)c * elem);
    if (p == NULL)
        return oom();
    *array = p;
    *cap = c;
    return RN_OK;
}

/* ---- values ---- */

static rn_status add_value(plan_spec *s, int *cap, plan_value **out)
{
    rn_status st = grow((void **)&s->values, cap, s->n_values, sizeof *s->values);
    if (st != RN_OK)
        return st;
    plan_value *v = &s->values[s->n_values];
    memset(v, 0, sizeof *v);
    v->root = s->n_values;
    v->producer = -1;
    v->result = -1;
    s->n_values++;
    *out = v;
    return RN_OK;
}

static size_t value_bytes(const graph_tensor *t)
{
    if (t->layout != NULL)
        return t->layout->nbytes;
    return plugin_tensor_nbytes(t->type, graph_tensor_count(t));
}

/* The storage of graph value v as the spec's shapes tell it. */
static void classify(const plugin_plan *plan, plan_value *pv, const graph_value *v)
{
    pv->gv = v;
    pv->name = v->name;
    graph_tensor *d = &pv->desc;
    d->type = v->type;
    d->kind = v->kind;
    if (v->constant != NULL) {
        pv->storage = PLAN_CONST;
        *d = *v->constant;
        plan_dense_strides(d);
        pv->nbytes = d->nbytes;
        return;
    }
    bool captured = false;
    for (int j = 0; j < plan->n_captures; j++)
        if (plan->capture_ids != NULL && plan->capture_ids[j] == v->id)
            captured = true;
    if (v->is_parameter || captured || v->producer == NULL) {
        pv->storage = PLAN_INPUT;
        /* The descriptor a fast reader sees; a run binds the memory. */
        if (v->kind == GRAPH_KIND_TENSOR && graph_shape_is_static(&v->shape)) {
            d->rank = v->shape.rank;
            for (int k = 0; k < d->rank; k++)
                d->dims[k] = v->shape.dims[k];
            plan_dense_strides(d);
            d->nbytes = plugin_tensor_nbytes(d->type, graph_tensor_count(d));
            pv->nbytes = d->nbytes;
        }
        return;
    }
    bool is_static = !plan->nested && v->kind == GRAPH_KIND_TENSOR && v->type != RN_UNDEFINED &&
                     v->type != RN_STRING && graph_shape_is_static(&v->shape);
    if (!is_static) {
        pv->storage = PLAN_DYNAMIC;
        return;
    }
    pv->storage = PLAN_ARENA;
    d->rank = v->shape.rank;
    for (int k = 0; k < d->rank; k++)
        d->dims[k] = v->shape.dims[k];
    plan_dense_strides(d);
    d->nbytes = plugin_tensor_nbytes(d->type, graph_tensor_count(d));
    pv->nbytes = d->nbytes;
}

/* ---- nodes ---- */

static rn_status join_names(const graph_node *const *nodes, int n, char **out)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nodes[i]->n_fused; k++)
            len += strlen(nodes[i]->fused_names[k]) + 1;
    char *s = malloc(len);
    if (s == NULL)
        return oom();
    s[0] = '\0';
    for (int i = 0; i < n; i++)
        for (int k = 0; k < nodes[i]->n_fused; k++) {
            if (s[0] != '\0')
                strcat(s, ",");
            strcat(s, nodes[i]->fused_names[k]);
        }
    *out = s;
    return RN_OK;
}

static rn_status copy_ids(int n, graph_value *const *vals, int **out)
{
    *out = calloc((size_t)n + 1, sizeof **out);
    if (*out == NULL)
        return oom();
    for (int k = 0; k < n; k++)
        (*out)[k] = vals[k] != NULL ? vals[k]->id : -1;
    return RN_OK;
}

static const char *layout_name(const rn_layout *l);

/* Whether the values exec node n writes can hold the layouts its prepared
 * kernel writes: a device layout needs the value's bytes in the arena (a
 * static shape outside subgraph bodies). RN_UNSUPPORTED naming the value
 * when not, which lets the next kernel try the node. */
static rn_status check_output_layouts(const plan_spec *s, const plan_node *n)
{
    if (n->kernel == NULL || n->kernel->output_layout == NULL)
        return RN_OK;
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0)
            continue;
        const rn_layout *l = n->kernel->output_layout(n->state, k);
        const plan_value *v = &s->values[n->out[k]];
        if (l != NULL && v->storage != PLAN_ARENA)
            return rn_set_error(RN_UNSUPPORTED,
                                "compile: node '%s' writes '%s' in layout %s, but its size is "
                                "known only at run time (%s)",
                                n->name, v->name, layout_name(l),
                                s->plan->nested ? "a value of a subgraph body" : "a dynamic shape");
    }
    return RN_OK;
}

static bool same_layout(const rn_layout *a, const rn_layout *b);

/* Whether the plan can give exec node n's prepared kernel the layouts it
 * reads: a conversion needs the value's size at compile time (a constant,
 * an arena value, a model input of static shape), which a subgraph body's
 * values and dynamic shapes lack. RN_UNSUPPORTED naming the value when
 * not, which lets the next kernel try the node. */
static rn_status check_input_layouts(const plan_spec *s, const plan_node *n)
{
    if (n->kernel == NULL || n->kernel->input_layout == NULL)
        return RN_OK;
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] < 0)
            continue;
        const rn_layout *l = n->kernel->input_layout(n->state, i);
        const plan_value *v = &s->values[n->in[i]];
        if (l == NULL || same_layout(v->desc.layout, l) || v->storage == PLAN_CONST ||
            v->storage == PLAN_ARENA ||
            (v->storage == PLAN_INPUT && graph_shape_is_static(&v->gv->shape)))
            continue;
        return rn_set_error(RN_UNSUPPORTED,
                            "compile: node '%s' reads '%s' in layout %s, but its size is known "
                            "only at run time (%s)",
                            n->name, v->name, layout_name(l),
                            s->plan->nested ? "a value of a subgraph body" : "a dynamic shape");
    }
    return RN_OK;
}

/* Gives the outputs of exec node n the layouts its kernel writes
 * (check_output_layouts passed). */
static rn_status set_output_layouts(plan_spec *s, const plan_node *n)
{
    if (n->kernel == NULL || n->kernel->output_layout == NULL)
        return RN_OK;
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0)
            continue;
        const rn_layout *l = n->kernel->output_layout(n->state, k);
        plan_value *v = &s->values[n->out[k]];
        v->desc.layout = l;
        v->nbytes = value_bytes(&v->desc);
        v->desc.nbytes = v->nbytes;
    }
    return RN_OK;
}

/* Fills exec node n for graph node `node` with its kernel, prepared for the
 * layouts its inputs' producers (prepared before it) write. */
static rn_status kernel_node(const plugin_plan *plan, plan_spec *s, plan_node *n, graph_node *node)
{
    rn_status st;
    n->kind = PLAN_NODE_KERNEL;
    n->node = node;
    n->name = node->name;
    n->type = node->op_type;
    n->n_in = node->n_inputs;
    n->n_out = node->n_outputs;
    if ((st = copy_ids(node->n_inputs, node->inputs, &n->in)) != RN_OK ||
        (st = copy_ids(node->n_outputs, node->outputs, &n->out)) != RN_OK)
        return st;
    for (int a = 0; a < node->n_attrs; a++)
        if (node->attrs[a].g != NULL || node->attrs[a].graphs != NULL)
            n->has_subgraphs = true;
    if (n->has_subgraphs) {
        graph_value **vals = NULL;
        int nv = 0;
        if ((st = graph_node_outer_inputs(node, &vals, &nv)) != RN_OK)
            return st;
        st = copy_ids(nv, vals, &n->implicit);
        n->n_implicit = nv;
        free(vals);
        if (st != RN_OK)
            return st;
    }
    if ((st = plugin_kernel_registry_pick(plan->registry, node, &n->kernel)) != RN_OK)
        return st;
    const rn_layout **layouts = NULL;
    if (n->n_in > 0) {
        if ((layouts = calloc((size_t)n->n_in, sizeof *layouts)) == NULL)
            return oom();
        for (int i = 0; i < n->n_in; i++)
            layouts[i] = n->in[i] >= 0 ? s->values[n->in[i]].desc.layout : NULL;
    }
    /* A kernel that cannot prepare the node (a primitive the library refuses
     * for these shapes) hands it to the next kernel that supports it, REF's
     * last; the first refusal is kept for the runtime model. */
    for (;;) {
        const plugin_kernel *k = n->kernel;
        plugin_kernel_ctx kctx = {.registry = plan->registry,
                                  .input_layouts = layouts,
                                  .n_input_layouts = k->prepare_ctx != NULL ? n->n_in : 0};
        st = RN_OK;
        if (k->prepare_ctx != NULL)
            st = k->prepare_ctx(node, &kctx, &n->state);
        else if (k->prepare != NULL)
            st = k->prepare(node, &n->state);
        if (st == RN_OK &&
            ((st = check_output_layouts(s, n)) != RN_OK ||
             (st = check_input_layouts(s, n)) != RN_OK) &&
            k->release != NULL && n->state != NULL)
            k->release(n->state);
        if (st == RN_OK)
            break;
        n->state = NULL;
        const plugin_kernel *next = NULL;
        if (plugin_kernel_may_fall_back(st))
            plugin_kernel_registry_next(plan->registry, node, k, &next);
        if (next == NULL)
            break;
        if (n->fallback == NULL && (n->fallback = strdup(rn_last_error())) == NULL) {
            st = oom();
            break;
        }
        plugin_log(atomic_load(&plan->log_level), PLUGIN_LOG_WARNING, plan->options.device,
                   "node '%s' (%s): %s; running it with the %s kernel", node->name, node->op_type,
                   n->fallback, next->impl_type ? next->impl_type : "next");
        n->kernel = next;
    }
    free(layouts);
    if (st != RN_OK)
        return st;
    const plugin_kernel *k = n->kernel;
    if ((st = set_output_layouts(s, n)) != RN_OK)
        return st;
    n->impl = k->impl_type != NULL ? k->impl_type : "unknown";
    if (k->impl_name != NULL && k->impl_name(n->state) != NULL)
        n->impl = k->impl_name(n->state);
    n->schema = graph_op_find(node->domain, node->op_type);
    return join_names((const graph_node *const *)&node, 1, &n->original_names);
}

/* ---- partitions ---- */

/* Whether the group of nodes marked `in` is convex: no path leaves it and
 * comes back. Walks forward from the group's outside successors. */
static bool convex(const graph *g, const int *group, int id)
{
    int n = g->n_nodes;
    bool *reach = calloc((size_t)n + 1, sizeof *reach);
    if (reach == NULL)
        return false;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const graph_node *node = g->nodes[i];
        bool from_group = false, from_reach = false;
        for (int k = 0; k < node->n_inputs; k++) {
            const graph_value *v = node->inputs[k];
            if (v == NULL || v->producer == NULL)
                continue;
            int p = v->producer->id;
            from_group |= group[p] == id;
            from_reach |= reach[p];
        }
        if (group[i] == id) {
            if (from_reach)
                ok = false; /* a path left the group and came back */
        } else if (from_group || from_reach) {
            reach[i] = true;
        }
    }
    free(reach);
    return ok;
}

/* Builds exec node n for the nodes of group `id`. */
static rn_status partition_node(const plugin_plan *plan, plan_spec *s, plan_node *n,
                                const int *group, int id)
{
    const graph *g = s->g;
    const rn_partition_ops *ops = plan->options.partitions;
    int cap = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (group[i] == id)
            cap += g->nodes[i]->n_inputs + g->nodes[i]->n_outputs;
    const graph_node **members = calloc((size_t)g->n_nodes + 1, sizeof *members);
    n->in = calloc((size_t)cap + 1, sizeof *n->in);
    n->out = calloc((size_t)cap + 1, sizeof *n->out);
    const char **in_names = calloc((size_t)cap + 1, sizeof *in_names);
    const char **out_names = calloc((size_t)cap + 1, sizeof *out_names);
    rn_status st = RN_OK;
    if (members == NULL || n->in == NULL || n->out == NULL || in_names == NULL ||
        out_names == NULL) {
        st = oom();
        goto done;
    }
    int nm = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (group[i] != id)
            continue;
        const graph_node *node = g->nodes[i];
        members[nm++] = node;
        for (int a = 0; a < node->n_attrs; a++)
            if (node->attrs[a].g != NULL || node->attrs[a].graphs != NULL) {
                st = rn_set_error(RN_UNSUPPORTED,
                                  "compile: the device claimed node '%s' (%s), which has "
                                  "subgraphs, into a partition",
                                  node->name, node->op_type);
                goto done;
            }
        for (int k = 0; k < node->n_inputs; k++) {
            const graph_value *v = node->inputs[k];
            if (v == NULL || (v->producer != NULL && group[v->producer->id] == id))
                continue;
            bool seen = false;
            for (int j = 0; j < n->n_in; j++)
                seen |= n->in[j] == v->id;
            if (!seen) {
                in_names[n->n_in] = v->name;
                n->in[n->n_in++] = v->id;
            }
        }
    }
    /* Outputs: values made inside that a node outside reads, or results. */
    for (int i = 0; i < g->n_nodes; i++) {
        if (group[i] != id)
            continue;
        const graph_node *node = g->nodes[i];
        for (int k = 0; k < node->n_outputs; k++) {
            const graph_value *v = node->outputs[k];
            if (v == NULL)
                continue;
            bool used = false;
            for (int r = 0; r < g->n_outputs; r++)
                used |= g->outputs[r] == v;
            for (int j = 0; j < g->n_nodes && !used; j++) {
                if (group[j] == id)
                    continue;
                for (int q = 0; q < g->nodes[j]->n_inputs; q++)
                    used |= g->nodes[j]->inputs[q] == v;
            }
            if (used) {
                out_names[n->n_out] = v->name;
                n->out[n->n_out++] = v->id;
            }
        }
    }
    n->kind = PLAN_NODE_PARTITION;
    n->node = members[0];
    st = ops->compile(ops->ctx, members, nm, in_names, n->n_in, out_names, n->n_out, &n->kernel,
                      &n->state);
    if (st != RN_OK) {
        n->kernel = NULL;
        goto done;
    }
    if (n->kernel == NULL || n->kernel->run == NULL) {
        st = rn_set_error(RN_INTERNAL, "compile: the device's partition of '%s' has no kernel",
                          members[0]->name);
        goto done;
    }
    char name[256];
    snprintf(name, sizeof name, "partition:%s", members[0]->name);
    if ((n->owned_name = strdup(name)) == NULL) {
        st = oom();
        goto done;
    }
    n->name = n->owned_name;
    n->type = "Partition";
    n->impl = n->kernel->impl_type != NULL ? n->kernel->impl_type : "partition";
    st = join_names(members, nm, &n->original_names);
done:
    free(members);
    free(in_names);
    free(out_names);
    return st;
}

/* ---- conversions ---- */

static bool same_layout(const rn_layout *a, const rn_layout *b)
{
    if (a == b)
        return true;
    if (a == NULL || b == NULL || a->ops != b->ops)
        return false;
    return a->ops->equal != NULL && a->ops->equal(a, b);
}

static const char *layout_name(const rn_layout *l)
{
    return l == NULL ? "plain" : l->name != NULL ? l->name : "device";
}

typedef struct conv_key {
    int src;
    const rn_layout *to;
    int value;
} conv_key;

typedef struct lowering {
    plan_spec *s;
    int cap_values;
    int cap_nodes;
    conv_key *convs;
    int n_convs, cap_convs;
} lowering;

static rn_status add_node(lowering *L, plan_node **out)
{
    plan_spec *s = L->s;
    rn_status st = grow((void **)&s->nodes, &L->cap_nodes, s->n_nodes, sizeof *s->nodes);
    if (st != RN_OK)
        return st;
    plan_node *n = &s->nodes[s->n_nodes++];
    memset(n, 0, sizeof *n);
    *out = n;
    return RN_OK;
}

/* Converts a constant once, at compile time, into a new constant value. */
static rn_status convert_constant(lowering *L, int src, const rn_layout *to, int *out)
{
    plan_spec *s = L->s;
    plan_value *cv;
    rn_status st = add_value(s, &L->cap_values, &cv);
    if (st != RN_OK)
        return st;
    const plan_value *sv = &s->values[src];
    const rn_layout *from = sv->desc.layout;
    cv->name = sv->name;
    cv->converted_from = src;
    cv->storage = PLAN_CONST;
    cv->desc = sv->desc;
    cv->desc.layout = to;
    cv->nbytes = value_bytes(&cv->desc);
    cv->desc.nbytes = cv->nbytes;
    cv->owned_data = plugin_slab_alloc(&s->constants, cv->nbytes + 64);
    if (cv->owned_data == NULL)
        return oom();
    cv->desc.data = cv->owned_data;
    const rn_layout_ops *ops = to != NULL ? to->ops : from->ops;
    if ((st = ops->convert(&sv->desc, &cv->desc)) != RN_OK)
        return rn_wrap_error(st, "compile: converting constant '%s' to %s: ", sv->name,
                             layout_name(to));
    *out = (int)(cv - s->values);
    return RN_OK;
}

/* The value holding `src` in layout `to`: src itself, a conversion made
 * before, or a new conversion node (two, through plain, between layouts of
 * different devices). */
static rn_status converted(lowering *L, int src, const rn_layout *to, int *out)
{
    plan_spec *s = L->s;
    if (same_layout(s->values[src].desc.layout, to)) {
        *out = src;
        return RN_OK;
    }
    for (int i = 0; i < L->n_convs; i++)
        if (L->convs[i].src == src && same_layout(L->convs[i].to, to)) {
            *out = L->convs[i].value;
            return RN_OK;
        }
    const rn_layout *from = s->values[src].desc.layout;
    rn_status st;
    if (from != NULL && to != NULL && from->ops != to->ops) {
        int mid;
        if ((st = converted(L, src, NULL, &mid)) != RN_OK)
            return st;
        return converted(L, mid, to, out);
    }
    int v = -1;
    if (s->values[src].storage == PLAN_CONST) {
        if ((st = convert_constant(L, src, to, &v)) != RN_OK)
            return st;
    } else {
        if (s->values[src].storage != PLAN_ARENA && s->values[src].storage != PLAN_INPUT)
            return rn_set_error(RN_UNSUPPORTED,
                                "compile: value '%s' has no static shape and cannot be "
                                "converted to layout %s",
                                s->values[src].name, layout_name(to));
        plan_value *cv;
        if ((st = add_value(s, &L->cap_values, &cv)) != RN_OK)
            return st;
        const plan_value *sv = &s->values[src];
        if (sv->storage == PLAN_INPUT && !graph_shape_is_static(&sv->gv->shape))
            return rn_set_error(RN_UNSUPPORTED,
                                "compile: input '%s' has no static shape and cannot be converted "
                                "to layout %s",
                                sv->name, layout_name(to));
        v = (int)(cv - s->values);
        cv->name = sv->name;
        cv->storage = PLAN_ARENA;
        cv->desc = sv->desc;
        if (sv->storage == PLAN_INPUT) {
            cv->desc.type = sv->gv->type;
            cv->desc.rank = sv->gv->shape.rank;
            for (int d = 0; d < cv->desc.rank; d++)
                cv->desc.dims[d] = sv->gv->shape.dims[d];
            plan_dense_strides(&cv->desc);
        }
        cv->desc.data = NULL;
        cv->desc.layout = to;
        cv->nbytes = value_bytes(&cv->desc);
        cv->desc.nbytes = cv->nbytes;
        plan_node *n;
        if ((st = add_node(L, &n)) != RN_OK)
            return st;
        n->kind = PLAN_NODE_CONVERT;
        n->n_in = n->n_out = 1;
        n->in = malloc(sizeof *n->in);
        n->out = malloc(sizeof *n->out);
        char name[256];
        snprintf(name, sizeof name, "reorder:%s:%s->%s", s->values[src].name, layout_name(from),
                 layout_name(to));
        n->owned_name = strdup(name);
        n->original_names = strdup("");
        if (n->in == NULL || n->out == NULL || n->owned_name == NULL || n->original_names == NULL)
            return oom();
        n->in[0] = src;
        n->out[0] = v;
        n->name = n->owned_name;
        n->type = "Reorder";
        n->impl = layout_name(to != NULL ? to : from);
        n->from = from;
        n->to = to;
        s->values[v].producer = (int)(n - s->nodes);
        s->n_conversions++;
    }
    if ((st = grow((void **)&L->convs, &L->cap_convs, L->n_convs, sizeof *L->convs)) != RN_OK)
        return st;
    L->convs[L->n_convs++] = (conv_key){src, to, v};
    *out = v;
    return RN_OK;
}

/* Layouts: producers' outputs take the layout their kernel writes;
 * consumers read a conversion where they want another; results and the
 * model's inputs are plain. */
static rn_status resolve_layouts(lowering *L)
{
    plan_spec *s = L->s;
    int n_graph_nodes = s->n_nodes;
    rn_status st;
    /* Kernel nodes set theirs when prepared; partitions now. */
    for (int i = 0; i < n_graph_nodes; i++)
        if (s->nodes[i].kind == PLAN_NODE_PARTITION &&
            (st = set_output_layouts(s, &s->nodes[i])) != RN_OK)
            return st;
    for (int i = 0; i < n_graph_nodes; i++) {
        if (s->nodes[i].kernel == NULL || s->nodes[i].kernel->input_layout == NULL)
            continue;
        for (int k = 0; k < s->nodes[i].n_in; k++) {
            int src = s->nodes[i].in[k];
            if (src < 0)
                continue;
            const rn_layout *want = s->nodes[i].kernel->input_layout(s->nodes[i].state, k);
            int v;
            if ((st = converted(L, src, want, &v)) != RN_OK)
                return st;
            s->nodes[i].in[k] = v; /* s->nodes may have moved: index again */
        }
    }
    /* Results must be plain; so must what kernels without layout hooks read. */
    for (int i = 0; i < n_graph_nodes; i++) {
        if (s->nodes[i].kernel != NULL && s->nodes[i].kernel->input_layout != NULL)
            continue;
        for (int k = 0; k < s->nodes[i].n_in; k++) {
            int src = s->nodes[i].in[k], v;
            if (src >= 0 && s->values[src].desc.layout != NULL) {
                if ((st = converted(L, src, NULL, &v)) != RN_OK)
                    return st;
                s->nodes[i].in[k] = v;
            }
        }
    }
    for (int r = 0; r < s->n_results; r++) {
        int src = s->results[r], v;
        if (s->values[src].desc.layout != NULL) {
            if ((st = converted(L, src, NULL, &v)) != RN_OK)
                return st;
            s->results[r] = v;
            s->values[v].result = r;
            s->values[src].result = -1;
        }
    }
    return RN_OK;
}

/* Scratch memory: a value of its node alone, placed by the memory plan. */
static rn_status add_scratch(lowering *L)
{
    plan_spec *s = L->s;
    for (int i = 0; i < s->n_nodes; i++) {
        plan_node *n = &s->nodes[i];
        n->scratch = -1;
        size_t bytes = n->kernel != NULL && n->kernel->scratch_bytes != NULL
                           ? n->kernel->scratch_bytes(n->state)
                           : 0;
        if (bytes == 0)
            continue;
        plan_value *v;
        rn_status st = add_value(s, &L->cap_values, &v);
        if (st != RN_OK)
            return st;
        v->name = s->nodes[i].name;
        v->storage = PLAN_ARENA;
        v->producer = i;
        v->nbytes = bytes;
        v->desc.type = RN_U8;
        v->desc.rank = 1;
        v->desc.dims[0] = (int64_t)bytes;
        v->desc.strides[0] = 1;
        v->desc.nbytes = bytes;
        s->nodes[i].scratch = (int)(v - s->values);
    }
    return RN_OK;
}

/* ---- ordering: exec nodes in a topological order ---- */

static rn_status sort_nodes(plan_spec *s)
{
    int n = s->n_nodes;
    int *indeg = calloc((size_t)n + 1, sizeof *indeg);
    int *order = calloc((size_t)n + 1, sizeof *order);
    plan_node *sorted = calloc((size_t)n + 1, sizeof *sorted);
    int *new_id = calloc((size_t)n + 1, sizeof *new_id);
    rn_status st = RN_OK;
    if (indeg == NULL || order == NULL || sorted == NULL || new_id == NULL) {
        st = oom();
        goto done;
    }
    for (int v = 0; v < s->n_values; v++)
        s->values[v].producer = -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s->nodes[i].n_out; k++)
            if (s->nodes[i].out[k] >= 0)
                s->values[s->nodes[i].out[k]].producer = i;
    for (int i = 0; i < n; i++) {
        const plan_node *nd = &s->nodes[i];
        for (int k = 0; k < nd->n_in + nd->n_implicit; k++) {
            int v = k < nd->n_in ? nd->in[k] : nd->implicit[k - nd->n_in];
            if (v >= 0 && s->values[v].producer >= 0)
                indeg[i]++;
        }
    }
    /* Kahn's algorithm, always taking the ready node that came first. */
    bool *done_flag = calloc((size_t)n + 1, sizeof *done_flag);
    if (done_flag == NULL) {
        st = oom();
        goto done;
    }
    for (int filled = 0; filled < n; filled++) {
        int pick = -1;
        for (int i = 0; i < n && pick < 0; i++)
            if (!done_flag[i] && indeg[i] == 0)
                pick = i;
        if (pick < 0) {
            free(done_flag);
            st = rn_set_error(RN_INTERNAL, "compile: the plan's nodes form a cycle");
            goto done;
        }
        done_flag[pick] = true;
        order[filled] = pick;
        const plan_node *nd = &s->nodes[pick];
        for (int k = 0; k < nd->n_out; k++) {
            int v = nd->out[k];
            if (v < 0)
                continue;
            for (int j = 0; j < n; j++) {
                const plan_node *c = &s->nodes[j];
                for (int q = 0; q < c->n_in + c->n_implicit; q++) {
                    int u = q < c->n_in ? c->in[q] : c->implicit[q - c->n_in];
                    if (u == v)
                        indeg[j]--;
                }
            }
        }
    }
    free(done_flag);
    for (int i = 0; i < n; i++) {
        sorted[i] = s->nodes[order[i]];
        new_id[order[i]] = i;
    }
    if (n > 0)
        memcpy(s->nodes, sorted, (size_t)n * sizeof *sorted);
    for (int v = 0; v < s->n_values; v++)
        if (s->values[v].producer >= 0)
            s->values[v].producer = new_id[s->values[v].producer];
done:
    free(indeg);
    free(order);
    free(sorted);
    free(new_id);
    return st;
}

/* ---- aliasing: views and in-place outputs ---- */

static int find_root(plan_spec *s, int v)
{
    while (s->values[v].root != v)
        v = s->values[v].root;
    return v;
}

/* Whether every input of Concat n is in the output's layout family and
 * the device says they lay end to end in the output (concat_dense). */
static bool concat_dense_layouts(const plan_spec *s, const plan_node *n, int axis)
{
    const plugin_plan_options *o = &s->plan->options;
    const rn_layout *whole = s->values[n->out[0]].desc.layout;
    const rn_layout *parts[64];
    for (int k = 0; k < n->n_in; k++) {
        parts[k] = s->values[n->in[k]].desc.layout;
        if (parts[k] == NULL || parts[k]->ops != whole->ops)
            return false;
    }
    return o->concat_dense != NULL && o->concat_dense(whole, parts, n->n_in, axis);
}

static bool others_read_before(plan_spec *s, int r, int node);

/* Whether root r's bytes may also be part of a Concat's output that other
 * nodes read: nothing writes over them in place (every value that shares
 * them is r itself, a view, or a slice an earlier Concat placed there), and
 * every node that writes in place over the Concat's output (root `out`)
 * runs after every reader of r's bytes. */
static bool shared_input_placeable(plan_spec *s, int r, int out, const bool *slice)
{
    for (int v = 0; v < s->n_values; v++) {
        const plan_value *pv = &s->values[v];
        if (v == r || v == out || pv->producer < 0 || s->nodes[pv->producer].skip || slice[v])
            continue;
        int root = find_root(s, v);
        if (root == r)
            return false;
        if (root == out && !others_read_before(s, r, pv->producer))
            return false;
    }
    return true;
}

/* Concat written in place by its producers: along an axis with nothing
 * but 1s before it, each input is one contiguous slice of the output, so an
 * input that is an intermediate can be produced straight into its slice
 * (its root joins the output's bytes at that offset). The Concat then
 * copies only the other inputs, or nothing. An input other nodes read too
 * is placed where nothing writes over its bytes in place
 * (shared_input_placeable): DenseNet's chain, Concat(previous Concat, new
 * Conv), whose previous Concat the next BatchNormalization also reads, so
 * that a dense block's Concats are all one buffer. Plain tensors, and a
 * device's layouts where its concat_dense says the inputs lie end to end.
 * Host memory only. */
static void concat_in_place(plan_spec *s, int *real)
{
    const rn_allocator *alloc = s->plan->options.allocator;
    if (alloc != NULL && !alloc->host)
        return;
    bool *slice = calloc((size_t)s->n_values + 1, sizeof *slice); /* placed by a Concat */
    if (slice == NULL)
        return; /* copies: correct, only slower */
    for (int i = 0; i < s->n_nodes; i++) {
        plan_node *n = &s->nodes[i];
        if (n->kind != PLAN_NODE_KERNEL || strcmp(n->node->op_type, "Concat") != 0 ||
            (n->node->domain[0] != '\0' && strcmp(n->node->domain, "ai.onnx") != 0) ||
            n->n_out != 1 || n->out[0] < 0 || n->n_in < 1 || n->n_in > 64)
            continue;
        plan_value *out = &s->values[n->out[0]];
        bool laid_out = out->desc.layout != NULL;
        if (out->storage != PLAN_ARENA || out->result >= 0 || out->root != n->out[0] ||
            (laid_out && s->plan->options.concat_dense == NULL) || out->desc.type == RN_STRING)
            continue;
        int rank = out->desc.rank;
        int64_t axis = graph_node_attr_int(n->node, "axis", 0);
        if (axis < 0)
            axis += rank;
        if (axis < 0 || axis >= rank)
            continue;
        bool outer_one = true;
        for (int d = 0; d < axis; d++)
            outer_one &= out->desc.dims[d] == 1;
        if (!outer_one)
            continue;
        /* Every input a dense slice of the output, in order. */
        size_t total = 0;
        bool ok = true;
        for (int k = 0; k < n->n_in && ok; k++) {
            const plan_value *x = n->in[k] >= 0 ? &s->values[n->in[k]] : NULL;
            ok = x != NULL && x->desc.type == out->desc.type &&
                 (x->desc.layout != NULL) == laid_out &&
                 (x->storage == PLAN_ARENA || x->storage == PLAN_CONST || x->storage == PLAN_INPUT);
            if (ok)
                total += x->nbytes;
        }
        if (!ok || total != out->nbytes || (laid_out && !concat_dense_layouts(s, n, (int)axis)))
            continue;
        /* Place the inputs that are intermediates nobody else reads. */
        size_t off = 0;
        uint64_t placed = 0;
        for (int k = 0; k < n->n_in; k++) {
            const plan_value *x = &s->values[n->in[k]];
            int r = find_root(s, n->in[k]);
            plan_value *root = &s->values[r];
            if (root->storage == PLAN_ARENA && root->result < 0 && root->producer >= 0 &&
                r != n->out[0] && root->nbytes == x->nbytes &&
                (real[r] == 1 || shared_input_placeable(s, r, n->out[0], slice))) {
                root->root = n->out[0];
                root->alias_offset = off;
                slice[r] = true;
                if (real[r] > 1) /* r's other readers now read the output's bytes */
                    real[n->out[0]] += real[r] - 1;
                placed |= 1ull << k;
                s->n_concat_inputs_in_place++;
            }
            off += x->nbytes;
        }
        if (placed == 0)
            continue;
        n->concat_placed = placed;
        bool all = placed == (n->n_in == 64 ? ~0ull : (1ull << n->n_in) - 1);
        n->skip = all;
        n->concat_partial = !all;
        n->impl = all ? "concat_in_place" : "concat_in_place_partial";
    }
    free(slice);
}

/* Whether every node other than `node` that reads root r's bytes is an
 * ancestor of `node` in the DAG, and none of those bytes is a result: then
 * `node` may write over them. */
static bool others_read_before(plan_spec *s, int r, int node)
{
    for (int v = 0; v < s->n_values; v++)
        if (s->values[v].result >= 0 && find_root(s, v) == r)
            return false;
    bool *anc = calloc((size_t)s->n_nodes + 1, sizeof *anc);
    int *stack = malloc(((size_t)s->n_nodes + 1) * sizeof *stack);
    bool ok = anc != NULL && stack != NULL;
    int top = 0;
    if (ok)
        stack[top++] = node;
    while (ok && top > 0) {
        const plan_node *n = &s->nodes[stack[--top]];
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int v = k < n->n_in ? n->in[k] : n->implicit[k - n->n_in];
            int p = v >= 0 ? s->values[v].producer : -1;
            if (p >= 0 && !anc[p]) {
                anc[p] = true;
                stack[top++] = p;
            }
        }
    }
    for (int i = 0; i < s->n_nodes && ok; i++) {
        const plan_node *n = &s->nodes[i];
        if (i == node || n->skip)
            continue;
        for (int k = 0; k < n->n_in + n->n_implicit && ok; k++) {
            int v = k < n->n_in ? n->in[k] : n->implicit[k - n->n_in];
            if (v >= 0 && find_root(s, v) == r && !anc[i])
                ok = false;
        }
    }
    free(anc);
    free(stack);
    return ok;
}

/* Whether view node n's output may share its input's bytes as far as
 * layouts go: both plain, or, for a kernel that says so
 * (RN_KERNEL_VIEW_LAYOUTS), both in layouts of one device, the ones its
 * hooks asked for and wrote (the CPU's Reshape over plain bf16). */
static bool view_layouts(const plan_node *n, const plan_value *src, const plan_value *dst)
{
    const rn_layout *a = src->desc.layout, *b = dst->desc.layout;
    if (a == NULL || b == NULL)
        return a == NULL && b == NULL;
    const plugin_kernel *k = n->kernel;
    return (k->flags & RN_KERNEL_VIEW_LAYOUTS) && k->input_layout != NULL &&
           k->output_layout != NULL && a->ops == b->ops &&
           same_layout(a, k->input_layout(n->state, 0)) &&
           same_layout(b, k->output_layout(n->state, 0));
}

static void alias(plan_spec *s)
{
    /* Readers per value (exec node inputs and implicit reads). */
    for (int v = 0; v < s->n_values; v++)
        s->values[v].n_readers = 0;
    for (int i = 0; i < s->n_nodes; i++) {
        const plan_node *n = &s->nodes[i];
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int v = k < n->n_in ? n->in[k] : n->implicit[k - n->n_in];
            if (v >= 0)
                s->values[v].n_readers++;
        }
    }
    if (s->plan->nested)
        return;
    int *real = calloc((size_t)s->n_values + 1, sizeof *real); /* reads of a root's bytes */
    if (real == NULL)
        return; /* no aliasing: correct, only bigger */
    /* Views: output 0 shares input 0's bytes. */
    for (int i = 0; i < s->n_nodes; i++) {
        plan_node *n = &s->nodes[i];
        if (n->kind != PLAN_NODE_KERNEL || !(n->kernel->flags & RN_KERNEL_VIEW) || n->n_in < 1 ||
            n->in[0] < 0 || n->out[0] < 0)
            continue;
        bool single = true;
        for (int k = 1; k < n->n_out; k++)
            single &= n->out[k] < 0;
        plan_value *src = &s->values[n->in[0]];
        plan_value *dst = &s->values[n->out[0]];
        plan_storage rs = s->values[find_root(s, n->in[0])].storage;
        if (!single || dst->storage != PLAN_ARENA || dst->result >= 0 ||
            (rs != PLAN_ARENA && rs != PLAN_CONST && rs != PLAN_INPUT) ||
            !view_layouts(n, src, dst) || src->nbytes != dst->nbytes ||
            (rs == PLAN_INPUT && (src->gv == NULL || !graph_shape_is_static(&src->gv->shape))) ||
            src->gv == NULL || src->gv->type != dst->desc.type)
            continue;
        dst->root = n->in[0];
        dst->storage = rs == PLAN_ARENA ? PLAN_ARENA : rs;
        n->skip = true;
        n->impl = "view";
        s->n_views++;
    }
    for (int v = 0; v < s->n_values; v++)
        real[v] = 0;
    for (int i = 0; i < s->n_nodes; i++) {
        const plan_node *n = &s->nodes[i];
        if (n->skip)
            continue;
        for (int k = 0; k < n->n_in + n->n_implicit; k++) {
            int v = k < n->n_in ? n->in[k] : n->implicit[k - n->n_in];
            if (v >= 0)
                real[find_root(s, v)]++;
        }
    }
    for (int v = 0; v < s->n_values; v++)
        if (s->values[v].result >= 0)
            real[find_root(s, v)] += 2; /* results are never overwritten */
    /* In place: output 0 over input 0 (or the kernel's inplace_input) when
     * nobody else reads those bytes, or every other reader runs before. */
    for (int i = 0; i < s->n_nodes; i++) {
        plan_node *n = &s->nodes[i];
        if (n->skip || n->kind != PLAN_NODE_KERNEL || n->n_out < 1 || n->out[0] < 0 ||
            n->n_implicit > 0)
            continue;
        int in = n->kernel->inplace_input != NULL       ? n->kernel->inplace_input(n->state)
                 : n->kernel->flags & RN_KERNEL_INPLACE ? 0
                                                        : -1;
        if (in < 0 || in >= n->n_in || n->in[in] < 0)
            continue;
        int r = find_root(s, n->in[in]);
        plan_value *src = &s->values[n->in[in]];
        plan_value *dst = &s->values[n->out[0]];
        if (s->values[r].storage != PLAN_ARENA || (real[r] != 1 && !others_read_before(s, r, i)) ||
            dst->storage != PLAN_ARENA || dst->result >= 0 || dst->root != n->out[0] ||
            src->nbytes != dst->nbytes || src->desc.type != dst->desc.type ||
            !same_layout(src->desc.layout, dst->desc.layout) || src->desc.rank != dst->desc.rank ||
            memcmp(src->desc.dims, dst->desc.dims, sizeof(int64_t) * (size_t)src->desc.rank) != 0)
            continue;
        /* dst joins r's bytes; r's readers are now dst's (and its views'). */
        int dr = find_root(s, n->out[0]);
        s->values[dr].root = r;
        real[r] = real[dr];
        s->n_inplace++;
    }
    concat_in_place(s, real);
    free(real);
    /* Flatten: every value points at its root directly, at the sum of the
     * offsets on the way. */
    for (int v = 0; v < s->n_values; v++) {
        size_t off = 0;
        int r = v;
        while (s->values[r].root != r) {
            off += s->values[r].alias_offset;
            r = s->values[r].root;
        }
        s->values[v].alias_offset = off;
        s->values[v].root = r;
    }
}

/* ---- fast nodes, slots ---- */

static void mark_fast(plan_spec *s)
{
    for (int i = 0; i < s->n_nodes; i++) {
        plan_node *n = &s->nodes[i];
        bool fast = !n->has_subgraphs && !(n->kernel != NULL && n->kernel->values);
        for (int k = 0; k < n->n_in && fast; k++) {
            if (n->in[k] < 0)
                continue;
            const plan_value *v = &s->values[n->in[k]];
            plan_storage st = s->values[v->root].storage;
            /* An input whose value decides the output shape (Reshape's
             * shape) and is not a constant: inference checks the run. */
            if (n->schema != NULL && k < 32 && (n->schema->value_inputs >> k & 1u) &&
                st != PLAN_CONST)
                fast = false;
            if (st == PLAN_DYNAMIC || v->storage == PLAN_DYNAMIC)
                fast = false;
            if (st == PLAN_INPUT && (v->gv == NULL || s->values[v->root].gv == NULL ||
                                     !graph_shape_is_static(&s->values[v->root].gv->shape) ||
                                     s->values[v->root].gv->kind != GRAPH_KIND_TENSOR ||
                                     s->values[v->root].gv->type == RN_UNDEFINED ||
                                     s->values[v->root].gv->type == RN_STRING))
                fast = false;
        }
        for (int k = 0; k < n->n_out && fast; k++)
            if (n->out[k] >= 0 && s->values[n->out[k]].storage != PLAN_ARENA)
                fast = false;
        n->fast = fast;
        if (fast)
            s->n_fast++;
    }
}

/* ---- tasks: chains of exec nodes ---- */

static rn_status build_tasks(plan_spec *s)
{
    int n = s->n_nodes;
    int *n_pred = calloc((size_t)n + 1, sizeof *n_pred);
    int *one_pred = calloc((size_t)n + 1, sizeof *one_pred);
    int *n_succ = calloc((size_t)n + 1, sizeof *n_succ);
    int *task_of = calloc((size_t)n + 1, sizeof *task_of);
    s->task_begin = calloc((size_t)n + 2, sizeof *s->task_begin);
    s->task_nodes = calloc((size_t)n + 1, sizeof *s->task_nodes);
    rn_status st = RN_OK;
    if (!n_pred || !one_pred || !n_succ || !task_of || !s->task_begin || !s->task_nodes) {
        st = oom();
        goto done;
    }
    /* Distinct producer nodes per node. */
    for (int i = 0; i < n; i++) {
        const plan_node *nd = &s->nodes[i];
        int last = -1;
        for (int k = 0; k < nd->n_in + nd->n_implicit; k++) {
            int v = k < nd->n_in ? nd->in[k] : nd->implicit[k - nd->n_in];
            int p = v >= 0 ? s->values[v].producer : -1;
            if (p < 0 || p == last)
                continue;
            bool seen = false;
            for (int q = 0; q < k; q++) {
                int u = q < nd->n_in ? nd->in[q] : nd->implicit[q - nd->n_in];
                seen |= u >= 0 && s->values[u].producer == p;
            }
            if (seen)
                continue;
            n_pred[i]++;
            one_pred[i] = p;
            n_succ[p]++;
            last = p;
        }
    }
    /* Chains in exec order: a node continues its only predecessor's task
     * when it is that predecessor's only successor and the predecessor ends
     * its task. Tasks are numbered by their first node, so that their nodes
     * are contiguous in task_nodes after the counting sort below. */
    int n_tasks = 0;
    int *tail = calloc((size_t)n + 1, sizeof *tail);
    if (tail == NULL) {
        st = oom();
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int p = one_pred[i];
        if (n_pred[i] == 1 && n_succ[p] == 1 && tail[task_of[p]] == p) {
            task_of[i] = task_of[p];
        } else {
            task_of[i] = n_tasks++;
        }
        tail[task_of[i]] = i;
    }
    free(tail);
    s->n_tasks = n_tasks;
    for (int i = 0; i < n; i++)
        s->task_begin[task_of[i] + 1]++;
    for (int t = 0; t < n_tasks; t++)
        s->task_begin[t + 1] += s->task_begin[t];
    int *fill = calloc((size_t)n_tasks + 1, sizeof *fill);
    if (fill == NULL) {
        st = oom();
        goto done;
    }
    for (int i = 0; i < n; i++)
        s->task_nodes[s->task_begin[task_of[i]] + fill[task_of[i]]++] = i;
    free(fill);
    /* Branches side by side (branch.c): top-level plans only; a nested
     * plan's runs are inline in the kernel that runs it. */
    if (!s->plan->nested && (st = plan_branches_build(s, task_of)) != RN_OK)
        goto done;
    /* The pipeline: the plan's stages around the tasks (a nested plan has
     * none of its own and no pool: its runs are inline). */
    const plugin_plan *plan = s->plan;
    const plugin_plan_options *o = &plan->options;
    executors_pipeline_builder *b = NULL;
    if ((st = executors_pipeline_builder_create(plan->pool, &b)) != RN_OK)
        goto done;
    st = executors_pipeline_add_stage(b, EXECUTORS_STAGE_PREPROCESS, EXECUTORS_ON_STREAM,
                                      plugin_task_preprocess, NULL);
    for (int k = 0; k < o->n_stages && st == RN_OK; k++)
        st = executors_pipeline_add_stage(b, o->stages[k].stage, o->stages[k].where,
                                          plugin_task_stage, (void *)(intptr_t)k);
    if (st == RN_OK)
        st = executors_pipeline_add_stage(b, EXECUTORS_STAGE_POSTPROCESS, EXECUTORS_ON_STREAM,
                                          plugin_task_postprocess, NULL);
    if (st == RN_OK)
        st = executors_pipeline_add_stage(b, EXECUTORS_STAGE_CALLBACK, EXECUTORS_ON_CALLBACK,
                                          plugin_task_callback, NULL);
    if (s->branches != NULL && st == RN_OK)
        st = executors_pipeline_add_task(b, "(branches)", plugin_task_branches, NULL, NULL);
    for (int t = 0; t < n_tasks && st == RN_OK && s->branches == NULL; t++)
        st = executors_pipeline_add_task(b, s->nodes[s->task_nodes[s->task_begin[t]]].name,
                                         plugin_task_kernels, (void *)(intptr_t)t, NULL);
    /* Edges between tasks from the nodes' data dependencies. */
    for (int i = 0; i < n && st == RN_OK && s->branches == NULL; i++) {
        const plan_node *nd = &s->nodes[i];
        for (int k = 0; k < nd->n_in + nd->n_implicit && st == RN_OK; k++) {
            int v = k < nd->n_in ? nd->in[k] : nd->implicit[k - nd->n_in];
            int p = v >= 0 ? s->values[v].producer : -1;
            if (p >= 0 && task_of[p] != task_of[i])
                st = executors_pipeline_add_edge(b, (uint32_t)task_of[p], (uint32_t)task_of[i]);
        }
    }
    if (st == RN_OK)
        st = executors_pipeline_build(b, &s->pipeline);
    if (st == RN_OK && !plan->nested)
        st = executors_pipeline_move_stage(b, EXECUTORS_STAGE_CALLBACK, EXECUTORS_ON_STREAM);
    if (st == RN_OK && !plan->nested)
        st = executors_pipeline_build(b, &s->pipeline_direct);
    executors_pipeline_builder_free(b);
done:
    free(n_pred);
    free(one_pred);
    free(n_succ);
    free(task_of);
    return st;
}

/* ---- the spec ---- */

rn_status plan_spec_build(const plugin_plan *plan, graph *g, plan_spec **out)
{
    plan_spec *s = calloc(1, sizeof *s);
    if (s == NULL) {
        graph_free(g);
        return oom();
    }
    s->plan = plan;
    s->g = g;
    atomic_init(&s->refs, 1);
    lowering L = {.s = s};
    int *group = NULL;
    rn_status st;
    if ((st = graph_sort(g)) != RN_OK || (st = graph_infer_shapes(g)) != RN_OK)
        goto fail;
    s->n_inputs = g->n_inputs;
    s->input_shapes = calloc((size_t)g->n_inputs + 1, sizeof *s->input_shapes);
    s->results = calloc((size_t)g->n_outputs + 1, sizeof *s->results);
    if (s->input_shapes == NULL || s->results == NULL) {
        st = oom();
        goto fail;
    }
    for (int i = 0; i < g->n_inputs; i++)
        s->input_shapes[i] = g->inputs[i]->shape;
    /* Values. */
    for (int v = 0; v < g->n_values; v++) {
        plan_value *pv;
        if ((st = add_value(s, &L.cap_values, &pv)) != RN_OK)
            goto fail;
        classify(plan, pv, g->values[v]);
    }
    s->n_results = g->n_outputs;
    for (int r = 0; r < g->n_outputs; r++) {
        s->results[r] = g->outputs[r]->id;
        s->values[g->outputs[r]->id].result = r;
    }
    /* Partitions the device claims, then a kernel per remaining node. */
    group = malloc(((size_t)g->n_nodes + 1) * sizeof *group);
    if (group == NULL) {
        st = oom();
        goto fail;
    }
    for (int i = 0; i < g->n_nodes; i++)
        group[i] = -1;
    const rn_partition_ops *pops = plan->options.partitions;
    if (pops != NULL && !plan->nested && g->n_nodes > 0) {
        if ((st = pops->claim(pops->ctx, (const rn_node *const *)g->nodes, g->n_nodes, group)) !=
            RN_OK)
            goto fail;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        plan_node *n;
        if (group[i] >= 0) {
            bool first = true;
            for (int j = 0; j < i; j++)
                first &= group[j] != group[i];
            if (!first)
                continue;
            if (!convex(g, group, group[i])) {
                st = rn_set_error(RN_UNSUPPORTED,
                                  "compile: the device's partition containing node '%s' is not "
                                  "convex (a path leaves it and comes back)",
                                  g->nodes[i]->name);
                goto fail;
            }
            if ((st = add_node(&L, &n)) != RN_OK ||
                (st = partition_node(plan, s, n, group, group[i])) != RN_OK)
                goto fail;
            continue;
        }
        if ((st = add_node(&L, &n)) != RN_OK ||
            (st = kernel_node(plan, s, n, g->nodes[i])) != RN_OK)
            goto fail;
    }
    if ((st = resolve_layouts(&L)) != RN_OK || (st = sort_nodes(s)) != RN_OK)
        goto fail;
    /* Values a partition makes and keeps to itself exist nowhere. */
    for (int v = 0; v < s->n_values; v++)
        if ((s->values[v].storage == PLAN_ARENA || s->values[v].storage == PLAN_DYNAMIC) &&
            s->values[v].producer < 0)
            s->values[v].storage = PLAN_NONE;
    if ((st = add_scratch(&L)) != RN_OK)
        goto fail;
    alias(s);
    mark_fast(s);
    /* Values the run allocates, with their readers per run. */
    s->dynamic = calloc((size_t)s->n_values + 1, sizeof *s->dynamic);
    s->consumers = calloc((size_t)s->n_values + 1, sizeof *s->consumers);
    if (s->dynamic == NULL || s->consumers == NULL) {
        st = oom();
        goto fail;
    }
    for (int v = 0; v < s->n_values; v++) {
        s->consumers[v] = s->values[v].n_readers + (s->values[v].result >= 0);
        if (s->values[v].storage == PLAN_DYNAMIC)
            s->dynamic[s->n_dynamic++] = v;
    }
    if ((st = plan_memory(s)) != RN_OK)
        goto fail;
    /* Per node: its descriptors in the request's scratch. */
    for (int i = 0; i < s->n_nodes; i++) {
        s->nodes[i].io = s->io_total;
        s->io_total += s->nodes[i].n_in + s->nodes[i].n_out + s->nodes[i].n_implicit;
    }
    s->last_us = calloc((size_t)s->n_nodes + 1, sizeof *s->last_us);
    if (s->last_us == NULL) {
        st = oom();
        goto fail;
    }
    for (int i = 0; i < s->n_nodes; i++)
        s->last_us[i] = -1;
    if ((st = build_tasks(s)) != RN_OK)
        goto fail;
    free(group);
    free(L.convs);
    *out = s;
    return RN_OK;
fail:
    free(group);
    free(L.convs);
    spec_free(s);
    return st;
}
