/* Evaluating one node on constant inputs with a plugin's kernels, for
 * constant folding at compile time (transforms/ calls it through its
 * evaluator hook). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/api/const_eval.h"

static rn_status eval_alloc(plugin_kernel_args *args, int index, int rank, const int64_t *dims)
{
    if (index < 0 || index >= args->n_outputs || rank < 0 || rank > RN_MAX_RANK)
        return rn_set_error(RN_INTERNAL, "node '%s': bad alloc_output(%d)", args->node->name,
                            index);
    graph_tensor *t = &args->outputs[index];
    graph_tensor_release(t);
    t->rank = rank;
    for (int d = 0; d < rank; d++)
        t->dims[d] = dims[d];
    t->nbytes = graph_tensor_count(t) *
                (t->type == RN_STRING ? sizeof(char *) : rn_element_type_size(t->type));
    t->data = calloc(1, t->nbytes ? t->nbytes : 1);
    return t->data != NULL ? RN_OK : rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
}

/* Takes over a tensor the kernel built (only tensors fold). */
static rn_status eval_move(plugin_kernel_args *args, int index, graph_tensor *value)
{
    if (index < 0 || index >= args->n_outputs || value->kind != GRAPH_KIND_TENSOR)
        return rn_set_error(RN_UNSUPPORTED, "node '%s': move_output(%d) of a %s", args->node->name,
                            index, graph_kind_name(value->kind));
    graph_tensor *t = &args->outputs[index];
    graph_tensor_release(t);
    *t = *value;
    t->nbytes = graph_tensor_count(t) *
                (t->type == RN_STRING ? sizeof(char *) : rn_element_type_size(t->type));
    if (t->data == NULL && (t->data = calloc(1, 1)) == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    memset(value, 0, sizeof *value);
    return RN_OK;
}

static void release_all(graph_tensor *outputs, int n)
{
    for (int k = 0; k < n; k++)
        graph_tensor_release(&outputs[k]);
}

/* Runs kernel k on the node's constant inputs into freshly allocated
 * outputs (static shapes from pout), with the scratch memory it asks for. */
static rn_status eval_kernel(const plugin_kernel_registry *reg, const plugin_kernel *k,
                             const graph_node *node, graph_tensor *in, int n_in,
                             const graph_port *pout, graph_tensor *outputs, int n_out)
{
    rn_status st = RN_OK;
    for (int o = 0; o < n_out && st == RN_OK; o++) {
        if (node->outputs[o] == NULL)
            continue;
        graph_tensor *t = &outputs[o];
        t->type = pout[o].type != RN_UNDEFINED ? pout[o].type : node->outputs[o]->type;
        if (graph_shape_is_static(&pout[o].shape)) {
            plugin_kernel_args a = {.node = node, .outputs = outputs, .n_outputs = n_out};
            st = eval_alloc(&a, o, pout[o].shape.rank, pout[o].shape.dims);
        }
    }
    void *state = NULL;
    plugin_kernel_ctx kctx = {.registry = reg};
    if (st == RN_OK && k->prepare_ctx != NULL)
        st = k->prepare_ctx(node, &kctx, &state);
    else if (st == RN_OK && k->prepare != NULL)
        st = k->prepare(node, &state);
    if (st != RN_OK)
        return st;
    /* Constant folding reads and writes plain tensors: a kernel prepared for
     * a device layout (a oneDNN primitive that chose nChw8c, or blocked
     * weights) would read and write other bytes, so it hands the node on. */
    const rn_layout *l = NULL;
    for (int i = 0; i < n_in && l == NULL && k->input_layout != NULL; i++)
        l = k->input_layout(state, i);
    for (int o = 0; o < n_out && l == NULL && k->output_layout != NULL; o++)
        l = k->output_layout(state, o);
    if (l != NULL) {
        /* The message first: the layout belongs to the state. */
        st = rn_set_error(RN_UNSUPPORTED,
                          "node '%s': the kernel works in layout %s, constant folding on plain "
                          "tensors",
                          node->name, l->name != NULL ? l->name : "(unnamed)");
        if (k->release != NULL)
            k->release(state);
        return st;
    }
    size_t scratch = k->scratch_bytes != NULL ? k->scratch_bytes(state) : 0;
    void *scratch_data = scratch > 0 ? malloc(scratch) : NULL;
    if (scratch > 0 && scratch_data == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, "node '%s': out of memory for %zu bytes of scratch",
                          node->name, scratch);
    if (st == RN_OK) {
        plugin_kernel_args args = {
            .node = node,
            .inputs = in,
            .n_inputs = n_in,
            .outputs = outputs,
            .n_outputs = n_out,
            .state = state,
            .alloc_output = eval_alloc,
            .move_output = eval_move,
            .scratch = {.type = RN_U8,
                        .rank = 1,
                        .dims = {(int64_t)scratch},
                        .strides = {1},
                        .data = scratch_data,
                        .nbytes = scratch},
        };
        st = k->run(&args);
    }
    free(scratch_data);
    if (k->release != NULL)
        k->release(state);
    return st;
}

rn_status plugin_const_eval(const graph_node *node, const graph_tensor *inputs,
                            graph_tensor *outputs, void *ctx)
{
    static const max_align_t empty;
    const plugin_kernel_registry *reg = ctx;
    const graph_op_schema *schema = graph_op_find(node->domain, node->op_type);
    if (schema == NULL || schema->infer == NULL)
        return rn_set_error(RN_UNSUPPORTED, "node '%s': no schema", node->name);
    /* Constants are tensors: sequences and optionals are not folded, nor are
     * nodes with subgraphs (which read values this evaluator does not have). */
    for (int a = 0; a < node->n_attrs; a++)
        if (node->attrs[a].g != NULL || node->attrs[a].graphs != NULL)
            return rn_set_error(RN_UNSUPPORTED, "node '%s': has subgraphs", node->name);
    for (int i = 0; i < node->n_inputs; i++)
        if ((node->inputs[i] != NULL && node->inputs[i]->kind != GRAPH_KIND_TENSOR) ||
            inputs[i].kind != GRAPH_KIND_TENSOR)
            return rn_set_error(RN_UNSUPPORTED, "node '%s': input %d is not a tensor", node->name,
                                i);
    for (int o = 0; o < node->n_outputs; o++)
        if (node->outputs[o] != NULL && node->outputs[o]->kind != GRAPH_KIND_TENSOR)
            return rn_set_error(RN_UNSUPPORTED, "node '%s': output %d is not a tensor", node->name,
                                o);
    const plugin_kernel *k;
    rn_status st = plugin_kernel_registry_pick(reg, node, &k);
    if (st != RN_OK)
        return st;
    int n_in = node->n_inputs, n_out = node->n_outputs;
    graph_port *pin = calloc((size_t)(n_in + n_out) + 1, sizeof *pin), *pout = pin + n_in;
    graph_tensor *in = calloc((size_t)n_in + 1, sizeof *in);
    if (pin == NULL || in == NULL) {
        free(pin);
        free(in);
        return rn_set_error(RN_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 0; i < n_in; i++) {
        in[i] = inputs[i];
        if (in[i].type == RN_UNDEFINED)
            continue;
        if (in[i].data == NULL) /* an empty tensor: kernels still get a valid pointer */
            in[i].data = (void *)&empty;
        pin[i] = (graph_port){.present = true, .type = in[i].type, .data = in[i].data};
        pin[i].shape.rank = in[i].rank;
        memcpy(pin[i].shape.dims, in[i].dims, sizeof pin[i].shape.dims);
    }
    for (int o = 0; o < n_out; o++)
        pout[o] = (graph_port){.present = node->outputs[o] != NULL, .shape = {.rank = -1}};
    st = schema->infer(node, pin, n_in, pout, n_out);
    for (int o = 0; o < n_out && st == RN_OK; o++)
        if (pout[o].present && pout[o].kind != GRAPH_KIND_TENSOR)
            st =
                rn_set_error(RN_UNSUPPORTED, "node '%s': output %d is not a tensor", node->name, o);
    /* A kernel that cannot prepare or run the node (a primitive oneDNN
     * refuses) hands it to the next kernel that supports it, as a plan does. */
    while (st == RN_OK) {
        st = eval_kernel(reg, k, node, in, n_in, pout, outputs, n_out);
        const plugin_kernel *next = NULL;
        if (st != RN_OK && plugin_kernel_may_fall_back(st))
            plugin_kernel_registry_next(reg, node, k, &next);
        if (next == NULL)
            break;
        release_all(outputs, n_out);
        k = next;
        st = RN_OK;
    }
    for (int o = 0; o < n_out && st == RN_OK; o++)
        if (node->outputs[o] != NULL && outputs[o].data == NULL)
            st = rn_set_error(RN_INTERNAL, "node '%s': output %d left unallocated", node->name, o);
    if (st != RN_OK)
        release_all(outputs, n_out);
    free(pin);
    free(in);
    return st;
}
