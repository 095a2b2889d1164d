/* Attribute parsers that an op's schema (shape inference, graph/ops/<family>.c) and
 * the kernels that run the op both need: written once here, so that the
 * shape a schema infers and the geometry a kernel computes follow the same
 * reading of the attributes.
 *
 * - sliding windows (graph/ops/window.c): kernel_shape, strides, dilations,
 *   pads, auto_pad and ceil_mode of Conv, ConvTranspose, DeformConv, the
 *   quantized convolutions and the pools;
 * - Einsum's equation (graph/ops/einsum.c);
 * - the reduced axes of Reduce* (graph/ops/reduce_axes.c);
 * - smaller ones kept beside their op's schema: Shape's start / end,
 *   Transpose's perm and Slice's clamping (graph/ops/movement.c), Resize's
 *   axes (graph/ops/image.c).
 *
 * Every function reads the node's attributes only (and values the caller
 * hands in); errors are rn_set_error messages that name the node and the
 * attribute. Nothing here knows about devices.
 */
#ifndef RUNNEL_GRAPH_OPS_ATTR_PARSE_H
#define RUNNEL_GRAPH_OPS_ATTR_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/ops.h"

/* ---- sliding windows (graph/ops/window.c) ---- */

/* The window attributes of a node over n spatial dims: the public
 * rn_window and rn_auto_pad (runnel/kernel.h), which devices outside the
 * graph library read through rn_node_window. */
typedef rn_auto_pad graph_auto_pad;
#define GRAPH_AUTO_PAD_NOTSET     RN_AUTO_PAD_NOTSET
#define GRAPH_AUTO_PAD_VALID      RN_AUTO_PAD_VALID
#define GRAPH_AUTO_PAD_SAME_UPPER RN_AUTO_PAD_SAME_UPPER
#define GRAPH_AUTO_PAD_SAME_LOWER RN_AUTO_PAD_SAME_LOWER
typedef rn_window graph_window;

/* Reads the INTS attribute `name` of n entries, each >= min, into dst; an
 * absent or empty attribute (some exporters write empty lists) fills dst
 * with dflt. Another length or a smaller value is an RN_INVALID_ARG naming
 * the node and the attribute. */
rn_status graph_window_ints(const graph_node *node, const char *name, int n, int64_t dflt,
                            int64_t min, int64_t *dst);

/* Reads auto_pad, ceil_mode (0 or 1), strides, dilations, pads and
 * kernel_shape for n spatial dims (0 to RN_MAX_RANK - 2) into *w. w_kernel
 * (the weight's spatial dims, RN_DIM_DYNAMIC where unknown; NULL for pools)
 * stands in for an absent kernel_shape and must agree with a present one;
 * with kernel_required (pools) kernel_shape must be given. Errors name the
 * node and the attribute; *w is unspecified then. */
rn_status graph_window_read(const graph_node *node, int n, const int64_t *w_kernel,
                            bool kernel_required, graph_window *w);

/* The output size of spatial dim i (< w->n) for input size `in`, into *out
 * (RN_DIM_DYNAMIC while `in` or the kernel is unknown). SAME_* gives
 * ceil(in / stride); VALID and explicit pads give
 * floor((in + pads - dilated kernel) / stride) + 1, or with ceil_mode the
 * ceiling, dropping a last window that would start past the input and its
 * leading padding (as PyTorch and the ONNX reference do). A dilated kernel
 * larger than the padded input is an RN_SHAPE_MISMATCH naming the node. */
rn_status graph_window_out(const graph_node *node, const graph_window *w, int i, int64_t in,
                           int64_t *out);

/* The padding of spatial dim i (< w->n, kernel known) before and after an
 * input of size `in` that gives `out` windows: the explicit pads, none for
 * VALID, and for SAME_* what ONNX derives from the output size (the total
 * (out - 1) * stride + dilated kernel - in, never negative, split in half
 * with the odd unit at the end for SAME_UPPER, at the start for SAME_LOWER). */
void graph_window_pads(const graph_window *w, int i, int64_t in, int64_t out, int64_t *begin,
                       int64_t *end);

/* ---- Einsum's equation (graph/ops/einsum.c) ----
 * Terms of letters (a-z, A-Z) and at most one "..." per term, separated by
 * commas, with an optional "->" and output term; spaces are ignored. */

#define GRAPH_EINSUM_LABELS    52 /* 'a'..'z' are 0..25, 'A'..'Z' 26..51 */
#define GRAPH_EINSUM_ELLIPSIS  (-1)
#define GRAPH_EINSUM_MAX_TERMS 16 /* the most inputs an Einsum may have */

typedef struct graph_einsum_term {
    int n;                      /* entries in label[] */
    int label[RN_MAX_RANK + 1]; /* a label, or GRAPH_EINSUM_ELLIPSIS for "..." */
    bool has_ellipsis;
} graph_einsum_term;

typedef struct graph_einsum {
    const char *equation; /* the attribute's string (owned by the node) */
    int n_terms;          /* input terms: the node's number of inputs */
    graph_einsum_term in[GRAPH_EINSUM_MAX_TERMS];
    bool has_out;                   /* the equation writes "->" and an output term */
    graph_einsum_term out;          /* that term (empty when !has_out) */
    int count[GRAPH_EINSUM_LABELS]; /* occurrences of each label in the input terms */
} graph_einsum;

/* Parses the node's equation attribute into *e for a node with n_inputs
 * inputs. A missing attribute, more than GRAPH_EINSUM_MAX_TERMS inputs
 * (RN_UNSUPPORTED), a syntax error or a number of terms other than n_inputs
 * is an error naming the node and the equation. */
rn_status graph_einsum_parse(const graph_node *node, int n_inputs, graph_einsum *e);

/* The output's labels in order into labels[0..*n) (room for
 * GRAPH_EINSUM_LABELS + 1), GRAPH_EINSUM_ELLIPSIS standing for the broadcast
 * "..." dims: the written output term, whose labels must each occur in an
 * input and only once in the output; or, without "->", numpy's implicit
 * output: the "..." dims, then the labels that occur exactly once, in ASCII
 * order (upper case first). Errors name the node and the equation. */
rn_status graph_einsum_output(const graph_node *node, const graph_einsum *e, int *labels, int *n);

/* ---- reduced axes (graph/ops/reduce_axes.c) ---- */

/* Marks in reduced[0..rank) the axes a Reduce* node reduces of an input of
 * known rank. `axes` holds the n_axes values of the node's axes input (input
 * 1, from ReduceSum-13 and the others' opset 18); n_axes is -1 when the node
 * has none: then the `axes` attribute is read. No axes reduce every axis, or
 * none when noop_with_empty_axes is set. A negative axis counts from the
 * end, -1 also names a scalar's one axis, and a repeated axis is reduced
 * once (as numpy does). An axis out of range is an error naming the node. */
rn_status graph_reduce_axes(const graph_node *node, int rank, const int64_t *axes, int64_t n_axes,
                            bool *reduced);

/* ---- movement ops (graph/ops/movement.c) ---- */

/* Shape's start and end attributes for an input of rank `rank`: negative
 * values count from the end, then both are clamped to [0, rank]; the output
 * holds dims [start, end) (none when end <= start). */
void graph_shape_range(const graph_node *node, int rank, int64_t *start, int64_t *end);

/* Transpose's perm for an input of rank `rank` into perm[0..rank): the
 * attribute, or the reversed dims when it is absent. A perm of another
 * length or that is not a permutation of 0..rank-1 is an error naming the
 * node. */
rn_status graph_transpose_perm(const graph_node *node, int rank, int *perm);

/* Slice on one axis of extent dim: negative start / end count from the end,
 * then both are clamped ([0, dim] for positive steps, [-1, dim - 1] for
 * negative ones; step != 0). Writes the first index taken into *first and
 * returns how many elements are taken. */
int64_t graph_slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first);

/* ---- Resize (graph/ops/image.c) ---- */

/* The dims of a rank-`rank` input that Resize's scales / sizes apply to,
 * into axes[0..*n_axes): the axes attribute from opset 18 (negative axes
 * count from the end; an axis out of range or repeated is an error naming
 * the node), else every dim in order. */
rn_status graph_resize_axes(const graph_node *node, int rank, int *axes, int *n_axes);

#endif /* RUNNEL_GRAPH_OPS_ATTR_PARSE_H */
