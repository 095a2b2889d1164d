/* REF sequence kernels: SequenceEmpty, SequenceConstruct, SequenceInsert,
 * SequenceAt, SequenceErase, SequenceLength. Sequences are built as owned
 * copies (items copied, strings duplicated) and handed to the executor;
 * positions follow ONNX: [-n, n-1] to read or erase, [-n, n] to insert
 * (n appends), negative counting from the back; out of range is an error. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

static rn_status sequence_empty_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    int64_t dtype = graph_node_attr_int(node, "dtype", RN_F32);
    if (!rn_element_type_is_valid((rn_element_type)dtype))
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "dtype %lld is not an element type",
                            NODE_ARGS(node), (long long)dtype);
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE, .type = (rn_element_type)dtype};
    return args->move_output(args, 0, &seq);
}

/* Appends a copy of tensor t (of the sequence's element type) to seq. */
static rn_status append_copy(const graph_node *node, graph_tensor *seq, const graph_tensor *t)
{
    if (t->kind != GRAPH_KIND_TENSOR)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "a sequence holds tensors, not a %s",
                            NODE_ARGS(node), graph_kind_name(t->kind));
    if (seq->type != RN_UNDEFINED && t->type != seq->type)
        return rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "a %s tensor cannot join a sequence of %s",
                            NODE_ARGS(node), rn_element_type_name(t->type),
                            rn_element_type_name(seq->type));
    graph_tensor item;
    rn_status st = graph_tensor_copy(&item, t);
    if (st == RN_OK && (st = graph_sequence_append(seq, &item)) != RN_OK)
        graph_tensor_release(&item);
    return st;
}

static rn_status sequence_construct_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE, .type = args->inputs[0].type};
    rn_status st = RN_OK;
    for (int i = 0; i < args->n_inputs && st == RN_OK; i++) {
        if (node->inputs[i] == NULL)
            st = rn_set_error(RN_INVALID_ARG, NODE_FMT "input %d is empty", NODE_ARGS(node), i);
        else
            st = append_copy(node, &seq, &args->inputs[i]);
    }
    if (st == RN_OK)
        st = args->move_output(args, 0, &seq);
    graph_tensor_release(&seq);
    return st;
}

/* The optional position input i, or `dflt` when it is omitted. */
static rn_status position_input(const plugin_kernel_args *args, int i, int64_t dflt, int64_t *out)
{
    *out = dflt;
    if (i >= args->n_inputs || args->node->inputs[i] == NULL)
        return RN_OK;
    return ref_read_position(args->node, &args->inputs[i], out);
}

static rn_status sequence_insert_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_SEQUENCE);
    if (st == RN_OK)
        st = ref_expect_kind(args, 1, GRAPH_KIND_TENSOR);
    const graph_tensor *s = &args->inputs[0], *t = &args->inputs[1];
    int64_t pos;
    size_t at = 0;
    if (st == RN_OK)
        st = position_input(args, 2, (int64_t)s->n_items, &pos);
    if (st == RN_OK)
        st = ref_resolve_position(node, pos, s->n_items, true, &at);
    if (st != RN_OK)
        return st;
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE, .type = s->type};
    for (size_t i = 0; i <= s->n_items && st == RN_OK; i++) {
        if (i == at)
            st = append_copy(node, &seq, t);
        if (i < s->n_items && st == RN_OK)
            st = append_copy(node, &seq, &s->items[i]);
    }
    if (st == RN_OK)
        st = args->move_output(args, 0, &seq);
    graph_tensor_release(&seq);
    return st;
}

static rn_status sequence_at_run(plugin_kernel_args *args)
{
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_SEQUENCE);
    const graph_tensor *s = &args->inputs[0];
    int64_t pos = 0;
    size_t at = 0;
    if (st == RN_OK)
        st = ref_read_position(args->node, &args->inputs[1], &pos);
    if (st == RN_OK)
        st = ref_resolve_position(args->node, pos, s->n_items, false, &at);
    if (st != RN_OK)
        return st;
    return ref_move_copy(args, 0, &s->items[at]);
}

static rn_status sequence_erase_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_SEQUENCE);
    const graph_tensor *s = &args->inputs[0];
    int64_t pos = -1;
    size_t at = 0;
    if (st == RN_OK)
        st = position_input(args, 1, -1, &pos);
    if (st == RN_OK)
        st = ref_resolve_position(node, pos, s->n_items, false, &at);
    if (st != RN_OK)
        return st;
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE, .type = s->type};
    for (size_t i = 0; i < s->n_items && st == RN_OK; i++)
        if (i != at)
            st = append_copy(node, &seq, &s->items[i]);
    if (st == RN_OK)
        st = args->move_output(args, 0, &seq);
    graph_tensor_release(&seq);
    return st;
}

static rn_status sequence_length_run(plugin_kernel_args *args)
{
    rn_status st = ref_expect_kind(args, 0, GRAPH_KIND_SEQUENCE);
    if (st != RN_OK)
        return st;
    graph_tensor len = {.type = RN_I64, .rank = 0};
    if ((st = ref_tensor_alloc(args->node, &len)) != RN_OK)
        return st;
    *(int64_t *)len.data = (int64_t)args->inputs[0].n_items;
    if ((st = args->move_output(args, 0, &len)) != RN_OK)
        graph_tensor_release(&len);
    return st;
}

REF_VALUE_KERNEL(ref_kernel_sequence_empty, "SequenceEmpty", ref_supports_any, sequence_empty_run)
REF_VALUE_KERNEL(ref_kernel_sequence_construct, "SequenceConstruct", ref_supports_any,
                 sequence_construct_run)
REF_VALUE_KERNEL(ref_kernel_sequence_insert, "SequenceInsert", ref_supports_any,
                 sequence_insert_run)
REF_VALUE_KERNEL(ref_kernel_sequence_at, "SequenceAt", ref_supports_any, sequence_at_run)
REF_VALUE_KERNEL(ref_kernel_sequence_erase, "SequenceErase", ref_supports_any, sequence_erase_run)
REF_VALUE_KERNEL(ref_kernel_sequence_length, "SequenceLength", ref_supports_any,
                 sequence_length_run)
