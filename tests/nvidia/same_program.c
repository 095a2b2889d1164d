/* Shared by the NVIDIA tests: a bf16 program is its f16 program with bf16
 * values; the device's own YES/NO properties; the light models as read
 * (tests/nvidia/same_program.h). */
#include "tests/nvidia/same_program.h"

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "graph/onnx/onnx_reader.h"

/* bf16 lowers as f16 does, step for step (the same fusions, attention
 * choice, channels-last layouts, conversions at the edges and memory plan:
 * both types are two bytes), with bf16 where f16 has f16. */
void nv_test_assert_bf16_as_f16(const nv_program *h, const nv_program *b, const char *what)
{
    cr_assert_eq(h->compute, RN_F16);
    cr_assert_eq(b->compute, RN_BF16);
    cr_assert_eq(b->n_steps, h->n_steps, "%s", what);
    cr_assert_eq(b->n_values, h->n_values, "%s", what);
    for (int k = 0; k < h->n_steps; k++) {
        const nv_step *x = &h->steps[k], *y = &b->steps[k];
        cr_assert_eq(y->kind, x->kind, "%s step %d", what, k);
        cr_assert_eq(y->n_in, x->n_in, "%s step %d", what, k);
        for (int i = 0; i < x->n_in; i++)
            cr_assert_eq(y->in[i], x->in[i], "%s step %d input %d", what, k, i);
        cr_assert_eq(y->out, x->out, "%s step %d", what, k);
        cr_assert_eq(y->act, x->act, "%s step %d", what, k);
        cr_assert(y->m == x->m && y->n == x->n && y->k == x->k && y->batch == x->batch &&
                      y->gemm_beta == x->gemm_beta && y->bias_after == x->bias_after,
                  "%s step %d: the same GEMM", what, k);
        cr_assert(y->rows == x->rows && y->cols == x->cols && y->axis == x->axis &&
                      memcmp(y->perm, x->perm, sizeof x->perm) == 0,
                  "%s step %d", what, k);
        cr_assert(memcmp(&y->att, &x->att, offsetof(nvk_attention_args, scale) + sizeof(float)) ==
                          0 &&
                      y->att_out_bshd == x->att_out_bshd,
                  "%s step %d: the same attention", what, k);
    }
    for (int v = 0; v < h->n_values; v++) {
        const nv_value *x = &h->values[v], *y = &b->values[v];
        cr_assert_str_eq(y->name, x->name);
        cr_assert_eq(y->type, x->type == RN_F16 ? RN_BF16 : x->type, "%s: %s", what, x->name);
        cr_assert_eq(y->host_type, x->host_type, "%s: %s", what, x->name);
        cr_assert(y->rank == x->rank && memcmp(y->dims, x->dims, sizeof x->dims) == 0, "%s: %s",
                  what, x->name);
        cr_assert(y->nhwc == x->nhwc && y->storage == x->storage && y->offset == x->offset &&
                      y->root == x->root && y->nbytes == x->nbytes,
                  "%s: %s placed as in f16", what, x->name);
    }
    cr_assert_eq(b->arena_bytes, h->arena_bytes, "%s", what);
    cr_assert_eq(b->weights_bytes, h->weights_bytes, "%s", what);
    cr_assert_eq(b->pinned_bytes, h->pinned_bytes, "%s", what);
}

void nv_test_assert_own_bool(const char *key, size_t offset, const char *bad)
{
    nv_properties p;
    nv_properties_default(&p, 9);
    const bool *on = (const bool *)((const char *)&p + offset);
    cr_assert(!*on, "%s is off by default", key);
    char buf[32];
    cr_assert_eq(nv_properties_get(&p, key, buf, sizeof buf), RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(buf, "NO");
    rn_property yes[] = {{key, "YES"}};
    cr_assert_eq(nv_properties_apply(&p, yes, 1), RN_OK, "%s", rn_last_error());
    cr_assert(*on, "%s YES", key);
    cr_assert_eq(nv_properties_get(&p, key, buf, sizeof buf), RN_OK, "%s", rn_last_error());
    cr_assert_str_eq(buf, "YES");
    /* A bad value names the key and changes nothing, the good one before
     * it in the same call included. */
    rn_property wrong[] = {{"NVIDIA_ALLOW_TF32", "YES"}, {key, bad}};
    cr_assert_eq(nv_properties_apply(&p, wrong, 2), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), key) != NULL, "%s", rn_last_error());
    cr_assert(*on);
    cr_assert(!p.own.allow_tf32);
    rn_property no[] = {{key, "NO"}};
    cr_assert_eq(nv_properties_apply(&p, no, 1), RN_OK, "%s", rn_last_error());
    cr_assert(!*on, "%s NO", key);
}

graph *nv_test_light(const char *name)
{
    const char *roots[] = {".cache/onnx-1.22.0", "../.cache/onnx-1.22.0"};
    char path[512];
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/light/light_%s.onnx", roots[i], name);
        if (access(path, R_OK) == 0) {
            graph *g = NULL;
            rn_status st = onnx_read_file(path, &g);
            cr_assert_eq(st, RN_OK, "reading %s: %s", path, rn_last_error());
            return g;
        }
    }
    cr_skip_test("light_%s.onnx is missing: run scripts/setup", name);
    return NULL;
}
