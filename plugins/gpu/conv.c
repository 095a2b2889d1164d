/* Conv and FusedConv (2-D, grouped, asymmetric pads, dilations): runnel's
 * im2col kernel (1x1 stride-1 unpadded convolutions read the input as it
 * is) and CLBlast's GEMM per image, strided-batched over the groups, then
 * bias, residual and activation in one pass. */
#include <clblast_c.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"
#include "plugins/gpu/window.h"

typedef struct conv_state {
    gpu_node g; /* first: gpu_state_free frees it */
    int N, C, H, W, M, OH, OW, KH, KW, group;
    gpu_window win;
    bool direct; /* 1x1, stride 1, no pads: the input is the column matrix */
    int act;
    float a0, a1;
    bool fused;
} conv_state;

static bool conv_supports(const rn_node *node, const char **why)
{
    bool fused = strcmp(rn_node_op_type(node), "FusedConv") == 0;
    if (!gpu_static_f32(node, 0, why))
        return false;
    rn_partial_shape x = rn_node_input_shape(node, 0);
    if (x.rank != 4) {
        *why = "GPU: 2-D convolutions only";
        return false;
    }
    int act;
    float a0, a1;
    if (fused && !gpu_fused_activation(node, &act, &a0, &a1, why))
        return false;
    gpu_window w;
    return gpu_window_parse(node, 2, why, &w);
}

static rn_status conv_prepare(const rn_node *node, void **out)
{
    conv_state *s;
    static const char *const kernels[] = {"im2col", "bias_act", NULL};
    rn_status st = gpu_state_new(sizeof *s, node, kernels, (void **)&s);
    if (st != RN_OK)
        return st;
    rn_partial_shape x = rn_node_input_shape(node, 0), w = rn_node_input_shape(node, 1),
                     y = rn_node_output_shape(node, 0);
    const char *why = NULL;
    s->N = (int)x.dims[0], s->C = (int)x.dims[1], s->H = (int)x.dims[2], s->W = (int)x.dims[3];
    s->M = (int)w.dims[0], s->KH = (int)w.dims[2], s->KW = (int)w.dims[3];
    s->OH = (int)y.dims[2], s->OW = (int)y.dims[3];
    s->group = (int)rn_node_attr_int_or_default(node, "group");
    gpu_window_parse(node, 2, &why, &s->win);
    gpu_window_resolve(&s->win, s->H, s->W, s->OH, s->OW, s->KH, s->KW);
    s->fused = strcmp(rn_node_op_type(node), "FusedConv") == 0;
    if (s->fused)
        gpu_fused_activation(node, &s->act, &s->a0, &s->a1, &why);
    const gpu_window *wn = &s->win;
    s->direct = s->KH == 1 && s->KW == 1 && wn->stride[0] == 1 && wn->stride[1] == 1 &&
                wn->pads[0] == 0 && wn->pads[1] == 0 && wn->pads[2] == 0 && wn->pads[3] == 0;
    *out = s;
    return RN_OK;
}

static size_t conv_scratch(const void *state)
{
    const conv_state *s = state;
    return s->direct ? 0 : (size_t)s->C * s->KH * s->KW * s->OH * s->OW * sizeof(float);
}

static rn_status clblast_fail(const gpu_node *g, const char *what, CLBlastStatusCode c)
{
    return rn_set_error(RN_DEVICE_ERROR, "GPU: node '%s': CLBlast %s failed (status %d)", g->name,
                        what, (int)c);
}

static rn_status conv_run(rn_kernel_args *args)
{
    conv_state *s = args->state;
    cl_command_queue q = gpu_queue(args);
    gpu_mem x = gpu_input(&s->g, args, 0), w = gpu_input(&s->g, args, 1),
            b = gpu_input(&s->g, args, 2), r = gpu_input(&s->g, args, 3), y = gpu_output(args, 0),
            col = gpu_scratch(args);
    const gpu_window *wn = &s->win;
    size_t ohw = (size_t)s->OH * s->OW, mg = (size_t)(s->M / s->group);
    size_t k = (size_t)(s->C / s->group) * s->KH * s->KW;
    for (int n = 0; n < s->N; n++) {
        gpu_mem xi = {x.mem, x.off + (size_t)n * s->C * s->H * s->W};
        if (s->direct) {
            col = xi;
        } else {
            int xoff = (int)xi.off, coff = (int)col.off;
            gpu_arg a[] = {
                GPU_ARG(xi.mem),         GPU_ARG(xoff),          GPU_ARG(col.mem),
                GPU_ARG(coff),           GPU_ARG(s->H),          GPU_ARG(s->W),
                GPU_ARG(s->KH),          GPU_ARG(s->KW),         GPU_ARG(s->OH),
                GPU_ARG(s->OW),          GPU_ARG(wn->stride[0]), GPU_ARG(wn->stride[1]),
                GPU_ARG(wn->pads[0]),    GPU_ARG(wn->pads[1]),   GPU_ARG(wn->dilation[0]),
                GPU_ARG(wn->dilation[1])};
            rn_status st = gpu_launch(&s->g, args, 0, a, (int)(sizeof a / sizeof a[0]),
                                      (size_t)s->C * s->KH * s->KW * ohw);
            if (st != RN_OK)
                return st;
        }
        size_t yoff = y.off + (size_t)n * s->M * ohw;
        CLBlastStatusCode c;
        cl_event begin = gpu_span_begin(args), end = NULL;
        if (s->group == 1)
            c = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, mg, ohw,
                             k, 1.0f, w.mem, w.off, k, col.mem, col.off, ohw, 0.0f, y.mem, yoff,
                             ohw, &q, &end);
        else
            c = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                                           CLBlastTransposeNo, mg, ohw, k, 1.0f, w.mem, w.off, k,
                                           mg * k, col.mem, col.off, ohw, k * ohw, 0.0f, y.mem,
                                           yoff, ohw, mg * ohw, (size_t)s->group, &q, &end);
        gpu_span_end(&s->g, args, begin, end);
        if (c != CLBlastSuccess)
            return clblast_fail(&s->g, "GEMM", c);
    }
    return gpu_bias_act(&s->g, args, 1, y, b, r, s->M, (int)ohw, (int)((size_t)s->N * s->M * ohw),
                        s->act, s->a0, s->a1);
}

#define CONV_KERNEL(name, dom, op)                                                                 \
    const rn_kernel name = {                                                                       \
        .domain = dom,                                                                             \
        .op_type = op,                                                                             \
        .impl_type = "clblast",                                                                    \
        .supports = conv_supports,                                                                 \
        .prepare = conv_prepare,                                                                   \
        .run = conv_run,                                                                           \
        .release = gpu_state_free,                                                                 \
        .input_layout = gpu_input_layout,                                                          \
        .output_layout = gpu_output_layout,                                                        \
        .scratch_bytes = conv_scratch,                                                             \
    }

CONV_KERNEL(gpu_kernel_conv, "", "Conv");
CONV_KERNEL(gpu_kernel_fused_conv, "runnel", "FusedConv");
