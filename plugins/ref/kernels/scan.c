/* REF Scan: opset 9+ (scan inputs sliced along scan_input_axes, forward or
 * reverse per scan_input_directions; scan outputs stacked along
 * scan_output_axes, appended or, for reverse, prepended), and opset 8 (a
 * leading batch axis on every input and output, scan axis 1, `directions`
 * for the inputs, and sequence_lens: a shorter sequence stops early, its
 * scan outputs padded with zeros to the longest).
 *
 * The body is a nested plan built at prepare time; each step binds the state
 * values and one slice of every scan input, and copies the new states and
 * the scan output slices out of the body's results. */
#include <stdlib.h>
#include <string.h>

#include "plugins/api/subgraph.h"
#include "plugins/ref/kernels/tmp.h"
#include "plugins/ref/kernels/values.h"

#define NODE_FMT     "node '%s' (%s): "
#define NODE_ARGS(n) (n)->name, (n)->op_type

/* The layout of one Scan node. */
typedef struct scan_layout {
    bool batched; /* opset 8 */
    int first;    /* index of the first state input */
    int n_state, n_in, n_out;
} scan_layout;

static rn_status layout_of(const graph_node *node, int n_inputs, int n_outputs, scan_layout *l)
{
    l->batched = node->opset < 9;
    l->first = l->batched ? 1 : 0;
    int64_t m = graph_node_attr_int(node, "num_scan_inputs", -1);
    if (m < 1 || m > n_inputs - l->first)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "num_scan_inputs is %lld for %d inputs",
                            NODE_ARGS(node), (long long)m, n_inputs - l->first);
    l->n_in = (int)m;
    l->n_state = n_inputs - l->first - l->n_in;
    l->n_out = n_outputs - l->n_state;
    if (l->n_out < 0)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "%d outputs for %d state values",
                            NODE_ARGS(node), n_outputs, l->n_state);
    return RN_OK;
}

/* Entry i of an INTS attribute, or 0. */
static int64_t attr_at(const graph_node *node, const char *name, int i)
{
    const int64_t *v;
    int n = graph_node_attr_ints(node, name, &v);
    return n > i ? v[i] : 0;
}

static void scan_release(void *state)
{
    plugin_subgraph_free(state);
}

static rn_status scan_prepare(const graph_node *node, const plugin_kernel_ctx *ctx, void **state)
{
    const graph_attr *a = graph_node_attr(node, "body");
    if (a == NULL || a->g == NULL)
        return rn_set_error(RN_INVALID_ARG, NODE_FMT "needs the graph attribute 'body'",
                            NODE_ARGS(node));
    scan_layout l;
    rn_status st = layout_of(node, node->n_inputs, node->n_outputs, &l);
    if (st != RN_OK)
        return st;
    int n = a->g->n_inputs;
    graph_port *seed = calloc((size_t)n + 1, sizeof *seed);
    if (seed == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    /* The body sees the states and one slice of each scan input, without
     * the batch axis (opset 8) and the scan axis. */
    int b = l.batched ? 1 : 0;
    for (int i = 0; i < n && l.first + i < node->n_inputs; i++) {
        const graph_value *v = node->inputs[l.first + i];
        if (v == NULL)
            continue;
        seed[i] = (graph_port){.present = true, .type = v->type, .shape = {.rank = -1}};
        if (v->shape.rank < 0)
            continue;
        int axis = -1;
        if (i >= l.n_state) {
            int64_t ax = l.batched ? 0 : attr_at(node, "scan_input_axes", i - l.n_state);
            int rank = v->shape.rank - b;
            if (ax < -rank || ax >= rank)
                continue; /* the run reports it */
            axis = (int)(ax < 0 ? ax + rank : ax) + b;
        }
        seed[i].shape.rank = 0;
        for (int d = b; d < v->shape.rank; d++)
            if (d != axis)
                seed[i].shape.dims[seed[i].shape.rank++] = v->shape.dims[d];
    }
    plugin_subgraph *sub = NULL;
    st = plugin_subgraph_create(node, a->g, "body", ctx, seed, n, &sub);
    free(seed);
    if (st != RN_OK)
        return st;
    *state = sub;
    return RN_OK;
}

/* One scan over `steps` slices: states (views) in, scan inputs xs (views)
 * sliced along axes[i] (reversed where rev[i]); new states (owned) and the
 * scan output slices (owned sequences, in step order) out. */
typedef struct scan_job {
    const scan_layout *l;
    const graph_tensor *states;
    const graph_tensor *xs;
    const int *axes;
    const bool *rev;
    int64_t steps;
    graph_tensor *new_states; /* n_state, owned */
    graph_tensor *ys;         /* n_out sequences, owned */
} scan_job;

static rn_status scan_steps(plugin_kernel_args *args, plugin_subgraph_run *run, scan_job *j)
{
    const graph_node *node = args->node;
    const scan_layout *l = j->l;
    int n_body_in = l->n_state + l->n_in, n_body_out = l->n_state + l->n_out;
    graph_tensor *in = ref_tmp_calloc((size_t)(n_body_in + n_body_out + l->n_in) + 1, sizeof *in);
    if (in == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    graph_tensor *out = in + n_body_in, *slices = out + n_body_out;
    rn_status st = RN_OK;
    for (int k = 0; k < l->n_state && st == RN_OK; k++)
        st = graph_tensor_copy(&j->new_states[k], &j->states[k]);
    for (int k = 0; k < l->n_out; k++)
        j->ys[k] = (graph_tensor){.kind = GRAPH_KIND_SEQUENCE};
    for (int64_t t = 0; t < j->steps && st == RN_OK; t++) {
        if (args->cancel != NULL && atomic_load(args->cancel)) {
            st = rn_set_error(RN_CANCELLED, NODE_FMT "cancelled at step %lld", NODE_ARGS(node),
                              (long long)t);
            break;
        }
        for (int k = 0; k < l->n_in && st == RN_OK; k++) {
            int64_t at = j->rev[k] ? j->xs[k].dims[j->axes[k]] - 1 - t : t;
            st = ref_take(node, &j->xs[k], j->axes[k], at, &slices[k]);
        }
        for (int k = 0; k < l->n_state; k++)
            in[k] = j->new_states[k];
        for (int k = 0; k < l->n_in; k++)
            in[l->n_state + k] = slices[k];
        if (st == RN_OK && (st = plugin_subgraph_invoke(run, in, out)) != RN_OK &&
            st != RN_CANCELLED)
            st = rn_wrap_error(st, NODE_FMT "body, step %lld: ", NODE_ARGS(node), (long long)t);
        for (int k = 0; k < l->n_state && st == RN_OK; k++) {
            graph_tensor next;
            if ((st = graph_tensor_copy(&next, &out[k])) != RN_OK)
                break;
            graph_tensor_release(&j->new_states[k]);
            j->new_states[k] = next;
        }
        for (int k = 0; k < l->n_out && st == RN_OK; k++) {
            graph_tensor item;
            if (out[l->n_state + k].kind != GRAPH_KIND_TENSOR) {
                st = rn_set_error(RN_TYPE_MISMATCH, NODE_FMT "scan output %d is not a tensor",
                                  NODE_ARGS(node), k);
                break;
            }
            if ((st = graph_tensor_copy(&item, &out[l->n_state + k])) == RN_OK &&
                (st = graph_sequence_append(&j->ys[k], &item)) != RN_OK)
                graph_tensor_release(&item);
        }
        for (int k = 0; k < l->n_in; k++)
            graph_tensor_release(&slices[k]);
    }
    ref_tmp_free(in);
    return st;
}

/* Stacks the slices of one scan output along `axis` (in reverse order when
 * `rev`); with no slices, an empty tensor shaped like the body's result. */
static rn_status stack_output(const graph_node *node, graph_tensor *seq, int64_t axis_attr,
                              bool rev, const graph_value *body_out, graph_tensor *y)
{
    if (seq->n_items == 0) {
        const graph_shape *s = &body_out->shape;
        int rank = s->rank >= 0 && s->rank < RN_MAX_RANK ? s->rank + 1 : 1;
        int axis = (int)(axis_attr < 0 ? axis_attr + rank : axis_attr);
        *y = (graph_tensor){.type = body_out->type, .rank = rank};
        if (axis < 0 || axis >= rank)
            return rn_set_error(RN_INVALID_ARG, NODE_FMT "scan output axis %lld for rank %d",
                                NODE_ARGS(node), (long long)axis_attr, rank);
        for (int d = 0, k = 0; d < rank; d++) {
            if (d == axis) {
                y->dims[d] = 0;
                continue;
            }
            int64_t v = k < s->rank ? s->dims[k] : 0;
            y->dims[d] = v > 0 ? v : 0; /* unknown dims of an empty result: 0 */
            k++;
        }
        return ref_tensor_alloc(node, y);
    }
    if (rev)
        for (size_t a = 0, b = seq->n_items - 1; a < b; a++, b--) {
            graph_tensor t = seq->items[a];
            seq->items[a] = seq->items[b];
            seq->items[b] = t;
        }
    int rank = seq->items[0].rank + 1, axis;
    rn_status st = graph_normalize_axis(node, axis_attr, rank, &axis);
    if (st != RN_OK)
        return st;
    return ref_concat(node, seq->items, seq->n_items, axis, true, y);
}

/* Opset 9+. */
static rn_status scan_run_unbatched(plugin_kernel_args *args, const scan_layout *l,
                                    plugin_subgraph_run *run, graph_tensor *states,
                                    graph_tensor *ys, int *axes, bool *rev)
{
    const graph_node *node = args->node;
    int64_t steps = -1;
    for (int k = 0; k < l->n_in; k++) {
        const graph_tensor *x = &args->inputs[l->n_state + k];
        int ax;
        rn_status st =
            graph_normalize_axis(node, attr_at(node, "scan_input_axes", k), x->rank, &ax);
        if (st != RN_OK)
            return st;
        axes[k] = ax;
        rev[k] = attr_at(node, "scan_input_directions", k) != 0;
        if (steps >= 0 && x->dims[ax] != steps)
            return rn_set_error(RN_SHAPE_MISMATCH,
                                NODE_FMT "scan input %d has %lld steps, scan input 0 has %lld",
                                NODE_ARGS(node), k, (long long)x->dims[ax], (long long)steps);
        steps = x->dims[ax];
    }
    scan_job j = {.l = l,
                  .states = args->inputs,
                  .xs = args->inputs + l->n_state,
                  .axes = axes,
                  .rev = rev,
                  .steps = steps,
                  .new_states = states,
                  .ys = ys};
    return scan_steps(args, run, &j);
}

/* Opset 8: one scan per batch entry, results stacked along the batch axis. */
static rn_status scan_run_batched(plugin_kernel_args *args, const scan_layout *l,
                                  plugin_subgraph_run *run, const graph *body, graph_tensor *states,
                                  graph_tensor *ys, int *axes, bool *rev)
{
    const graph_node *node = args->node;
    const graph_tensor *vals = args->inputs + l->first;
    int n_vals = l->n_state + l->n_in;
    int64_t batch = -1, max_len = -1;
    for (int k = 0; k < n_vals; k++) {
        const graph_tensor *x = &vals[k];
        int need = k < l->n_state ? 1 : 2;
        if (x->kind != GRAPH_KIND_TENSOR || x->rank < need)
            return rn_set_error(
                RN_INVALID_ARG, NODE_FMT "input %d needs a batch axis%s (rank >= %d)",
                NODE_ARGS(node), l->first + k, need == 2 ? " and a sequence axis" : "", need);
        if (batch >= 0 && x->dims[0] != batch)
            return rn_set_error(RN_SHAPE_MISMATCH, NODE_FMT "input %d has batch %lld, not %lld",
                                NODE_ARGS(node), l->first + k, (long long)x->dims[0],
                                (long long)batch);
        batch = x->dims[0];
        if (k >= l->n_state) {
            if (max_len >= 0 && x->dims[1] != max_len)
                return rn_set_error(RN_SHAPE_MISMATCH,
                                    NODE_FMT "scan inputs differ in sequence length",
                                    NODE_ARGS(node));
            max_len = x->dims[1];
            axes[k - l->n_state] = 0;
            rev[k - l->n_state] = attr_at(node, "directions", k - l->n_state) != 0;
        }
    }
    if (node->inputs[0] != NULL) {
        const graph_tensor *lens = &args->inputs[0];
        if (lens->kind != GRAPH_KIND_TENSOR || (lens->type != RN_I32 && lens->type != RN_I64) ||
            (int64_t)graph_tensor_count(lens) != batch)
            return rn_set_error(RN_INVALID_ARG,
                                NODE_FMT "sequence_lens must hold one integer per batch entry",
                                NODE_ARGS(node));
        for (int64_t b = 0; b < batch; b++) {
            int64_t len = lens->type == RN_I32 ? ((const int32_t *)lens->data)[b]
                                               : ((const int64_t *)lens->data)[b];
            if (len != max_len)
                return rn_set_error(RN_UNSUPPORTED,
                                    NODE_FMT "sequence_lens[%lld] is %lld: sequences shorter "
                                             "than the scan axis (%lld) are not supported",
                                    NODE_ARGS(node), (long long)b, (long long)len,
                                    (long long)max_len);
        }
    }
    int n_res = l->n_state + l->n_out;
    /* per_batch[r]: result r of every batch entry, stacked at the end. */
    graph_tensor *per_batch = ref_tmp_calloc((size_t)n_res + 1, sizeof *per_batch);
    graph_tensor *tmp = ref_tmp_calloc((size_t)(n_vals + n_res) + 1, sizeof *tmp);
    if (per_batch == NULL || tmp == NULL) {
        ref_tmp_free(per_batch);
        ref_tmp_free(tmp);
        return rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    }
    graph_tensor *sliced = tmp, *st_out = tmp + n_vals, *y_seq = st_out + l->n_state;
    rn_status st = RN_OK;
    for (int64_t b = 0; b < batch && st == RN_OK; b++) {
        for (int k = 0; k < n_vals && st == RN_OK; k++)
            st = ref_take(node, &vals[k], 0, b, &sliced[k]);
        scan_job j = {.l = l,
                      .states = sliced,
                      .xs = sliced + l->n_state,
                      .axes = axes,
                      .rev = rev,
                      .steps = max_len,
                      .new_states = st_out,
                      .ys = y_seq};
        if (st == RN_OK)
            st = scan_steps(args, run, &j);
        for (int r = 0; r < n_res && st == RN_OK; r++) {
            graph_tensor item = {0};
            if (r < l->n_state) {
                item = st_out[r];
                memset(&st_out[r], 0, sizeof st_out[r]);
            } else {
                st = stack_output(node, &y_seq[r - l->n_state], 0, false, body->outputs[r], &item);
            }
            if (st == RN_OK && (st = graph_sequence_append(&per_batch[r], &item)) != RN_OK)
                graph_tensor_release(&item);
        }
        for (int k = 0; k < n_vals + n_res; k++)
            graph_tensor_release(&tmp[k]);
    }
    for (int r = 0; r < n_res && st == RN_OK; r++) {
        graph_tensor *dst = r < l->n_state ? &states[r] : &ys[r - l->n_state];
        if (per_batch[r].n_items > 0) {
            st = ref_concat(node, per_batch[r].items, per_batch[r].n_items, 0, true, dst);
        } else if (r < l->n_state) {
            st = graph_tensor_copy(dst, &vals[r]); /* batch 0: empty as it came */
        } else {
            graph_tensor none = {.kind = GRAPH_KIND_SEQUENCE};
            graph_tensor one;
            if ((st = stack_output(node, &none, 0, false, body->outputs[r], &one)) == RN_OK) {
                /* [0 steps, ...] under a batch axis of 0 */
                *dst = (graph_tensor){.type = one.type, .rank = one.rank + 1};
                if (one.rank + 1 > RN_MAX_RANK) {
                    st = rn_set_error(RN_UNSUPPORTED, NODE_FMT "output rank too large",
                                      NODE_ARGS(node));
                } else {
                    dst->dims[1] = max_len;
                    memcpy(dst->dims + 2, one.dims + 1, sizeof(int64_t) * (size_t)(one.rank - 1));
                    st = ref_tensor_alloc(node, dst);
                }
                graph_tensor_release(&one);
            }
        }
    }
    for (int r = 0; r < n_res; r++)
        graph_tensor_release(&per_batch[r]);
    ref_tmp_free(per_batch);
    ref_tmp_free(tmp);
    return st;
}

static rn_status scan_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    const plugin_subgraph *sub = args->state;
    const graph *body = plugin_subgraph_graph(sub);
    scan_layout l;
    rn_status st = layout_of(node, args->n_inputs, args->n_outputs, &l);
    if (st != RN_OK)
        return st;
    if (body->n_inputs != l.n_state + l.n_in || body->n_outputs != l.n_state + l.n_out)
        return rn_set_error(RN_INVALID_ARG,
                            NODE_FMT "the body's %d inputs and %d results do not fit the node",
                            NODE_ARGS(node), body->n_inputs, body->n_outputs);
    for (int k = l.first; k < args->n_inputs; k++)
        if ((st = ref_expect_kind(args, k, GRAPH_KIND_TENSOR)) != RN_OK)
            return st;
    int n_res = l.n_state + l.n_out;
    graph_tensor *res = ref_tmp_calloc((size_t)n_res + 1, sizeof *res);
    int *axes = ref_tmp_calloc((size_t)l.n_in + 1, sizeof *axes);
    bool *rev = ref_tmp_calloc((size_t)l.n_in + 1, sizeof *rev);
    plugin_subgraph_run *run = NULL;
    if (res == NULL || axes == NULL || rev == NULL)
        st = rn_set_error(RN_OUT_OF_MEMORY, NODE_FMT "out of memory", NODE_ARGS(node));
    if (st == RN_OK)
        st = plugin_subgraph_begin(sub, args, &run);
    if (st == RN_OK && l.batched) {
        st = scan_run_batched(args, &l, run, body, res, res + l.n_state, axes, rev);
    } else if (st == RN_OK) {
        /* res holds the new states, then the scan outputs' slices (as
         * sequences), stacked in place below. */
        st = scan_run_unbatched(args, &l, run, res, res + l.n_state, axes, rev);
        for (int k = 0; k < l.n_out && st == RN_OK; k++) {
            graph_tensor y;
            st = stack_output(node, &res[l.n_state + k], attr_at(node, "scan_output_axes", k),
                              attr_at(node, "scan_output_directions", k) != 0,
                              body->outputs[l.n_state + k], &y);
            if (st == RN_OK) {
                graph_tensor_release(&res[l.n_state + k]);
                res[l.n_state + k] = y;
            }
        }
    }
    plugin_subgraph_end(run);
    for (int r = 0; r < n_res && st == RN_OK; r++)
        if (node->outputs[r] != NULL)
            st = args->move_output(args, r, &res[r]);
    for (int r = 0; res != NULL && r < n_res; r++)
        graph_tensor_release(&res[r]);
    ref_tmp_free(res);
    ref_tmp_free(axes);
    ref_tmp_free(rev);
    return st;
}

const plugin_kernel ref_kernel_scan = {
    .domain = "",
    .op_type = "Scan",
    .impl_type = "ref",
    .supports = ref_supports_any,
    .prepare_ctx = scan_prepare,
    .run = scan_run,
    .release = scan_release,
    .values = true,
};
