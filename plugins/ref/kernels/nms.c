/* REF NonMaxSuppression (opsets 10 and 11), following the ONNX reference:
 * per batch and class, boxes whose score exceeds score_threshold (when
 * given) are visited by decreasing score (ties: lower index first); a box is
 * kept unless its IoU with an already kept box of the class exceeds
 * iou_threshold; at most max_output_boxes_per_class are kept (0 or absent:
 * none). Boxes are [y1, x1, y2, x2] with corners in any order, or
 * [x_center, y_center, width, height] with center_point_box = 1. The output
 * is selected_indices (num_selected x 3: batch, class, box), allocated by
 * the kernel since its length depends on the values. IoU is computed in the
 * boxes' precision for f32 (as the reference's numpy does) and in double
 * otherwise. */
#include <stdlib.h>
#include <string.h>

#include "plugins/ref/kernels/image_util.h"
#include "plugins/ref/kernels/tmp.h"

static bool nms_supports(const graph_node *node, const char **why)
{
    if (!ref_img_node_ok(node, 2, why))
        return false;
    rn_element_type t = node->inputs[0]->type;
    if (!ref_nn_is_float(t) || node->inputs[1]->type != t) {
        *why = "boxes and scores must be f32, f64, f16 or bf16 of one type";
        return false;
    }
    if (node->n_inputs > 2 && node->inputs[2] != NULL && node->inputs[2]->type != RN_I64) {
        *why = "max_output_boxes_per_class must be i64";
        return false;
    }
    for (int i = 3; i < node->n_inputs; i++) {
        if (node->inputs[i] != NULL && !ref_nn_is_float(node->inputs[i]->type)) {
            *why = "iou_threshold and score_threshold must be float";
            return false;
        }
    }
    int64_t cpb = graph_node_attr_int(node, "center_point_box", 0);
    if (cpb != 0 && cpb != 1) {
        *why = "center_point_box is not 0 or 1";
        return false;
    }
    return true;
}

/* One box as min / max corners, in the compute type T. */
#define NMS_DEFINE(T, sfx)                                                                         \
    typedef struct nms_box_##sfx {                                                                 \
        T y0, x0, y1, x1;                                                                          \
    } nms_box_##sfx;                                                                               \
                                                                                                   \
    static nms_box_##sfx nms_box_read_##sfx(const graph_tensor *b, size_t at, bool center)         \
    {                                                                                              \
        T v[4];                                                                                    \
        for (int k = 0; k < 4; k++)                                                                \
            v[k] = (T)ref_nn_get(b->type, b->data, at + (size_t)k);                                \
        nms_box_##sfx r;                                                                           \
        if (center) {                                                                              \
            T hw = v[2] / (T)2, hh = v[3] / (T)2;                                                  \
            r.x0 = v[0] - hw;                                                                      \
            r.x1 = v[0] + hw;                                                                      \
            r.y0 = v[1] - hh;                                                                      \
            r.y1 = v[1] + hh;                                                                      \
        } else {                                                                                   \
            r.y0 = v[0] < v[2] ? v[0] : v[2];                                                      \
            r.y1 = v[0] < v[2] ? v[2] : v[0];                                                      \
            r.x0 = v[1] < v[3] ? v[1] : v[3];                                                      \
            r.x1 = v[1] < v[3] ? v[3] : v[1];                                                      \
        }                                                                                          \
        return r;                                                                                  \
    }                                                                                              \
                                                                                                   \
    /* Whether b suppresses a: IoU > threshold (no overlap never does). */                         \
    static bool nms_suppress_##sfx(const nms_box_##sfx *a, const nms_box_##sfx *b, T threshold)    \
    {                                                                                              \
        T ix0 = a->x0 > b->x0 ? a->x0 : b->x0, ix1 = a->x1 < b->x1 ? a->x1 : b->x1;                \
        T iy0 = a->y0 > b->y0 ? a->y0 : b->y0, iy1 = a->y1 < b->y1 ? a->y1 : b->y1;                \
        if (ix1 <= ix0 || iy1 <= iy0)                                                              \
            return false;                                                                          \
        T inter = (ix1 - ix0) * (iy1 - iy0);                                                       \
        T area_a = (a->x1 - a->x0) * (a->y1 - a->y0);                                              \
        T area_b = (b->x1 - b->x0) * (b->y1 - b->y0);                                              \
        T uni = area_a + area_b - inter;                                                           \
        if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0)                                  \
            return false;                                                                          \
        return inter / uni > threshold;                                                            \
    }

NMS_DEFINE(float, f32)
NMS_DEFINE(double, f64)

typedef struct nms_cand {
    double score;
    int64_t index;
} nms_cand;

/* Highest score first (NaN last); equal scores: lower index first. */
static int nms_cand_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    bool na = a->score != a->score, nb = b->score != b->score;
    if (na != nb)
        return na ? 1 : -1;
    if (!na && a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static rn_status nms_run(plugin_kernel_args *args)
{
    rn_status present = ref_img_args_ok(args, 2, true);
    if (present != RN_OK)
        return present;
    const graph_node *node = args->node;
    const graph_tensor *boxes = &args->inputs[0], *scores = &args->inputs[1];
    if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 ||
        scores->dims[0] != boxes->dims[0] || scores->dims[2] != boxes->dims[1])
        return rn_set_error(RN_SHAPE_MISMATCH,
                            "node '%s' (%s): boxes must be (batches, boxes, 4) and scores "
                            "(batches, classes, boxes)",
                            node->name, node->op_type);
    int64_t max_out = 0;
    double iou_t = 0.0, score_t = 0.0;
    bool has_score_t = false;
    const graph_tensor *in = args->inputs;
    if (args->n_inputs > 2 && in[2].data && graph_tensor_count(&in[2]) > 0)
        max_out = ((const int64_t *)in[2].data)[0];
    if (args->n_inputs > 3 && in[3].data && graph_tensor_count(&in[3]) > 0)
        iou_t = ref_nn_get(in[3].type, in[3].data, 0);
    if (args->n_inputs > 4 && in[4].data && graph_tensor_count(&in[4]) > 0) {
        score_t = ref_nn_get(in[4].type, in[4].data, 0);
        has_score_t = true;
    }
    if (max_out < 0)
        max_out = 0;
    bool center = graph_node_attr_int(node, "center_point_box", 0) == 1;
    bool single = boxes->type == RN_F32;
    int64_t nb = boxes->dims[0], nc = scores->dims[1], n = boxes->dims[1];
    nms_cand *cand = ref_tmp_alloc((size_t)(n > 0 ? n : 1) * sizeof *cand);
    int64_t *kept = ref_tmp_alloc((size_t)(n > 0 ? n : 1) * sizeof *kept);
    int64_t cap = 64, count = 0;
    int64_t *sel = ref_tmp_alloc((size_t)cap * 3 * sizeof *sel);
    rn_status st = cand && kept && sel ? RN_OK : ref_nn_oom(node);
    for (int64_t b = 0; st == RN_OK && b < nb; b++) {
        for (int64_t c = 0; st == RN_OK && c < nc; c++) {
            int64_t m = 0, n_kept = 0;
            for (int64_t i = 0; i < n; i++) {
                double s = ref_nn_get(scores->type, scores->data, (size_t)((b * nc + c) * n + i));
                if (!has_score_t || (single ? (float)s > (float)score_t : s > score_t))
                    cand[m++] = (nms_cand){s, i};
            }
            qsort(cand, (size_t)m, sizeof *cand, nms_cand_cmp);
            for (int64_t k = 0; k < m && n_kept < max_out; k++) {
                size_t at = (size_t)((b * n + cand[k].index) * 4);
                bool keep = true;
                for (int64_t j = 0; keep && j < n_kept; j++) {
                    size_t other = (size_t)((b * n + kept[j]) * 4);
                    if (single) {
                        nms_box_f32 p = nms_box_read_f32(boxes, at, center);
                        nms_box_f32 q = nms_box_read_f32(boxes, other, center);
                        keep = !nms_suppress_f32(&p, &q, (float)iou_t);
                    } else {
                        nms_box_f64 p = nms_box_read_f64(boxes, at, center);
                        nms_box_f64 q = nms_box_read_f64(boxes, other, center);
                        keep = !nms_suppress_f64(&p, &q, iou_t);
                    }
                }
                if (!keep)
                    continue;
                kept[n_kept++] = cand[k].index;
                if (count == cap) {
                    int64_t *grown = ref_tmp_alloc((size_t)cap * 2 * 3 * sizeof *sel);
                    if (grown == NULL) {
                        st = ref_nn_oom(node);
                        break;
                    }
                    memcpy(grown, sel, (size_t)count * 3 * sizeof *sel);
                    ref_tmp_free(sel);
                    sel = grown;
                    cap *= 2;
                }
                sel[count * 3] = b;
                sel[count * 3 + 1] = c;
                sel[count * 3 + 2] = cand[k].index;
                count++;
            }
        }
    }
    if (st == RN_OK) {
        graph_tensor *y = &args->outputs[0];
        int64_t dims[2] = {count, 3};
        if (y->data == NULL || y->dims[0] != count)
            st = args->alloc_output(args, 0, 2, dims);
        if (st == RN_OK && count > 0)
            memcpy(y->data, sel, (size_t)count * 3 * sizeof *sel);
    }
    ref_tmp_free(cand);
    ref_tmp_free(kept);
    ref_tmp_free(sel);
    return st;
}

const plugin_kernel ref_kernel_nms = {
    .domain = "",
    .op_type = "NonMaxSuppression",
    .impl_type = "ref",
    .supports = nms_supports,
    .run = nms_run,
};
