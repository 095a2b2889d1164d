/* Transpose as a oneDNN reorder: the input's descriptor with its axes
 * permuted describes the same bytes in the output's order, so a reorder
 * from it to the plain output is the transpose (and, when the producer
 * wrote a blocked or bf16 layout, the conversion back to plain f32 in the
 * same pass). The attention heads' [B, S, H, D] -> [B, H, S, D] of an
 * encoder are what it is for. */
#include <stdlib.h>

#include "plugins/cpu/cpu.h"

typedef struct transpose_state {
    cpu_prim p;
    cpu_md src, dst; /* src: the input as the producer writes it */
    cpu_md moved;    /* src with its axes in the output's order */
    cpu_layout src_l;
    const rn_layout *src_layout;
} transpose_state;

static void transpose_release(void *state)
{
    transpose_state *s = state;
    if (s == NULL)
        return;
    cpu_prim_release(&s->p);
    free(s);
}

/* perm[i]: the input axis that output axis i is (default: reversed). */
static bool transpose_perm(const rn_node *node, int rank, int *perm)
{
    const int64_t *p = NULL;
    int n = rn_node_attr_ints(node, "perm", &p);
    if (n < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return true;
    }
    if (n != rank)
        return false;
    bool seen[DNNL_MAX_NDIMS] = {false};
    for (int i = 0; i < rank; i++) {
        if (p[i] < 0 || p[i] >= rank || seen[p[i]])
            return false;
        seen[p[i]] = true;
        perm[i] = (int)p[i];
    }
    return true;
}

static bool transpose_supports(const rn_node *node, const char **why)
{
    rn_element_type t = rn_node_input_type(node, 0);
    if (t != RN_F32 && t != RN_I32 && t != RN_I8 && t != RN_U8) {
        *why = "f32, i32, i8 and u8 only";
        return false;
    }
    rn_partial_shape x = rn_node_input_shape(node, 0);
    int perm[DNNL_MAX_NDIMS];
    if (x.rank < 1 || x.rank > DNNL_MAX_NDIMS || !transpose_perm(node, x.rank, perm)) {
        *why = "rank 1 to 12 with a valid perm";
        return false;
    }
    if (!cpu_static_node(node, why))
        return false;
    for (int d = 0; d < x.rank; d++)
        if (x.dims[d] == 0) {
            /* oneDNN 2.6's reorder of a tensor with a zero dim divides by
             * zero (SIGFPE) when it runs. */
            *why = "an empty tensor";
            return false;
        }
    return true;
}

static rn_status transpose_pd(const rn_node *node, transpose_state *s, dnnl_primitive_desc_t *pd)
{
    dnnl_engine_t eng = NULL;
    dnnl_primitive_attr_t attr = NULL;
    rn_status st = cpu_engine(&eng);
    if (st != RN_OK || (st = cpu_attr(node, NULL, &attr)) != RN_OK)
        return st;
    /* Input axis perm[i] is output axis i: oneDNN's permutation maps each
     * input axis to its new index. */
    int rank = s->src.ndims, perm[DNNL_MAX_NDIMS], to[DNNL_MAX_NDIMS];
    transpose_perm(node, rank, perm);
    for (int i = 0; i < rank; i++)
        to[perm[i]] = i;
    int prev = cpu_team_begin(node);
    dnnl_status_t ds = cpu_md_permute_axes(&s->moved, &s->src, to);
    if (ds == dnnl_success)
        ds = cpu_reorder_pd(pd, &s->moved, eng, &s->dst, attr);
    cpu_team_end(prev);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success) {
        *pd = NULL;
        if (ds != dnnl_unimplemented)
            return cpu_error(node, "creating the reorder", ds);
    }
    return RN_OK;
}

static rn_status transpose_prepare(const rn_node *node, const rn_kernel_ctx *ctx, void **state)
{
    transpose_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return rn_set_error(RN_OUT_OF_MEMORY, "CPU: out of memory");
    rn_element_type t = rn_node_input_type(node, 0);
    rn_partial_shape x = rn_node_input_shape(node, 0), y = rn_node_output_shape(node, 0);
    dnnl_primitive_desc_t pd = NULL;
    rn_status st = cpu_plain_md(t, y.rank, y.dims, &s->dst);
    /* From the layout the producer writes, else from plain. */
    for (int native = 1; native >= 0 && st == RN_OK && pd == NULL; native--) {
        const rn_layout *l = native && ctx->n_input_layouts > 0 ? ctx->input_layouts[0] : NULL;
        if ((st = cpu_input_md(l, t, x.rank, x.dims, &s->src)) == RN_OK)
            st = transpose_pd(node, s, &pd);
    }
    if (st == RN_OK && pd == NULL)
        st = cpu_error(node, "creating the reorder", dnnl_unimplemented);
    if (st == RN_OK)
        st = cpu_prim_init(&s->p, node, pd);
    if (st != RN_OK) {
        transpose_release(s);
        return st;
    }
    cpu_layout_init(&s->src_l, &s->src, t, &s->src_layout);
    *state = s;
    return RN_OK;
}

static const rn_layout *transpose_input_layout(const void *state, int i)
{
    return i == 0 ? ((const transpose_state *)state)->src_layout : NULL;
}

static size_t transpose_scratch(const void *state)
{
    return ((const transpose_state *)state)->p.scratch;
}

static const char *transpose_impl(const void *state)
{
    return ((const transpose_state *)state)->p.impl;
}

static rn_status transpose_run(rn_kernel_args *args)
{
    const transpose_state *s = args->state;
    cpu_arg a[2] = {{DNNL_ARG_FROM, &s->moved, args->inputs[0].data},
                    {DNNL_ARG_TO, &s->dst, args->outputs[0].data}};
    return cpu_execute(&s->p, args, a, 2);
}

const rn_kernel cpu_kernel_transpose = {
    .domain = "",
    .op_type = "Transpose",
    .impl_type = "onednn",
    .supports = transpose_supports,
    .prepare_ctx = transpose_prepare,
    .run = transpose_run,
    .release = transpose_release,
    .input_layout = transpose_input_layout,
    .scratch_bytes = transpose_scratch,
    .impl_name = transpose_impl,
};
