/* The oneDNN version layer (plugins/cpu/dnnl_version.h) against the oneDNN
 * the build links: Debian's 2.6 by default, PyPI's 3.2 with
 * --config=onednn3. Descriptors made as values must describe what oneDNN
 * itself makes of them: sizes, equality, blocked layouts oneDNN's
 * primitives pick (nChw8c, OIhw8i8o) carried through a value and back
 * into oneDNN (a reorder between them), sub-memories. */
#include <criterion/criterion.h>
#include <dnnl.h>
#include <string.h>

#include "plugins/cpu/dnnl_version.h"

Test(dnnl_version, links_the_version_its_headers_name)
{
    const dnnl_version_t *v = dnnl_version();
    cr_assert_eq(v->major, DNNL_VERSION_MAJOR, "library %d.%d.%d, headers %d", v->major, v->minor,
                 v->patch, DNNL_VERSION_MAJOR);
    cr_log_info("oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch, v->hash);
}

Test(dnnl_version, plain_by_strides_equals_by_tag)
{
    dnnl_dims_t dims = {2, 3, 5, 7}, strides = {105, 35, 7, 1};
    cpu_md a, b;
    cr_assert_eq(cpu_md_init_by_strides(&a, 4, dims, dnnl_f32, strides), dnnl_success);
    cr_assert_eq(cpu_md_init_by_tag(&b, 4, dims, dnnl_f32, dnnl_abcd), dnnl_success);
    cr_assert_eq(a.ndims, 4);
    cr_assert_eq(a.format_kind, dnnl_blocked);
    cr_assert_eq(a.format_desc.blocking.strides[1], 35);
    cr_assert(cpu_md_equal(&a, &b));
    cr_assert_eq(cpu_md_get_size(&a), 2u * 3 * 5 * 7 * sizeof(float));
    cpu_md c;
    cr_assert_eq(cpu_md_init_by_tag(&c, 4, dims, dnnl_f32, dnnl_acdb), dnnl_success);
    cr_assert_not(cpu_md_equal(&a, &c), "nchw and nhwc compared equal");
}

/* nChw8c pads C = 3 up to 8: the value keeps the padded dims and blocks. */
Test(dnnl_version, blocked_layout_keeps_blocks_and_padding)
{
    dnnl_dims_t dims = {2, 3, 5, 7};
    cpu_md m;
    cr_assert_eq(cpu_md_init_by_tag(&m, 4, dims, dnnl_f32, dnnl_aBcd8b), dnnl_success);
    cr_assert_eq(m.padded_dims[1], 8);
    cr_assert_eq(m.format_desc.blocking.inner_nblks, 1);
    cr_assert_eq(m.format_desc.blocking.inner_blks[0], 8);
    cr_assert_eq(m.format_desc.blocking.inner_idxs[0], 1);
    cr_assert_eq(cpu_md_get_size(&m), 2u * 8 * 5 * 7 * sizeof(float));
    cpu_md again;
    cr_assert_eq(cpu_md_init_by_tag(&again, 4, dims, dnnl_f32, dnnl_aBcd8b), dnnl_success);
    cr_assert(cpu_md_equal(&m, &again));
}

/* The layouts a convolution picks with format any come back as values
 * that oneDNN accepts again: a reorder from the plain source into the
 * primitive's source layout and back gives the data back. */
Test(dnnl_version, primitive_layouts_round_trip_through_values)
{
    dnnl_engine_t eng;
    cr_assert_eq(dnnl_engine_create(&eng, dnnl_cpu, 0), dnnl_success);
    dnnl_dims_t dims = {1, 16, 6, 6};
    cpu_md plain, blocked;
    cr_assert_eq(cpu_md_init_by_tag(&plain, 4, dims, dnnl_f32, dnnl_abcd), dnnl_success);
    cr_assert_eq(cpu_md_init_by_tag(&blocked, 4, dims, dnnl_f32, dnnl_aBcd8b), dnnl_success);
    size_t n = 16 * 6 * 6;
    float *x = malloc(n * sizeof *x), *y = malloc(cpu_md_get_size(&blocked)),
          *z = malloc(n * sizeof *z);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)i - 100.0f;
    dnnl_stream_t stream;
    cr_assert_eq(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags), dnnl_success);
    const cpu_md *from[2] = {&plain, &blocked}, *to[2] = {&blocked, &plain};
    void *src[2] = {x, y}, *dst[2] = {y, z};
    for (int k = 0; k < 2; k++) {
        dnnl_primitive_desc_t pd;
        cr_assert_eq(cpu_reorder_pd(&pd, from[k], eng, to[k], NULL), dnnl_success);
        cpu_md got;
        cr_assert(cpu_pd_md(pd, dnnl_query_dst_md, 0, &got));
        cr_assert(cpu_md_equal(&got, to[k]), "the reorder's destination is not the one asked");
        dnnl_primitive_t prim;
        cr_assert_eq(dnnl_primitive_create(&prim, pd), dnnl_success);
        dnnl_memory_t m[2];
        cr_assert_eq(cpu_memory_create(&m[0], from[k], eng, src[k]), dnnl_success);
        cr_assert_eq(cpu_memory_create(&m[1], to[k], eng, dst[k]), dnnl_success);
        dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}};
        cr_assert_eq(dnnl_primitive_execute(prim, stream, 2, a), dnnl_success);
        cr_assert_eq(dnnl_stream_wait(stream), dnnl_success);
        dnnl_memory_destroy(m[0]);
        dnnl_memory_destroy(m[1]);
        dnnl_primitive_destroy(prim);
        dnnl_primitive_desc_destroy(pd);
    }
    /* nChw8c: channel c of pixel p at (c / 8) * 8 * 36 + p * 8 + c % 8. */
    cr_assert_eq(y[1 * 8 * 36 + 2 * 8 + 3], x[(8 + 3) * 36 + 2]);
    cr_assert_arr_eq(x, z, n * sizeof *x);
    free(x);
    free(y);
    free(z);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(eng);
}

Test(dnnl_version, submemory_offset_and_permuted_axes)
{
    dnnl_dims_t dims = {1, 24, 4, 4}, part = {1, 8, 4, 4}, offsets = {0, 16, 0, 0};
    cpu_md whole, sub;
    cr_assert_eq(cpu_md_init_by_tag(&whole, 4, dims, dnnl_f32, dnnl_aBcd8b), dnnl_success);
    cr_assert_eq(cpu_md_init_submemory(&sub, &whole, part, offsets), dnnl_success);
    cr_assert_eq(sub.offset0, 16 * 16, "the third block of 8 channels over 4x4 pixels");
    cr_assert_eq(sub.dims[1], 8);
    dnnl_dims_t m = {2, 3};
    cpu_md a, t;
    cr_assert_eq(cpu_md_init_by_tag(&a, 2, m, dnnl_f32, dnnl_ab), dnnl_success);
    int perm[2] = {1, 0};
    cr_assert_eq(cpu_md_permute_axes(&t, &a, perm), dnnl_success);
    cr_assert_eq(t.dims[0], 3);
    cr_assert_eq(t.format_desc.blocking.strides[0], 1);
    cr_assert_eq(t.format_desc.blocking.strides[1], 3);
}
