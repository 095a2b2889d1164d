/* Pre/post-processing insertion: the nodes it adds in front of a parameter
 * and after a result, the checks on the description (nothing changes when it
 * does not fit the model), and REF results on data in the user's element
 * type and layout, compared with values worked out by hand. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/transforms/transforms_test_util.h"
#include "transforms/transforms.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

static int preprocess(graph *g, const transforms_preprocess *pp)
{
    int changes = -1;
    OK(transforms_add_preprocessing(g, (void *)pp, &changes));
    return changes;
}

/* y = Identity(x), x f32 [1,3,2,2] (NCHW): the result is exactly what the
 * preprocessing made of the user's data. */
static graph *identity_model(void)
{
    graph *g = tt_graph();
    const int64_t d[4] = {1, 3, 2, 2};
    graph_value *x = tt_input(g, "x", RN_F32, 4, d);
    tt_output(g, tt_unary(g, "y", "Identity", x));
    tt_finish(g);
    return g;
}

static const float mean3[3] = {10.0f, 20.0f, 30.0f};
static const float scale3[3] = {2.0f, 4.0f, 5.0f};

Test(preprocess, u8_nhwc_with_mean_and_scale)
{
    graph *g = identity_model();
    transforms_input_preprocess in = {
        .name = "x",
        .type = RN_U8,
        .layout = "NHWC",
        .n_mean = 3,
        .mean = mean3,
        .n_scale = 3,
        .scale = scale3,
    };
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    cr_assert_eq(preprocess(g, &pp), 4);

    graph_value *x = g->inputs[0];
    cr_assert_str_eq(x->name, "x", "the parameter keeps its name");
    cr_assert_eq(x->type, RN_U8);
    const int64_t want[4] = {1, 2, 2, 3};
    cr_assert_eq(x->shape.rank, 4);
    for (int d = 0; d < 4; d++)
        cr_assert_eq(x->shape.dims[d], want[d], "dim %d", d);
    const char *steps[4][2] = {{"x/convert_element_type", "Cast"},
                               {"x/mean", "Sub"},
                               {"x/scale", "Div"},
                               {"x/convert_layout", "Transpose"}};
    for (int i = 0; i < 4; i++) {
        graph_node *n = tt_find_node(g, steps[i][0]);
        cr_assert_not_null(n, "no node %s", steps[i][0]);
        cr_assert_str_eq(n->op_type, steps[i][1]);
        cr_assert_eq(n->id, i, "%s is step %d", steps[i][0], i);
    }
    cr_assert_eq(tt_find_node(g, "x/convert_element_type")->inputs[0], x);
    const int64_t *perm;
    cr_assert_eq(graph_node_attr_ints(tt_find_node(g, "x/convert_layout"), "perm", &perm), 4);
    cr_assert(perm[0] == 0 && perm[1] == 3 && perm[2] == 1 && perm[3] == 2);
    graph_node *id = tt_find_node(g, "y");
    cr_assert_eq(id->inputs[0], tt_find_node(g, "x/convert_layout")->outputs[0]);
    tt_assert_valid(g);

    /* User data u[0,h,w,c] = 40*h + 20*w + 10*c + 50; y[0,c,h,w] must be
     * (u[0,h,w,c] - mean[c]) / scale[c]. */
    uint8_t u[12];
    for (int h = 0; h < 2; h++)
        for (int w = 0; w < 2; w++)
            for (int c = 0; c < 3; c++)
                u[(h * 2 + w) * 3 + c] = (uint8_t)(40 * h + 20 * w + 10 * c + 50);
    graph_tensor t = {.type = RN_U8, .rank = 4, .dims = {1, 2, 2, 3}, .data = u, .nbytes = 12};
    graph_tensor out = {0};
    tt_run(g, &t, 1, &out);
    cr_assert_eq(out.type, RN_F32);
    cr_assert(out.rank == 4 && out.dims[1] == 3 && out.dims[2] == 2 && out.dims[3] == 2);
    const float *y = out.data;
    for (int c = 0; c < 3; c++)
        for (int h = 0; h < 2; h++)
            for (int w = 0; w < 2; w++) {
                float expect = ((float)(40 * h + 20 * w + 10 * c + 50) - mean3[c]) / scale3[c];
                cr_assert_eq(y[(c * 2 + h) * 2 + w], expect, "y[0,%d,%d,%d]", c, h, w);
            }
    graph_tensor_release(&out);
    graph_free(g);
}

Test(preprocess, element_type_alone_is_one_cast)
{
    graph *g = identity_model();
    transforms_input_preprocess in = {.name = "x", .type = RN_U8};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    cr_assert_eq(preprocess(g, &pp), 1);
    cr_assert_eq(g->n_nodes, 2);
    graph_node *cast = tt_find_node(g, "x/convert_element_type");
    cr_assert_eq(graph_node_attr_int(cast, "to", 0), RN_F32);
    cr_assert_eq(g->inputs[0]->type, RN_U8);
    cr_assert_eq(g->inputs[0]->shape.dims[1], 3, "the shape stays NCHW");
    graph_free(g);
}

Test(preprocess, single_mean_is_a_scalar)
{
    graph *g = identity_model();
    const float m = 0.5f;
    transforms_input_preprocess in = {.name = "x", .n_mean = 1, .mean = &m};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    cr_assert_eq(preprocess(g, &pp), 1);
    graph_node *sub = tt_find_node(g, "x/mean");
    cr_assert_not_null(sub);
    const graph_tensor *k = sub->inputs[1]->constant;
    cr_assert(k != NULL && k->rank == 0 && *(const float *)k->data == 0.5f);
    graph_free(g);
}

Test(preprocess, per_channel_constant_lies_on_the_channel_axis)
{
    /* Without layouts the channel is axis 1: the constant is [1,3,1,1]. */
    graph *g = identity_model();
    transforms_input_preprocess in = {.name = "x", .n_scale = 3, .scale = scale3};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    cr_assert_eq(preprocess(g, &pp), 1);
    const graph_tensor *k = tt_find_node(g, "x/scale")->inputs[1]->constant;
    cr_assert(k->rank == 4 && k->dims[0] == 1 && k->dims[1] == 3 && k->dims[2] == 1 &&
              k->dims[3] == 1);
    graph_free(g);
}

Test(preprocess, explicit_model_layout)
{
    /* The model takes NHWC [1,2,2,3]; the user feeds NCHW [1,3,2,2]. */
    graph *g = tt_graph();
    const int64_t d[4] = {1, 2, 2, 3};
    graph_value *x = tt_input(g, "x", RN_F32, 4, d);
    tt_output(g, tt_unary(g, "y", "Identity", x));
    tt_finish(g);
    transforms_input_preprocess in = {.name = "x", .layout = "NCHW", .model_layout = "NHWC"};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    cr_assert_eq(preprocess(g, &pp), 1);
    cr_assert_eq(x->shape.dims[1], 3);
    cr_assert_eq(x->shape.dims[3], 2);
    const int64_t *perm;
    cr_assert_eq(graph_node_attr_ints(tt_find_node(g, "x/convert_layout"), "perm", &perm), 4);
    cr_assert(perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1);
    graph_free(g);
}

Test(preprocess, f16_model_gets_f16_constants)
{
    graph *g = tt_graph();
    const int64_t d[4] = {1, 3, 1, 1};
    graph_value *x = tt_input(g, "x", RN_F16, 4, d);
    tt_output(g, tt_unary(g, "y", "Identity", x));
    tt_finish(g);
    const float m[3] = {1.0f, -2.0f, 0.5f};
    transforms_input_preprocess in = {.name = "x", .type = RN_F32, .n_mean = 3, .mean = m};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    cr_assert_eq(preprocess(g, &pp), 2);
    const graph_tensor *k = tt_find_node(g, "x/mean")->inputs[1]->constant;
    cr_assert_eq(k->type, RN_F16);
    const uint16_t *h = k->data;
    /* 1.0 = 0x3C00, -2.0 = 0xC000, 0.5 = 0x3800 in IEEE half precision. */
    cr_assert(h[0] == 0x3C00 && h[1] == 0xC000 && h[2] == 0x3800, "%04x %04x %04x", h[0], h[1],
              h[2]);
    graph_free(g);
}

Test(preprocess, nothing_asked_changes_nothing)
{
    graph *g = identity_model();
    transforms_input_preprocess in = {.name = "x", .type = RN_F32, .layout = "NCHW"};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    cr_assert_eq(preprocess(g, &pp), 0);
    cr_assert_eq(g->n_nodes, 1);
    cr_assert_eq(preprocess(g, NULL), 0);
    graph_free(g);
}

Test(postprocess, result_takes_the_user_type_and_keeps_its_name)
{
    /* r = Relu(x) is result "r" and feeds result s = Sigmoid(r). Converting
     * "r" to f16 must leave the Sigmoid reading f32. */
    graph *g = tt_graph();
    const int64_t d[1] = {6};
    graph_value *x = tt_input(g, "x", RN_F32, 1, d);
    graph_value *r = tt_unary(g, "r", "Relu", x);
    tt_output(g, r);
    tt_output(g, tt_unary(g, "s", "Sigmoid", r));
    tt_finish(g);
    transforms_output_postprocess out = {.name = "r", .type = RN_F16};
    transforms_preprocess pp = {.n_outputs = 1, .outputs = &out};
    cr_assert_eq(preprocess(g, &pp), 1);

    cr_assert_eq(g->outputs[0], r);
    cr_assert_eq(r->type, RN_F16);
    graph_node *cast = tt_find_node(g, "r/convert_element_type");
    cr_assert_not_null(cast);
    cr_assert_eq(r->producer, cast);
    graph_value *inner = cast->inputs[0];
    cr_assert_str_eq(inner->name, "r/model_output");
    cr_assert_eq(inner->type, RN_F32);
    cr_assert_eq(inner->producer, tt_find_node(g, "r"));
    cr_assert_eq(tt_find_node(g, "s")->inputs[0], inner);
    tt_assert_valid(g);

    float data[6] = {-1.0f, 0.5f, 1.0f, 2.0f, -3.0f, 4.0f};
    graph_tensor t = tt_tensor_f32(1, d, data);
    graph_tensor res[2] = {{0}};
    tt_run(g, &t, 1, res);
    cr_assert_eq(res[0].type, RN_F16);
    /* 0, 0.5, 1, 2, 0, 4 in IEEE half precision. */
    const uint16_t want[6] = {0x0000, 0x3800, 0x3C00, 0x4000, 0x0000, 0x4400};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((const uint16_t *)res[0].data)[i], want[i], "element %d", i);
    cr_assert_eq(res[1].type, RN_F32);
    graph_tensor_release(&res[0]);
    graph_tensor_release(&res[1]);
    graph_free(g);
}

/* ---- descriptions that do not fit: an error naming the culprit, and the
 * graph as it was ---- */

static void expect_refused(const transforms_preprocess *pp, const char *needle)
{
    graph *g = identity_model();
    int changes = 0;
    rn_status st = transforms_add_preprocessing(g, (void *)pp, &changes);
    cr_assert_eq(st, RN_INVALID_ARG, "status %s", rn_status_name(st));
    cr_assert(strstr(rn_last_error(), needle) != NULL, "message '%s' lacks '%s'", rn_last_error(),
              needle);
    cr_assert_eq(g->n_nodes, 1, "the graph must stay as it was");
    cr_assert_eq(g->inputs[0]->type, RN_F32);
    cr_assert_eq(g->inputs[0]->shape.dims[1], 3);
    graph_free(g);
}

Test(preprocess, unknown_input_is_named)
{
    transforms_input_preprocess in = {.name = "nope", .type = RN_U8};
    expect_refused(&(transforms_preprocess){.n_inputs = 1, .inputs = &in}, "'nope'");
}

Test(preprocess, layout_of_wrong_rank)
{
    transforms_input_preprocess in = {.name = "x", .layout = "NHW"};
    expect_refused(&(transforms_preprocess){.n_inputs = 1, .inputs = &in}, "'NHW'");
}

Test(preprocess, layouts_with_different_letters)
{
    transforms_input_preprocess in = {.name = "x", .layout = "NHWC", .model_layout = "NCDW"};
    expect_refused(&(transforms_preprocess){.n_inputs = 1, .inputs = &in}, "same letters");
}

Test(preprocess, mean_count_not_matching_channels)
{
    const float m[2] = {1, 2};
    transforms_input_preprocess in = {.name = "x", .n_mean = 2, .mean = m};
    expect_refused(&(transforms_preprocess){.n_inputs = 1, .inputs = &in}, "3 channels");
}

Test(preprocess, zero_scale)
{
    const float s[3] = {1, 0, 1};
    transforms_input_preprocess in = {.name = "x", .n_scale = 3, .scale = s};
    expect_refused(&(transforms_preprocess){.n_inputs = 1, .inputs = &in}, "scale value 1 is zero");
}

Test(preprocess, later_bad_entry_leaves_earlier_ones_undone)
{
    transforms_input_preprocess in[2] = {{.name = "x", .type = RN_U8},
                                         {.name = "y2", .type = RN_U8}};
    expect_refused(&(transforms_preprocess){.n_inputs = 2, .inputs = in}, "'y2'");
}

Test(preprocess, input_declared_twice)
{
    transforms_input_preprocess in[2] = {{.name = "x", .type = RN_U8},
                                         {.name = "x", .type = RN_I8}};
    expect_refused(&(transforms_preprocess){.n_inputs = 2, .inputs = in}, "twice");
}

Test(postprocess, unknown_output_is_named)
{
    transforms_output_postprocess out = {.name = "zz", .type = RN_F16};
    expect_refused(&(transforms_preprocess){.n_outputs = 1, .outputs = &out}, "'zz'");
}

Test(preprocess, mean_on_integer_input)
{
    graph *g = tt_graph();
    const int64_t d[2] = {1, 3};
    graph_value *x = tt_input(g, "x", RN_I32, 2, d);
    tt_output(g, tt_unary(g, "y", "Identity", x));
    tt_finish(g);
    const float m = 1;
    transforms_input_preprocess in = {.name = "x", .n_mean = 1, .mean = &m};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    int changes;
    cr_assert_eq(transforms_add_preprocessing(g, &pp, &changes), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "floating-point") != NULL, "%s", rn_last_error());
    graph_free(g);
}

Test(postprocess, parameter_result_cannot_convert)
{
    graph *g = tt_graph();
    const int64_t d[1] = {3};
    graph_value *x = tt_input(g, "x", RN_F32, 1, d);
    tt_output(g, x);
    transforms_output_postprocess out = {.name = "x", .type = RN_F16};
    transforms_preprocess pp = {.n_outputs = 1, .outputs = &out};
    int changes;
    cr_assert_eq(transforms_add_preprocessing(g, &pp, &changes), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "'x'") != NULL, "%s", rn_last_error());
    graph_free(g);
}
