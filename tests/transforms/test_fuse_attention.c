/* fuse_attention (transforms/fuse_attention.c) on small graphs: the
 * exporters' attention forms become one runnel ScaledDotProductAttention
 * (its inputs, scale, name, output and fused names) whose REF results are
 * the unfused graph's; the variants that must stay as they are (an
 * intermediate read elsewhere or returned, a mask that would grow the
 * scores, a per-head scale, a Softmax over another axis, batch dims that
 * differ) are left untouched. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "tests/transforms/transforms_test_util.h"
#include "transforms/transforms.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* Q, K, V [1, 2, 4, 8]: batch 1, 2 heads, sequence 4, head size 8. */
static const int64_t qkv_dims[4] = {1, 2, 4, 8};
static const int64_t perm_k[4] = {0, 1, 3, 2};
static float q_data[64], k_data[64], v_data[64];

static void fill(float *v, int n, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 8) & 0xffff) / 16384.0f - 2.0f;
    }
}

static int run_fusion(graph *g)
{
    int changes = -1;
    OK(transforms_fuse_attention(g, NULL, &changes));
    return changes;
}

typedef struct attn {
    graph *g;
    graph_value *q, *k, *v, *kt;
} attn;

/* Inputs q, k, v and kt = Transpose(k) (the last two axes swapped). */
static attn start(void)
{
    fill(q_data, 64, 1);
    fill(k_data, 64, 2);
    fill(v_data, 64, 3);
    attn a = {.g = tt_graph()};
    a.q = tt_input(a.g, "q", RN_F32, 4, qkv_dims);
    a.k = tt_input(a.g, "k", RN_F32, 4, qkv_dims);
    a.v = tt_input(a.g, "v", RN_F32, 4, qkv_dims);
    a.kt = tt_unary(a.g, "k_t", "Transpose", a.k);
    tt_attr_ints(a.g, "k_t", "perm", 4, perm_k);
    return a;
}

static graph_value *scalar(graph *g, const char *name, float v)
{
    return tt_const_f32(g, name, 0, NULL, &v);
}

/* Runs both graphs on REF with q, k, v and compares their first result. */
static void assert_same_results_of(const graph *before, const graph *after, const int64_t *dims)
{
    graph_tensor in[3] = {tt_tensor_f32(4, dims, q_data), tt_tensor_f32(4, dims, k_data),
                          tt_tensor_f32(4, dims, v_data)};
    graph_tensor a[2] = {0}, b[2] = {0};
    tt_run(before, in, 3, a);
    tt_run(after, in, 3, b);
    tt_assert_close_f32(&b[0], &a[0], 1e-5f);
    for (int i = 0; i < before->n_outputs; i++) {
        graph_tensor_release(&a[i]);
        graph_tensor_release(&b[i]);
    }
}

static void assert_same_results(const graph *before, const graph *after)
{
    assert_same_results_of(before, after, qkv_dims);
}

static graph *clone_of(const graph *g)
{
    graph *c;
    OK(graph_clone(g, &c));
    return c;
}

/* The encoder's form (bench/models/make_encoder.py, BERT as PyTorch
 * exports it): MatMul(Q, K^T), Div by sqrt(d), Add of the extended mask
 * [1, 1, 1, S], Softmax, MatMul with V. */
Test(fuse_attention, exporter_form_becomes_one_node)
{
    attn a = start();
    graph *g = a.g;
    const int64_t md[4] = {1, 1, 1, 4};
    float mask[4] = {0.0f, 0.0f, 0.0f, -3.4e38f};
    graph_value *s = tt_binary(g, "scores", "MatMul", a.q, a.kt);
    graph_value *d = tt_binary(g, "div", "Div", s, scalar(g, "sqrt_d", sqrtf(8.0f)));
    graph_value *m = tt_binary(g, "add_mask", "Add", d, tt_const_f32(g, "mask", 4, md, mask));
    graph_value *p = tt_unary(g, "softmax", "Softmax", m);
    tt_attr_int(g, "softmax", "axis", -1);
    graph_value *y = tt_binary(g, "context", "MatMul", p, a.v);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_fusion(g), 4, "MatMul, Div, Add and Softmax go");
    cr_assert_eq(g->n_nodes, 2, "the Transpose of K and the fused node remain");
    graph_node *n = tt_find_node(g, "context");
    cr_assert_not_null(n, "the fused node keeps the second MatMul's name");
    cr_assert_str_eq(n->op_type, "ScaledDotProductAttention");
    cr_assert_str_eq(n->domain, "runnel");
    cr_assert_eq(n->n_inputs, 4);
    cr_assert_eq(n->inputs[0], a.q);
    cr_assert_eq(n->inputs[1], a.kt);
    cr_assert_eq(n->inputs[2], a.v);
    cr_assert_str_eq(n->inputs[3]->name, "mask");
    cr_assert_float_eq(graph_node_attr_float(n, "scale", 0.0f), 1.0f / sqrtf(8.0f), 1e-7f);
    cr_assert_eq(n->outputs[0], y);
    cr_assert(tt_has_fused(n, "scores") && tt_has_fused(n, "div") && tt_has_fused(n, "add_mask") &&
              tt_has_fused(n, "softmax") && tt_has_fused(n, "context"));
    tt_assert_valid(g);
    assert_same_results(before, g);
    graph_free(before);
    graph_free(g);
}

/* [B, S, H, D] = [1, 4, 2, 8] inputs q, k, v (x) and their head splits (h):
 * Transposes q_heads and v_heads [0, 2, 1, 3], k_heads [0, 2, 3, 1]. */
static const int64_t bshd[4] = {1, 4, 2, 8};

static void split_heads(graph *g, graph_value **x, graph_value **h)
{
    static const int64_t split[4] = {0, 2, 1, 3}, split_t[4] = {0, 2, 3, 1};
    const char *in[3] = {"q", "k", "v"}, *names[3] = {"q_heads", "k_heads", "v_heads"};
    for (int k = 0; k < 3; k++) {
        x[k] = tt_input(g, in[k], RN_F32, 4, bshd);
        h[k] = tt_unary(g, names[k], "Transpose", x[k]);
        tt_attr_ints(g, names[k], "perm", 4, k == 1 ? split_t : split);
    }
}

/* The exporters' head split: Q and V Transposed [0, 2, 1, 3] from [B, S, H,
 * D], K [0, 2, 3, 1]: the three Transposes go into the node (qkv_layout
 * BSHD), which REF computes as the unfused graph does. */
Test(fuse_attention, head_transposes_are_absorbed)
{
    fill(q_data, 64, 1);
    fill(k_data, 64, 2);
    fill(v_data, 64, 3);
    graph *g = tt_graph();
    graph_value *x[3], *h[3];
    split_heads(g, x, h);
    graph_value *s = tt_binary(g, "scores", "MatMul", h[0], h[1]);
    graph_value *d = tt_binary(g, "div", "Div", s, scalar(g, "sqrt_d", sqrtf(8.0f)));
    graph_value *p = tt_unary(g, "softmax", "Softmax", d);
    graph_value *y = tt_binary(g, "context", "MatMul", p, h[2]);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_fusion(g), 6, "MatMul, Div, Softmax and the three Transposes go");
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(n->op_type, "ScaledDotProductAttention");
    cr_assert_str_eq(graph_node_attr_string(n, "qkv_layout", ""), "BSHD");
    for (int k = 0; k < 3; k++)
        cr_assert_eq(n->inputs[k], x[k], "input %d is the Transpose's input", k);
    cr_assert(tt_has_fused(n, "k_heads"));
    cr_assert_eq(n->outputs[0], y);
    cr_assert_eq(y->shape.rank, 4);
    cr_assert_eq(y->shape.dims[1], 2, "the output stays [B, H, S, D]");
    tt_assert_valid(g);
    assert_same_results_of(before, g, bshd);
    graph_free(before);
    graph_free(g);
}

/* The head split, the attention and the head merge (Transpose [0, 2, 1, 3]
 * back to [B, S, H, D]) as exporters write an encoder's self-attention;
 * `merge_perm` is the merge's perm, `extra` also returns the attention's
 * own output. */
static graph *split_attend_merge(graph_value **x, graph_value **merged, const int64_t *merge_perm,
                                 bool extra)
{
    fill(q_data, 64, 1);
    fill(k_data, 64, 2);
    fill(v_data, 64, 3);
    graph *g = tt_graph();
    graph_value *h[3];
    split_heads(g, x, h);
    graph_value *s = tt_binary(g, "scores", "MatMul", h[0], h[1]);
    graph_value *d = tt_binary(g, "div", "Div", s, scalar(g, "sqrt_d", sqrtf(8.0f)));
    graph_value *p = tt_unary(g, "softmax", "Softmax", d);
    graph_value *y = tt_binary(g, "context", "MatMul", p, h[2]);
    *merged = tt_unary(g, "merge", "Transpose", y);
    tt_attr_ints(g, "merge", "perm", 4, merge_perm);
    tt_output(g, *merged);
    if (extra)
        tt_output(g, y);
    tt_finish(g);
    return g;
}

/* Where the device asks for it (the CPU's pipeline), the head merge joins
 * the node too: it writes the Transpose's output [B, S, H, D] (out_layout
 * BSHD), which REF computes as the unfused graph does. */
Test(fuse_attention, head_merge_is_absorbed_when_the_device_asks)
{
    static const int64_t merge[4] = {0, 2, 1, 3};
    graph_value *x[3], *merged;
    graph *g = split_attend_merge(x, &merged, merge, false);
    graph *before = clone_of(g);
    transforms_attention_options o = {.absorb_output = true};
    int changes = -1;
    OK(transforms_fuse_attention(g, &o, &changes));
    cr_assert_eq(changes, 7, "MatMul, Div, Softmax and the four Transposes go");
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(n->op_type, "ScaledDotProductAttention");
    cr_assert_str_eq(graph_node_attr_string(n, "qkv_layout", ""), "BSHD");
    cr_assert_str_eq(graph_node_attr_string(n, "out_layout", ""), "BSHD");
    cr_assert_eq(n->outputs[0], merged, "the node writes the merge's output");
    cr_assert_eq(merged->producer, n);
    cr_assert(tt_has_fused(n, "merge") && tt_has_fused(n, "context"));
    for (int d = 0; d < 4; d++)
        cr_assert_eq(merged->shape.dims[d], bshd[d], "[B, S, H, D], dim %d", d);
    tt_assert_valid(g);
    assert_same_results_of(before, g, bshd);
    graph_free(before);
    graph_free(g);
}

/* Q and V one head split (one Transpose read by both MatMuls, as
 * merge_duplicates leaves two equal ones): absorbed once, the node reads its
 * input as Q and as V. */
Test(fuse_attention, head_transpose_shared_by_q_and_v_is_absorbed)
{
    fill(q_data, 64, 1);
    fill(k_data, 64, 2);
    graph *g = tt_graph();
    static const int64_t split[4] = {0, 2, 1, 3}, split_t[4] = {0, 2, 3, 1};
    graph_value *x = tt_input(g, "q", RN_F32, 4, bshd), *xk = tt_input(g, "k", RN_F32, 4, bshd);
    graph_value *h = tt_unary(g, "qv_heads", "Transpose", x);
    tt_attr_ints(g, "qv_heads", "perm", 4, split);
    graph_value *hk = tt_unary(g, "k_heads", "Transpose", xk);
    tt_attr_ints(g, "k_heads", "perm", 4, split_t);
    graph_value *s = tt_binary(g, "scores", "MatMul", h, hk);
    graph_value *d = tt_binary(g, "div", "Div", s, scalar(g, "sqrt_d", sqrtf(8.0f)));
    graph_value *y = tt_binary(g, "context", "MatMul", tt_unary(g, "softmax", "Softmax", d), h);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_fusion(g), 5, "MatMul, Div, Softmax and the two Transposes go");
    cr_assert_eq(g->n_nodes, 1);
    graph_node *n = g->nodes[0];
    cr_assert_str_eq(graph_node_attr_string(n, "qkv_layout", ""), "BSHD");
    cr_assert_eq(n->inputs[0], x);
    cr_assert_eq(n->inputs[1], xk);
    cr_assert_eq(n->inputs[2], x);
    tt_assert_valid(g);
    graph_tensor in[2] = {tt_tensor_f32(4, bshd, q_data), tt_tensor_f32(4, bshd, k_data)};
    graph_tensor a[1] = {0}, b[1] = {0};
    tt_run(before, in, 2, a);
    tt_run(g, in, 2, b);
    tt_assert_close_f32(&b[0], &a[0], 1e-5f);
    graph_tensor_release(&a[0]);
    graph_tensor_release(&b[0]);
    graph_free(before);
    graph_free(g);
}

/* Without the device's option (NVIDIA's pipeline, the default), and where
 * the merge is another permutation or the attention's output is read
 * elsewhere, the Transpose stays. */
Test(fuse_attention, head_merge_stays_unless_asked_and_alone)
{
    static const int64_t merge[4] = {0, 2, 1, 3}, other[4] = {0, 1, 3, 2};
    transforms_attention_options o = {.absorb_output = true};
    const struct {
        const int64_t *perm;
        bool extra, ask;
    } cases[3] = {{merge, false, false}, {other, false, true}, {merge, true, true}};
    for (int c = 0; c < 3; c++) {
        graph_value *x[3], *merged;
        graph *g = split_attend_merge(x, &merged, cases[c].perm, cases[c].extra);
        int changes = -1;
        OK(transforms_fuse_attention(g, cases[c].ask ? &o : NULL, &changes));
        cr_assert_eq(changes, 6, "case %d: the attention fuses, the merge stays", c);
        cr_assert_eq(tt_count_op(g, "Transpose"), 1, "case %d", c);
        graph_node *n = tt_find_node(g, "context");
        cr_assert_str_eq(graph_node_attr_string(n, "out_layout", "BHSD"), "BHSD", "case %d", c);
        cr_assert_eq(merged->producer, tt_find_node(g, "merge"), "case %d", c);
        tt_assert_valid(g);
        graph_free(g);
    }
}

/* A head Transpose read elsewhere too: all three stay (and the rest fuses). */
Test(fuse_attention, head_transpose_read_elsewhere_stays)
{
    graph *g = tt_graph();
    graph_value *x[3], *h[3];
    split_heads(g, x, h);
    graph_value *p =
        tt_unary(g, "softmax", "Softmax", tt_binary(g, "scores", "MatMul", h[0], h[1]));
    tt_output(g, tt_binary(g, "context", "MatMul", p, h[2]));
    tt_output(g, h[2]); /* the V heads are also a result */
    tt_finish(g);
    cr_assert_eq(run_fusion(g), 2);
    cr_assert_eq(tt_count_op(g, "Transpose"), 3);
    cr_assert_str_eq(graph_node_attr_string(tt_find_node(g, "context"), "qkv_layout", "BHSD"),
                     "BHSD");
    tt_assert_valid(g);
    graph_free(g);
}

/* PyTorch's scaled_dot_product_attention export: Q and K^T each multiplied
 * by the square root of the scale; the mask [1, 2, 4, 4] first in the Add;
 * opset 13's Softmax default axis. */
Test(fuse_attention, scales_on_q_and_k_multiply)
{
    attn a = start();
    graph *g = a.g;
    const int64_t md[4] = {1, 2, 4, 4};
    float mask[32];
    fill(mask, 32, 9);
    float root = 0.6f;
    graph_value *qs = tt_binary(g, "q_scaled", "Mul", a.q, scalar(g, "root_q", root));
    graph_value *ks = tt_binary(g, "k_scaled", "Mul", scalar(g, "root_k", root), a.kt);
    graph_value *s = tt_binary(g, "scores", "MatMul", qs, ks);
    graph_value *m = tt_binary(g, "add_mask", "Add", tt_const_f32(g, "mask", 4, md, mask), s);
    graph_value *p = tt_unary(g, "softmax", "Softmax", m);
    graph_value *y = tt_binary(g, "context", "MatMul", p, a.v);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_fusion(g), 5);
    graph_node *n = tt_find_node(g, "context");
    cr_assert_str_eq(n->op_type, "ScaledDotProductAttention");
    cr_assert_eq(n->inputs[0], a.q, "the scaling of Q is absorbed");
    cr_assert_eq(n->inputs[1], a.kt, "the scaling of K^T is absorbed");
    cr_assert_float_eq(graph_node_attr_float(n, "scale", 0.0f), root * root, 1e-6f);
    cr_assert(tt_has_fused(n, "q_scaled") && tt_has_fused(n, "k_scaled"));
    tt_assert_valid(g);
    assert_same_results(before, g);
    graph_free(before);
    graph_free(g);
}

/* Scale on Q only, no mask: three inputs. */
Test(fuse_attention, without_mask_three_inputs)
{
    attn a = start();
    graph *g = a.g;
    graph_value *qs = tt_binary(g, "q_scaled", "Div", a.q, scalar(g, "d", 2.0f));
    graph_value *s = tt_binary(g, "scores", "MatMul", qs, a.kt);
    graph_value *p = tt_unary(g, "softmax", "Softmax", s);
    graph_value *y = tt_binary(g, "context", "MatMul", p, a.v);
    tt_output(g, y);
    tt_finish(g);
    graph *before = clone_of(g);
    cr_assert_eq(run_fusion(g), 3);
    graph_node *n = tt_find_node(g, "context");
    cr_assert_eq(n->n_inputs, 3);
    cr_assert_float_eq(graph_node_attr_float(n, "scale", 0.0f), 0.5f, 0.0f);
    tt_assert_valid(g);
    assert_same_results(before, g);
    graph_free(before);
    graph_free(g);
}

/* Builds MatMul -> Mul (scale) -> Add (mask of mask_dims) -> Softmax (axis)
 * -> MatMul and returns the graph, with the probabilities also a result
 * when probs_out, and the scores also read by a Relu (a result) when
 * scores_read. */
typedef struct variant {
    int mask_rank;
    int64_t mask_dims[5];
    int scale_rank;
    int64_t scale_dims[4];
    int64_t axis;
    bool probs_out, scores_read;
} variant;

static void assert_not_fused(const variant *vr)
{
    attn a = start();
    graph *g = a.g;
    float mask[64] = {0}, scale[8] = {0.3f, 0.3f, 0.3f, 0.3f, 0.3f, 0.3f, 0.3f, 0.3f};
    graph_value *s = tt_binary(g, "scores", "MatMul", a.q, a.kt);
    graph_value *d = tt_binary(g, "scale", "Mul", s,
                               tt_const_f32(g, "c", vr->scale_rank, vr->scale_dims, scale));
    graph_value *m = tt_binary(g, "add_mask", "Add", d,
                               tt_const_f32(g, "mask", vr->mask_rank, vr->mask_dims, mask));
    graph_value *p = tt_unary(g, "softmax", "Softmax", m);
    tt_attr_int(g, "softmax", "axis", vr->axis);
    graph_value *y = tt_binary(g, "context", "MatMul", p, a.v);
    tt_output(g, y);
    if (vr->probs_out)
        tt_output(g, p);
    if (vr->scores_read)
        tt_output(g, tt_unary(g, "relu", "Relu", s));
    tt_finish(g);
    int nodes = g->n_nodes;
    cr_assert_eq(run_fusion(g), 0);
    cr_assert_eq(g->n_nodes, nodes);
    cr_assert_eq(tt_count_op(g, "Softmax"), 1);
    cr_assert_str_eq(tt_find_node(g, "context")->op_type, "MatMul");
    tt_assert_valid(g);
    graph_free(g);
}

static const variant fits = {
    .mask_rank = 4, .mask_dims = {1, 1, 1, 4}, .scale_rank = 0, .axis = -1};

Test(fuse_attention, the_variant_base_fuses)
{
    /* The base of the negative cases below does fuse: each differs from it
     * in one thing. */
    attn a = start();
    graph *g = a.g;
    float mask[4] = {0}, c = 0.3f;
    graph_value *s = tt_binary(g, "scores", "MatMul", a.q, a.kt);
    graph_value *d =
        tt_binary(g, "scale", "Mul", s, tt_const_f32(g, "c", fits.scale_rank, fits.scale_dims, &c));
    graph_value *m = tt_binary(g, "add_mask", "Add", d,
                               tt_const_f32(g, "mask", fits.mask_rank, fits.mask_dims, mask));
    graph_value *p = tt_unary(g, "softmax", "Softmax", m);
    tt_attr_int(g, "softmax", "axis", fits.axis);
    tt_output(g, tt_binary(g, "context", "MatMul", p, a.v));
    tt_finish(g);
    cr_assert_eq(run_fusion(g), 4);
    graph_free(g);
}

Test(fuse_attention, probabilities_returned_are_not_fused)
{
    variant v = fits;
    v.probs_out = true;
    assert_not_fused(&v);
}

Test(fuse_attention, scores_read_elsewhere_are_not_fused)
{
    variant v = fits;
    v.scores_read = true;
    assert_not_fused(&v);
}

Test(fuse_attention, mask_growing_the_scores_is_not_fused)
{
    variant v = fits;
    v.mask_dims[0] = 2; /* [2, 1, 1, 4] would make the scores [2, 2, 4, 4] */
    assert_not_fused(&v);
}

Test(fuse_attention, mask_of_higher_rank_is_not_fused)
{
    variant v = fits;
    v.mask_rank = 5; /* [1, 1, 1, 1, 4] would make the scores rank 5 */
    v.mask_dims[0] = 1, v.mask_dims[1] = 1, v.mask_dims[2] = 1, v.mask_dims[3] = 1;
    v.mask_dims[4] = 4;
    assert_not_fused(&v);
}

Test(fuse_attention, per_head_scale_is_not_fused)
{
    variant v = fits;
    v.scale_rank = 4;
    v.scale_dims[0] = 1, v.scale_dims[1] = 2, v.scale_dims[2] = 1, v.scale_dims[3] = 1;
    assert_not_fused(&v);
}

Test(fuse_attention, softmax_over_another_axis_is_not_fused)
{
    variant v = fits;
    v.axis = 2;
    assert_not_fused(&v);
}

/* V of other batch dims (broadcast by MatMul) is left to the MatMuls. */
Test(fuse_attention, batch_dims_that_differ_are_not_fused)
{
    attn a = start();
    graph *g = a.g;
    const int64_t vd[4] = {1, 1, 4, 8};
    graph_value *v1 = tt_input(g, "v1", RN_F32, 4, vd);
    graph_value *s = tt_binary(g, "scores", "MatMul", a.q, a.kt);
    graph_value *p = tt_unary(g, "softmax", "Softmax", s);
    tt_output(g, tt_binary(g, "context", "MatMul", p, v1));
    tt_finish(g);
    cr_assert_eq(run_fusion(g), 0);
    cr_assert_eq(tt_count_op(g, "Softmax"), 1);
    graph_free(g);
}

/* The fused op built by hand with shapes that do not chain, or qkv_layout
 * BSHD on rank-3 inputs: shape inference refuses it naming the node. */
static rn_status infer_sdpa(const int64_t *kt_dims, int rank, const char *layout)
{
    graph *g = tt_graph();
    graph_value *ins[3] = {tt_input(g, "q", RN_F32, rank, qkv_dims),
                           tt_input(g, "kt", RN_F32, rank, kt_dims),
                           tt_input(g, "v", RN_F32, rank, qkv_dims)};
    graph_value *y;
    graph_node *n;
    OK(graph_add_value(g, "y", &y));
    OK(graph_add_node(g, "attn", "runnel", "ScaledDotProductAttention", 1, 3, ins, 1, &y, &n));
    graph_attr a = {.name = strdup("qkv_layout"), .type = GRAPH_ATTR_STRING, .s = strdup(layout)};
    OK(graph_node_add_attr(n, &a));
    tt_output(g, y);
    OK(graph_sort(g));
    rn_status st = graph_infer_shapes(g);
    graph_free(g);
    return st;
}

Test(scaled_dot_product_attention, shapes_that_do_not_chain_are_refused)
{
    const int64_t good[4] = {1, 2, 8, 4}, bad_d[4] = {1, 2, 7, 4};
    cr_assert_eq(infer_sdpa(good, 4, "BHSD"), RN_OK, "%s", rn_last_error());
    cr_assert_neq(infer_sdpa(bad_d, 4, "BHSD"), RN_OK, "D 8 against 7 was accepted");
    cr_assert(strstr(rn_last_error(), "attn") != NULL, "%s", rn_last_error());
    const int64_t kt3[3] = {2, 8, 4};
    cr_assert_neq(infer_sdpa(kt3, 3, "BSHD"), RN_OK, "BSHD on rank 3 was accepted");
    cr_assert(strstr(rn_last_error(), "qkv_layout BSHD") != NULL, "%s", rn_last_error());
}

/* out_layout BSHD: the output [B, S, H, Dv] of the heads [B, H, S, Dv];
 * on a rank-3 output the node is refused, naming the attribute. */
Test(scaled_dot_product_attention, merged_output_is_bshd)
{
    const int64_t q[4] = {1, 2, 4, 8}, kt[4] = {1, 2, 8, 6}, v[4] = {1, 2, 6, 5};
    for (int rank = 4; rank >= 3; rank--) {
        graph *g = tt_graph();
        graph_value *ins[3] = {tt_input(g, "q", RN_F32, rank, q + 4 - rank),
                               tt_input(g, "kt", RN_F32, rank, kt + 4 - rank),
                               tt_input(g, "v", RN_F32, rank, v + 4 - rank)};
        graph_value *y;
        graph_node *n;
        OK(graph_add_value(g, "y", &y));
        OK(graph_add_node(g, "attn", "runnel", "ScaledDotProductAttention", 1, 3, ins, 1, &y, &n));
        graph_attr a = {
            .name = strdup("out_layout"), .type = GRAPH_ATTR_STRING, .s = strdup("BSHD")};
        OK(graph_node_add_attr(n, &a));
        tt_output(g, y);
        OK(graph_sort(g));
        rn_status st = graph_infer_shapes(g);
        if (rank == 4) {
            cr_assert_eq(st, RN_OK, "%s", rn_last_error());
            const int64_t want[4] = {1, 4, 2, 5};
            cr_assert_eq(y->shape.rank, 4);
            for (int d = 0; d < 4; d++)
                cr_assert_eq(y->shape.dims[d], want[d], "dim %d: %lld", d,
                             (long long)y->shape.dims[d]);
        } else {
            cr_assert_neq(st, RN_OK, "out_layout BSHD on rank 3 was accepted");
            cr_assert(strstr(rn_last_error(), "out_layout BSHD") != NULL, "%s", rn_last_error());
        }
        graph_free(g);
    }
}
