/* REF Where: out = condition ? x : y with numpy broadcasting of all three.
 * It only moves elements, so one loop per element size serves every type
 * (strings are pointers, duplicated afterwards so that the output owns them). */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/broadcast.h"
#include "plugins/ref/kernels/elementwise.h"

#define DEF_SELECT(T)                                                                              \
    static void select_##T(const uint8_t *c, int64_t sc, const void *xv, int64_t sx,               \
                           const void *yv, int64_t sy, void *ov, int64_t n)                        \
    {                                                                                              \
        const T *x = xv, *y = yv;                                                                  \
        T *o = ov;                                                                                 \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = c[i * sc] ? x[i * sx] : y[i * sy];                                              \
    }
DEF_SELECT(uint8_t)
DEF_SELECT(uint16_t)
DEF_SELECT(uint32_t)
DEF_SELECT(uint64_t)

typedef void (*select_fn)(const uint8_t *c, int64_t sc, const void *x, int64_t sx, const void *y,
                          int64_t sy, void *o, int64_t n);

static select_fn select_for(rn_element_type t)
{
    switch (ref_element_size(t)) {
    case 1:
        return select_uint8_t;
    case 2:
        return select_uint16_t;
    case 4:
        return select_uint32_t;
    case 8:
        return select_uint64_t;
    default:
        return NULL;
    }
}

static rn_status dup_strings(const graph_node *node, graph_tensor *out)
{
    char **s = out->data;
    size_t n = graph_tensor_count(out);
    for (size_t i = 0; i < n; i++) {
        s[i] = strdup(s[i] != NULL ? s[i] : "");
        if (s[i] == NULL) {
            for (size_t j = i + 1; j < n; j++)
                s[j] = NULL; /* still borrowed: must not be freed with the output */
            return rn_set_error(RN_OUT_OF_MEMORY, "node '%s' (%s): out of memory", node->name,
                                node->op_type);
        }
    }
    return RN_OK;
}

static bool where_supports(const graph_node *node, const char **why)
{
    rn_element_type c = node->inputs[0] ? node->inputs[0]->type : RN_UNDEFINED;
    rn_element_type x = node->inputs[1] ? node->inputs[1]->type : RN_UNDEFINED;
    rn_element_type y = node->inputs[2] ? node->inputs[2]->type : RN_UNDEFINED;
    if (c != RN_BOOL) {
        *why = ref_why_type(0, c);
        return false;
    }
    if (select_for(x) == NULL) {
        *why = ref_why_type(1, x);
        return false;
    }
    if (y != x) {
        *why = ref_why_type(2, y);
        return false;
    }
    return true;
}

static rn_status where_run(plugin_kernel_args *args)
{
    const graph_node *node = args->node;
    rn_status st = ref_check_args(args, 3);
    if (st != RN_OK)
        return st;
    const graph_tensor *c = &args->inputs[0], *x = &args->inputs[1], *y = &args->inputs[2];
    graph_tensor *out = &args->outputs[0];
    select_fn fn = select_for(x->type);
    if (c->type != RN_BOOL || fn == NULL || y->type != x->type || out->type != x->type)
        return rn_set_error(RN_TYPE_MISMATCH,
                            "node '%s' (%s): types condition %s, x %s, y %s are not supported",
                            node->name, node->op_type, rn_element_type_name(c->type),
                            rn_element_type_name(x->type), rn_element_type_name(y->type));
    const graph_tensor *ops[3] = {c, x, y};
    ref_bcast it;
    if (!ref_bcast_init(&it, out->rank, out->dims, 3, ops))
        return ref_broadcast_error(node, 3, ops, out);
    size_t es = ref_element_size(x->type);
    for (int64_t r = 0; r < it.rows; r++, ref_bcast_next(&it))
        fn((const uint8_t *)c->data + it.off[0], it.step[0],
           (const char *)x->data + (size_t)it.off[1] * es, it.step[1],
           (const char *)y->data + (size_t)it.off[2] * es, it.step[2],
           (char *)out->data + (size_t)(r * it.inner) * es, it.inner);
    if (x->type == RN_STRING) /* the output owns its strings: copy the selected ones */
        return dup_strings(node, out);
    return RN_OK;
}

REF_KERNEL(ref_kernel_where, "Where", where_supports, where_run)
