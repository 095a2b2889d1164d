/* Private helpers of the REF kernels that build values of their own: the
 * sequence, optional, control-flow and string kernels. They work on owned
 * graph_tensors (malloc'ed data; strings duplicated) and hand them to the
 * executor with args->move_output. */
#ifndef RUNNEL_PLUGINS_REF_KERNELS_VALUES_H
#define RUNNEL_PLUGINS_REF_KERNELS_VALUES_H

#include "plugins/api/kernel.h"

/* A kernel of the default domain that takes sequence and optional values. */
#define REF_VALUE_KERNEL(name, op, supports_fn, run_fn)                                            \
    const plugin_kernel name = {                                                                   \
        .domain = "",                                                                              \
        .op_type = op,                                                                             \
        .impl_type = "ref",                                                                        \
        .supports = supports_fn,                                                                   \
        .run = run_fn,                                                                             \
        .values = true,                                                                            \
    };

/* A supports() for kernels that take every node of their op. */
bool ref_supports_any(const graph_node *node, const char **why);

/* Input i must hold a value of `kind` (an absent optional input is refused
 * unless kind is that optional kind). */
rn_status ref_expect_kind(const plugin_kernel_args *args, int i, graph_kind kind);

/* Allocates t's data for its type and dims (zeroed; strings NULL) and sets
 * nbytes. */
rn_status ref_tensor_alloc(const graph_node *node, graph_tensor *t);

/* Copies `count` elements of `type` from src[src_off..] to dst[dst_off..];
 * strings are duplicated (into entries that must be NULL or owned). */
rn_status ref_copy_elements(const graph_node *node, rn_element_type type, void *dst, size_t dst_off,
                            const void *src, size_t src_off, size_t count);

/* Reads a position input (i32 or i64, one element). */
rn_status ref_read_position(const graph_node *node, const graph_tensor *t, int64_t *out);

/* Maps a position in [-n, n-1] (or [-n, n] when `end_ok`, for inserting)
 * to [0, n]; out of range is an error naming the node. */
rn_status ref_resolve_position(const graph_node *node, int64_t pos, size_t n, bool end_ok,
                               size_t *out);

/* Concatenates items[0..n) (n >= 1, dense tensors of one type) along
 * `axis` into an owned *out; with `new_axis` the items (all of one shape)
 * are stacked along a new axis at that position instead. Mismatched shapes
 * are an error naming the node. */
rn_status ref_concat(const graph_node *node, const graph_tensor *items, size_t n, int axis,
                     bool new_axis, graph_tensor *out);

/* The slice of x at `index` along `axis`, without that axis, into an owned
 * *out. */
rn_status ref_take(const graph_node *node, const graph_tensor *x, int axis, int64_t index,
                   graph_tensor *out);

/* Copies `value` (a view) and hands the copy to output `index`. */
rn_status ref_move_copy(plugin_kernel_args *args, int index, const graph_tensor *value);

#endif /* RUNNEL_PLUGINS_REF_KERNELS_VALUES_H */
