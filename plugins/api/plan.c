/* The generic plan (compile side) and sync request (run side). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/api/plan.h"

struct plugin_plan {
    graph *g;
    const plugin_kernel **kernels; /* per node */
    void **states;                 /* per node, from prepare */
    int *last_use;                 /* per value: last node reading it; n_nodes for results */
    bool profiling;
    rn_profiling_info *profile_template; /* per node */
};

/* What a request holds for one value of the graph. */
typedef struct value_slot {
    graph_tensor t;
    bool owned; /* t.data is ours to free */
    bool bound; /* a parameter bound by set_input */
} value_slot;

struct plugin_request {
    const plugin_plan *plan;
    value_slot *slots;      /* per value */
    graph_tensor *user_out; /* per result: the caller's buffer, data NULL if none */
    rn_profiling_info *profile;
    int max_io;
    graph_tensor *in_buf, *out_buf;
    graph_port *in_ports, *out_ports;
};

size_t plugin_tensor_nbytes(rn_element_type type, size_t count)
{
    if (type == RN_STRING)
        return count * sizeof(char *);
    return count * rn_element_type_size(type);
}

void plugin_plan_free(plugin_plan *plan)
{
    if (plan == NULL)
        return;
    if (plan->g != NULL) {
        for (int i = 0; i < plan->g->n_nodes; i++)
            if (plan->kernels[i] != NULL && plan->kernels[i]->release != NULL)
                plan->kernels[i]->release(plan->states[i]);
    }
    free(plan->kernels);
    free(plan->states);
    free(plan->last_use);
    free(plan->profile_template);
    graph_free(plan->g);
    free(plan);
}

rn_status plugin_plan_build(const graph *model, const plugin_kernel_registry *registry,
                            const plugin_plan_options *options, plugin_plan **out)
{
    plugin_plan *plan = calloc(1, sizeof *plan);
    if (plan == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
    rn_status st = graph_clone(model, &plan->g);
    if (st != RN_OK)
        goto fail;
    graph *g = plan->g;
    if ((st = graph_sort(g)) != RN_OK || (st = graph_infer_shapes(g)) != RN_OK)
        goto fail;
    int n = g->n_nodes;
    plan->profiling = options != NULL && options->profiling;
    plan->kernels = calloc((size_t)n + 1, sizeof *plan->kernels);
    plan->states = calloc((size_t)n + 1, sizeof *plan->states);
    plan->last_use = calloc((size_t)g->n_values + 1, sizeof *plan->last_use);
    plan->profile_template = calloc((size_t)n + 1, sizeof *plan->profile_template);
    if (!plan->kernels || !plan->states || !plan->last_use || !plan->profile_template) {
        st = rn_set_error(RN_OUT_OF_MEMORY, "compile: out of memory");
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        graph_node *node = g->nodes[i];
        if ((st = plugin_kernel_registry_pick(registry, node, &plan->kernels[i])) != RN_OK)
            goto fail;
        if (plan->kernels[i]->prepare != NULL &&
            (st = plan->kernels[i]->prepare(node, &plan->states[i])) != RN_OK) {
            plan->kernels[i] = NULL; /* nothing to release */
            goto fail;
        }
        rn_profiling_info *p = &plan->profile_template[i];
        p->node_name = node->name;
        p->node_type = node->op_type;
        p->exec_type = plan->kernels[i]->impl_type ? plan->kernels[i]->impl_type : "unknown";
        p->status = RN_NODE_NOT_RUN;
    }
    for (int v = 0; v < g->n_values; v++)
        plan->last_use[v] = -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < g->nodes[i]->n_inputs; k++)
            if (g->nodes[i]->inputs[k] != NULL)
                plan->last_use[g->nodes[i]->inputs[k]->id] = i;
    for (int r = 0; r < g->n_outputs; r++)
        plan->last_use[g->outputs[r]->id] = n;
    *out = plan;
    return RN_OK;
fail:
    plugin_plan_free(plan);
    return st;
}

const graph *plugin_plan_graph(const plugin_plan *plan)
{
    return plan->g;
}

const plugin_kernel *plugin_plan_kernel(const plugin_plan *plan, int node)
{
    return plan->kernels[node];
}

/* ---- requests ---- */

static void slot_clear(value_slot *s)
{
    if (s->owned) {
        if (s->t.type == RN_STRING && s->t.data != NULL) {
            char **str = s->t.data;
            size_t n = graph_tensor_count(&s->t);
            for (size_t i = 0; i < n; i++)
                free(str[i]);
        }
        free(s->t.data);
    }
    s->t.data = NULL;
    s->owned = false;
}

void plugin_request_free(plugin_request *request)
{
    if (request == NULL)
        return;
    if (request->slots != NULL)
        for (int v = 0; v < request->plan->g->n_values; v++)
            slot_clear(&request->slots[v]);
    free(request->slots);
    free(request->user_out);
    free(request->profile);
    free(request->in_buf);
    free(request->in_ports);
    free(request);
}

rn_status plugin_request_create(const plugin_plan *plan, plugin_request **out)
{
    const graph *g = plan->g;
    plugin_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
    r->plan = plan;
    int most = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i]->n_inputs > most)
            most = g->nodes[i]->n_inputs;
        if (g->nodes[i]->n_outputs > most)
            most = g->nodes[i]->n_outputs;
    }
    r->max_io = most;
    r->slots = calloc((size_t)g->n_values + 1, sizeof *r->slots);
    r->user_out = calloc((size_t)g->n_outputs + 1, sizeof *r->user_out);
    r->profile = calloc((size_t)g->n_nodes + 1, sizeof *r->profile);
    r->in_buf = calloc((size_t)most * 2, sizeof *r->in_buf);
    r->in_ports = calloc((size_t)most * 2, sizeof *r->in_ports);
    if (!r->slots || !r->user_out || !r->profile || !r->in_buf || !r->in_ports) {
        plugin_request_free(r);
        return rn_set_error(RN_OUT_OF_MEMORY, "infer request: out of memory");
    }
    r->out_buf = r->in_buf + most;
    r->out_ports = r->in_ports + most;
    if (g->n_nodes)
        memcpy(r->profile, plan->profile_template, (size_t)g->n_nodes * sizeof *r->profile);
    /* Constants are views of the plan's graph. */
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v]->constant != NULL)
            r->slots[v].t = *g->values[v]->constant;
    *out = r;
    return RN_OK;
}

rn_status plugin_request_set_input(plugin_request *request, size_t index, const graph_tensor *t)
{
    const graph *g = request->plan->g;
    if (index >= (size_t)g->n_inputs)
        return rn_set_error(RN_INVALID_ARG, "input index %zu is out of range (%d inputs)", index,
                            g->n_inputs);
    value_slot *s = &request->slots[g->inputs[index]->id];
    slot_clear(s);
    s->t = *t;
    s->bound = true;
    return RN_OK;
}

rn_status plugin_request_set_output(plugin_request *request, size_t index, const graph_tensor *t)
{
    const graph *g = request->plan->g;
    if (index >= (size_t)g->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            g->n_outputs);
    request->user_out[index] = *t;
    return RN_OK;
}

typedef struct alloc_ctx {
    plugin_request *request;
    const graph_node *node;
} alloc_ctx;

/* The caller's buffer for value v when v is a result whose bound output
 * buffer has exactly the size the kernel will write; else NULL. */
static void *user_buffer_for(plugin_request *r, const graph_value *v, const graph_tensor *t)
{
    const graph *g = r->plan->g;
    for (int o = 0; o < g->n_outputs; o++) {
        const graph_tensor *u = &r->user_out[o];
        if (g->outputs[o] == v && u->data != NULL && u->type == t->type && u->nbytes == t->nbytes &&
            t->type != RN_STRING)
            return u->data;
    }
    return NULL;
}

static rn_status alloc_value(plugin_request *r, const graph_node *node, int index, graph_tensor *t)
{
    graph_value *v = node->outputs[index];
    value_slot *s = &r->slots[v->id];
    slot_clear(s);
    t->nbytes = plugin_tensor_nbytes(t->type, graph_tensor_count(t));
    void *user = user_buffer_for(r, v, t);
    if (user != NULL) {
        t->data = user;
        s->owned = false;
    } else {
        /* calloc: STRING outputs must start as NULL pointers; a 0-byte tensor
         * still gets a valid pointer. */
        t->data = calloc(1, t->nbytes ? t->nbytes : 1);
        if (t->data == NULL)
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): cannot allocate %zu bytes",
                                node->name, node->op_type, t->nbytes);
        s->owned = true;
    }
    s->t = *t;
    return RN_OK;
}

static rn_status alloc_output_cb(plugin_kernel_args *args, int index, int rank, const int64_t *dims)
{
    alloc_ctx *ctx = args->alloc_ctx;
    if (index < 0 || index >= args->n_outputs || ctx->node->outputs[index] == NULL)
        return rn_set_error(RN_INTERNAL, "node '%s': alloc_output(%d) is not an output",
                            ctx->node->name, index);
    if (rank < 0 || rank > RN_MAX_RANK)
        return rn_set_error(RN_INTERNAL, "node '%s': output rank %d", ctx->node->name, rank);
    graph_tensor *t = &args->outputs[index];
    t->rank = rank;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            return rn_set_error(RN_INTERNAL, "node '%s': negative output dim", ctx->node->name);
        t->dims[d] = dims[d];
    }
    return alloc_value(ctx->request, ctx->node, index, t);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const max_align_t empty_tensor_data;

/* Runs node i: run-time shape inference, output allocation, kernel. */
static rn_status run_node(plugin_request *r, int i)
{
    const plugin_plan *plan = r->plan;
    const graph_node *node = plan->g->nodes[i];
    graph_tensor *in = r->in_buf, *out = r->out_buf;
    graph_port *pin = r->in_ports, *pout = r->out_ports;
    for (int k = 0; k < node->n_inputs; k++) {
        const graph_value *v = node->inputs[k];
        memset(&in[k], 0, sizeof in[k]);
        memset(&pin[k], 0, sizeof pin[k]);
        if (v == NULL)
            continue;
        const value_slot *s = &r->slots[v->id];
        if (s->t.type == RN_UNDEFINED || (s->t.data == NULL && s->t.nbytes != 0))
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): input '%s' has no data", node->name,
                                node->op_type, v->name);
        in[k] = s->t;
        if (in[k].data == NULL) /* an empty tensor: kernels still get a valid pointer */
            in[k].data = (void *)&empty_tensor_data;
        pin[k].present = true;
        pin[k].type = s->t.type;
        pin[k].shape.rank = s->t.rank;
        memcpy(pin[k].shape.dims, s->t.dims, sizeof pin[k].shape.dims);
        pin[k].data = s->t.data;
    }
    for (int k = 0; k < node->n_outputs; k++) {
        memset(&pout[k], 0, sizeof pout[k]);
        pout[k].present = node->outputs[k] != NULL;
        pout[k].shape.rank = -1;
    }
    const graph_op_schema *schema = graph_op_find(node->domain, node->op_type);
    if (schema != NULL && schema->infer != NULL) {
        rn_status st = schema->infer(node, pin, node->n_inputs, pout, node->n_outputs);
        if (st != RN_OK)
            return st;
    }
    for (int k = 0; k < node->n_outputs; k++) {
        memset(&out[k], 0, sizeof out[k]);
        if (node->outputs[k] == NULL)
            continue;
        out[k].type = pout[k].type != RN_UNDEFINED ? pout[k].type : node->outputs[k]->type;
        if (graph_shape_is_static(&pout[k].shape)) {
            out[k].rank = pout[k].shape.rank;
            memcpy(out[k].dims, pout[k].shape.dims, sizeof out[k].dims);
            rn_status st = alloc_value(r, node, k, &out[k]);
            if (st != RN_OK)
                return st;
        }
    }
    alloc_ctx actx = {.request = r, .node = node};
    plugin_kernel_args args = {
        .node = node,
        .inputs = in,
        .n_inputs = node->n_inputs,
        .outputs = out,
        .n_outputs = node->n_outputs,
        .state = plan->states[i],
        .alloc_output = alloc_output_cb,
        .alloc_ctx = &actx,
    };
    uint64_t t0 = plan->profiling ? now_ns() : 0;
    rn_status st = plan->kernels[i]->run(&args);
    if (plan->profiling)
        r->profile[i].real_time_us = (now_ns() - t0) / 1000;
    if (st != RN_OK)
        return st;
    r->profile[i].status = RN_NODE_EXECUTED;
    for (int k = 0; k < node->n_outputs; k++) {
        if (node->outputs[k] != NULL && out[k].data == NULL)
            return rn_set_error(RN_INTERNAL, "node '%s' (%s): kernel left output %d unallocated",
                                node->name, node->op_type, k);
    }
    return RN_OK;
}

rn_status plugin_request_infer(plugin_request *r)
{
    const plugin_plan *plan = r->plan;
    const graph *g = plan->g;
    for (int i = 0; i < g->n_inputs; i++) {
        const value_slot *s = &r->slots[g->inputs[i]->id];
        if (!s->bound)
            return rn_set_error(RN_INVALID_ARG, "input '%s' is not set", g->inputs[i]->name);
    }
    for (int i = 0; i < g->n_nodes; i++)
        r->profile[i].status = RN_NODE_NOT_RUN;
    rn_status st = RN_OK;
    for (int i = 0; i < g->n_nodes && st == RN_OK; i++) {
        st = run_node(r, i);
        if (st != RN_OK)
            break;
        /* Free what no later node reads. */
        const graph_node *node = g->nodes[i];
        for (int k = 0; k < node->n_inputs; k++) {
            const graph_value *v = node->inputs[k];
            if (v != NULL && plan->last_use[v->id] == i && v->producer != NULL)
                slot_clear(&r->slots[v->id]);
        }
        for (int k = 0; k < node->n_outputs; k++) {
            const graph_value *v = node->outputs[k];
            if (v != NULL && plan->last_use[v->id] < 0)
                slot_clear(&r->slots[v->id]);
        }
    }
    if (st != RN_OK) {
        /* Leave no stale intermediates behind. */
        for (int v = 0; v < g->n_values; v++)
            if (g->values[v]->producer != NULL)
                slot_clear(&r->slots[v]);
        return st;
    }
    /* Copy results into the caller's buffers where they were not written in place. */
    for (int o = 0; o < g->n_outputs; o++) {
        const graph_tensor *u = &r->user_out[o];
        const graph_tensor *t = &r->slots[g->outputs[o]->id].t;
        if (u->data == NULL || u->data == t->data)
            continue;
        if (u->type != t->type || u->nbytes != t->nbytes || t->type == RN_STRING)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                "output '%s': the result (%s, %zu bytes) does not fit the tensor "
                                "set for it (%s, %zu bytes)",
                                g->outputs[o]->name, rn_element_type_name(t->type), t->nbytes,
                                rn_element_type_name(u->type), u->nbytes);
        memcpy(u->data, t->data, t->nbytes);
    }
    return RN_OK;
}

rn_status plugin_request_get_output(plugin_request *r, size_t index, graph_tensor *out)
{
    const graph *g = r->plan->g;
    if (index >= (size_t)g->n_outputs)
        return rn_set_error(RN_INVALID_ARG, "output index %zu is out of range (%d outputs)", index,
                            g->n_outputs);
    const graph_tensor *t = &r->slots[g->outputs[index]->id].t;
    if (t->data == NULL && t->nbytes == 0 && t->type == RN_UNDEFINED)
        return rn_set_error(RN_INFER_NOT_STARTED, "output '%s' has no value before infer",
                            g->outputs[index]->name);
    *out = *t;
    const graph_tensor *u = &r->user_out[index];
    if (u->data != NULL)
        out->data = u->data;
    return RN_OK;
}

rn_status plugin_request_profiling(plugin_request *r, const rn_profiling_info **info, size_t *count)
{
    *info = r->profile;
    *count = (size_t)r->plan->g->n_nodes;
    return RN_OK;
}

static rn_status generic_set_input(void *request, size_t index, const struct graph_tensor *t)
{
    return plugin_request_set_input(request, index, t);
}

static rn_status generic_set_output(void *request, size_t index, const struct graph_tensor *t)
{
    return plugin_request_set_output(request, index, t);
}

static rn_status generic_infer(void *request)
{
    return plugin_request_infer(request);
}

static rn_status generic_get_output(void *request, size_t index, struct graph_tensor *out)
{
    return plugin_request_get_output(request, index, out);
}

static rn_status generic_profiling(void *request, const rn_profiling_info **info, size_t *count)
{
    return plugin_request_profiling(request, info, count);
}

static void generic_free(void *request)
{
    plugin_request_free(request);
}

const rn_request_ops plugin_generic_request_ops = {
    .abi_version = RN_PLUGIN_ABI_VERSION,
    .set_input = generic_set_input,
    .set_output = generic_set_output,
    .infer = generic_infer,
    .get_output = generic_get_output,
    .profiling = generic_profiling,
    .free = generic_free,
};
