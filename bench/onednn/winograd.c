/* oneDNN 2.x's f32 Winograd convolution (jit_wino_4x3, jit_fp32_wino_2x3:
 * AVX-512 only) against the direct one it picks otherwise (brgconv), on
 * VGG's and ResNet's 3x3 stride-1 shapes, bias + ReLU, format "any" each;
 * the minimum of 30 runs, at OMP_NUM_THREADS threads. Prints the CPU, the
 * ISA oneDNN dispatches to, each time and wino / direct.
 *   bench/onednn/run --winograd            (one and two threads)
 *   winograd [IC OC HW]                    (one shape) */
#define _POSIX_C_SOURCE 200809L
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* The minimum time of one convolution, or a negative number when oneDNN
 * has no implementation; *impl its name. */
static double time_conv(dnnl_engine_t eng, dnnl_stream_t st, int ic, int oc, int hw,
                        dnnl_alg_kind_t alg, const char **impl)
{
    dnnl_dims_t src = {1, ic, hw, hw}, wei = {oc, ic, 3, 3}, bia = {oc}, dst = {1, oc, hw, hw};
    dnnl_dims_t strides = {1, 1}, pad = {1, 1};
    dnnl_memory_desc_t s_md, w_md, b_md, d_md;
    dnnl_memory_desc_init_by_tag(&s_md, 4, src, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&w_md, 4, wei, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&b_md, 1, bia, dnnl_f32, dnnl_x);
    dnnl_memory_desc_init_by_tag(&d_md, 4, dst, dnnl_f32, dnnl_format_tag_any);
    dnnl_convolution_desc_t cd;
    if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &s_md, &w_md, &b_md,
                                           &d_md, strides, pad, pad) != dnnl_success)
        return -1.0;
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    dnnl_primitive_attr_create(&attr);
    dnnl_post_ops_create(&po);
    dnnl_post_ops_append_eltwise(po, 1.f, dnnl_eltwise_relu, 0.f, 0.f);
    dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_primitive_desc_t pd;
    dnnl_status_t s = dnnl_primitive_desc_create(&pd, &cd, attr, eng, NULL);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return -1.0;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, impl);
    static const dnnl_query_t what[5] = {dnnl_query_src_md, dnnl_query_weights_md,
                                         dnnl_query_weights_md, dnnl_query_dst_md,
                                         dnnl_query_scratchpad_md};
    static const int index[5] = {0, 0, 1, 0, 0};
    static const int args[5] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_BIAS, DNNL_ARG_DST,
                                DNNL_ARG_SCRATCHPAD};
    dnnl_exec_arg_t ea[5];
    for (int i = 0; i < 5; i++) {
        const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what[i], index[i]);
        dnnl_memory_create(&ea[i].memory, md, eng, DNNL_MEMORY_ALLOCATE);
        ea[i].arg = args[i];
        void *h = NULL;
        dnnl_memory_get_data_handle(ea[i].memory, &h);
        size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
        for (size_t j = 0; h != NULL && i < 4 && j < n; j++)
            ((float *)h)[j] = (float)((j * 7919u) % 101u) / 101.f - 0.5f;
    }
    dnnl_primitive_t p;
    dnnl_primitive_create(&p, pd);
    double best = 1e30;
    for (int it = 0; it < 30; it++) {
        double t0 = now_ms();
        dnnl_primitive_execute(p, st, 5, ea);
        dnnl_stream_wait(st);
        double t = now_ms() - t0;
        if (t < best)
            best = t;
    }
    dnnl_primitive_destroy(p);
    for (int i = 0; i < 5; i++)
        dnnl_memory_destroy(ea[i].memory);
    dnnl_primitive_desc_destroy(pd);
    return best;
}

static void cpu_model(char *buf, size_t size)
{
    snprintf(buf, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':') != NULL) {
            snprintf(buf, size, "%s", strchr(line, ':') + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    if (f != NULL)
        fclose(f);
}

int main(int argc, char **argv)
{
    static const int shapes[][3] = {{64, 64, 224},  {128, 128, 112}, {256, 256, 56},
                                    {512, 512, 28}, {512, 512, 14},  {64, 64, 56},
                                    {128, 128, 28}, {256, 256, 14},  {512, 512, 7}};
    int custom[1][3];
    const int(*list)[3] = shapes;
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    if (argc == 4) {
        for (int i = 0; i < 3; i++)
            custom[0][i] = atoi(argv[1 + i]);
        list = custom;
        n = 1;
    }
    dnnl_engine_t eng;
    dnnl_stream_t st;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&st, eng, dnnl_stream_default_flags) != dnnl_success)
        return 1;
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    const dnnl_version_t *v = dnnl_version();
    const char *threads = getenv("OMP_NUM_THREADS");
    printf("# %s, oneDNN %d.%d.%d, ISA id 0x%x, %s thread(s); min of 30 runs, ms\n", cpu, v->major,
           v->minor, v->patch, (unsigned)dnnl_get_effective_cpu_isa(),
           threads != NULL ? threads : "all");
    for (int i = 0; i < n; i++) {
        const char *di = "", *wi = "";
        double d =
            time_conv(eng, st, list[i][0], list[i][1], list[i][2], dnnl_convolution_direct, &di);
        double w =
            time_conv(eng, st, list[i][0], list[i][1], list[i][2], dnnl_convolution_winograd, &wi);
        if (w < 0)
            printf("%4d->%4d %3dx%-3d direct %8.3f (%s) | winograd: none here\n", list[i][0],
                   list[i][1], list[i][2], list[i][2], d, di);
        else
            printf("%4d->%4d %3dx%-3d direct %8.3f (%s) | winograd %8.3f (%s) | wino/direct %.2f\n",
                   list[i][0], list[i][1], list[i][2], list[i][2], d, di, w, wi, w / d);
    }
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    return 0;
}
