/* REF Det: the determinant of each M x M matrix in the last two dims, by LU
 * decomposition with partial pivoting in double (a singular matrix gives 0,
 * a 0 x 0 matrix 1), rounded once to the output type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/nn_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool det_supports(const graph_node *node, const char **why)
{
    if (!ref_nn_node_ok(node, 1, why))
        return false;
    if (!ref_nn_is_float(node->inputs[0]->type)) {
        *why = "input is not f32, f64, f16 or bf16";
        return false;
    }
    return true;
}

/* Determinant of the n x n row-major matrix a (destroyed). */
static double det_lu(double *a, int64_t n)
{
    double det = 1.0;
    for (int64_t k = 0; k < n; k++) {
        int64_t piv = k;
        for (int64_t i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[piv * n + k]))
                piv = i;
        if (a[piv * n + k] == 0.0)
            return 0.0;
        if (piv != k) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[piv * n + j];
                a[piv * n + j] = t;
            }
            det = -det;
        }
        double p = a[k * n + k];
        det *= p;
        for (int64_t i = k + 1; i < n; i++) {
            double f = a[i * n + k] / p;
            for (int64_t j = k + 1; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
        }
    }
    return det;
}

static rn_status det_run(plugin_kernel_args *args)
{
    rn_status st = ref_nn_args_ok(args, 1);
    if (st != RN_OK)
        return st;
    const graph_node *node = args->node;
    const graph_tensor *x = &args->inputs[0];
    graph_tensor *y = &args->outputs[0];
    int r = x->rank;
    if (r < 2 || x->dims[r - 1] != x->dims[r - 2] || y->rank != r - 2)
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): input of rank %d is not [..., M, M]", node->name,
                            node->op_type, r);
    int64_t n = x->dims[r - 1], batch = ref_nn_span(x->dims, 0, r - 2);
    double *a = ref_tmp_alloc((size_t)(n * n > 0 ? n * n : 1) * sizeof *a);
    if (a == NULL)
        return ref_nn_oom(node);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t e = 0; e < n * n; e++)
            a[e] = ref_nn_get(x->type, x->data, (size_t)(b * n * n + e));
        ref_nn_set(y->type, y->data, (size_t)b, det_lu(a, n));
    }
    ref_tmp_free(a);
    return RN_OK;
}

const plugin_kernel ref_kernel_det = {
    .domain = "",
    .op_type = "Det",
    .impl_type = "ref",
    .supports = det_supports,
    .run = det_run,
};
