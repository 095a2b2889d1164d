/* The pass manager: registering passes by name, enabling and disabling them
 * one at a time or with a configuration string, fixed points, the report,
 * errors that name the pass, and the default pipeline end to end on REF. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/transforms/transforms_test_util.h"
#include "transforms/transforms.h"

#define OK(expr)                                                                                   \
    do {                                                                                           \
        rn_status st_ = (expr);                                                                    \
        cr_assert_eq(st_, RN_OK, "%s: %s (%s)", #expr, rn_status_name(st_), rn_last_error());      \
    } while (0)

/* A pass that reports `remaining` changes one at a time, counting down:
 * with REPEAT it runs remaining + 1 times. */
typedef struct countdown {
    int remaining;
    int calls;
    int order; /* sequence number of its first call */
} countdown;

static int call_seq;

static rn_status countdown_pass(graph *g, void *ctx, int *changes)
{
    (void)g;
    countdown *c = ctx;
    if (c->calls++ == 0)
        c->order = ++call_seq;
    *changes = c->remaining > 0 ? 1 : 0;
    if (c->remaining > 0)
        c->remaining--;
    return RN_OK;
}

static rn_status always_changes(graph *g, void *ctx, int *changes)
{
    (void)g;
    (void)ctx;
    *changes = 1;
    return RN_OK;
}

static rn_status failing_pass(graph *g, void *ctx, int *changes)
{
    (void)g;
    (void)ctx;
    (void)changes;
    return rn_set_error(RN_SHAPE_MISMATCH, "node 'n7' (Conv): bad weights");
}

static graph *tiny_graph(void)
{
    graph *g = tt_graph();
    const int64_t d[1] = {4};
    tt_output(g, tt_unary(g, "r", "Relu", tt_input(g, "x", RN_F32, 1, d)));
    tt_finish(g);
    return g;
}

Test(pipeline, passes_run_in_order_and_report)
{
    transforms_pipeline *p;
    OK(transforms_pipeline_create(&p));
    countdown a = {.remaining = 3}, b = {.remaining = 2};
    OK(transforms_pipeline_add(p, "first", countdown_pass, &a, TRANSFORMS_REPEAT));
    OK(transforms_pipeline_add(p, "second", countdown_pass, &b, 0));
    cr_assert_eq(transforms_pipeline_count(p), 2);
    cr_assert_str_eq(transforms_pipeline_name(p, 1), "second");
    cr_assert_null(transforms_pipeline_name(p, 2));

    graph *g = tiny_graph();
    transforms_report rep;
    call_seq = 0;
    OK(transforms_pipeline_run(p, g, &rep));
    cr_assert(a.order == 1 && b.order == 2, "registration order");
    cr_assert_eq(rep.n_passes, 2);
    cr_assert_str_eq(rep.passes[0].name, "first");
    cr_assert_eq(rep.passes[0].runs, 4, "REPEAT: 3 changing runs and one that changes nothing");
    cr_assert_eq(rep.passes[0].changes, 3);
    cr_assert(rep.passes[0].fixed_point);
    cr_assert_eq(rep.passes[1].runs, 1, "without REPEAT a pass runs once");
    cr_assert_eq(rep.passes[1].changes, 1);
    cr_assert_not(rep.passes[1].fixed_point);
    transforms_pipeline_free(p);
    graph_free(g);
}

Test(pipeline, repeat_stops_at_the_limit)
{
    transforms_pipeline *p;
    OK(transforms_pipeline_create(&p));
    OK(transforms_pipeline_add(p, "restless", always_changes, NULL, TRANSFORMS_REPEAT));
    graph *g = tiny_graph();
    transforms_report rep;
    OK(transforms_pipeline_run(p, g, &rep));
    cr_assert_eq(rep.passes[0].runs, TRANSFORMS_MAX_REPEAT);
    cr_assert_not(rep.passes[0].fixed_point);
    transforms_pipeline_free(p);
    graph_free(g);
}

Test(pipeline, disabled_pass_does_not_run)
{
    transforms_pipeline *p;
    OK(transforms_pipeline_create(&p));
    countdown a = {.remaining = 1}, b = {.remaining = 1};
    OK(transforms_pipeline_add(p, "on", countdown_pass, &a, 0));
    OK(transforms_pipeline_add(p, "off", countdown_pass, &b, TRANSFORMS_DISABLED));
    bool enabled = true;
    OK(transforms_pipeline_is_enabled(p, "off", &enabled));
    cr_assert_not(enabled);
    OK(transforms_pipeline_set_enabled(p, "on", false));
    graph *g = tiny_graph();
    transforms_report rep;
    OK(transforms_pipeline_run(p, g, &rep));
    cr_assert(a.calls == 0 && b.calls == 0);
    cr_assert(!rep.passes[0].enabled && rep.passes[0].runs == 0);
    OK(transforms_pipeline_set_enabled(p, "off", true));
    OK(transforms_pipeline_run(p, g, NULL));
    cr_assert(a.calls == 0 && b.calls == 1);
    transforms_pipeline_free(p);
    graph_free(g);
}

Test(pipeline, unknown_name_is_an_error_naming_it)
{
    transforms_pipeline *p;
    OK(transforms_default_pipeline(NULL, &p));
    cr_assert_eq(transforms_pipeline_set_enabled(p, "fold_everything", false), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "'fold_everything'") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "constant_folding") != NULL,
              "the message lists the passes there are: %s", rn_last_error());
    bool e;
    cr_assert_eq(transforms_pipeline_is_enabled(p, "nope", &e), RN_NOT_FOUND);
    transforms_pipeline_free(p);
}

Test(pipeline, bad_registrations_are_refused)
{
    transforms_pipeline *p;
    OK(transforms_pipeline_create(&p));
    OK(transforms_pipeline_add(p, "a", always_changes, NULL, 0));
    cr_assert_eq(transforms_pipeline_add(p, "a", always_changes, NULL, 0), RN_INVALID_ARG);
    cr_assert(strstr(rn_last_error(), "'a'") != NULL);
    cr_assert_eq(transforms_pipeline_add(p, "Bad Name", always_changes, NULL, 0), RN_INVALID_ARG);
    cr_assert_eq(transforms_pipeline_add(p, "", always_changes, NULL, 0), RN_INVALID_ARG);
    cr_assert_eq(transforms_pipeline_add(p, "nofn", NULL, NULL, 0), RN_INVALID_ARG);
    for (int i = 1; i < TRANSFORMS_MAX_PASSES; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        OK(transforms_pipeline_add(p, name, always_changes, NULL, 0));
    }
    cr_assert_eq(transforms_pipeline_add(p, "overflow", always_changes, NULL, 0), RN_INVALID_ARG);
    cr_assert_eq(transforms_pipeline_count(p), TRANSFORMS_MAX_PASSES);
    transforms_pipeline_free(p);
}

Test(pipeline, configuration_string)
{
    transforms_pipeline *p;
    OK(transforms_default_pipeline(NULL, &p));
    bool e;
    OK(transforms_pipeline_configure(p, "-*, +add_preprocessing"));
    for (int i = 0; i < transforms_pipeline_count(p); i++) {
        const char *name = transforms_pipeline_name(p, i);
        OK(transforms_pipeline_is_enabled(p, name, &e));
        cr_assert_eq(e, strcmp(name, "add_preprocessing") == 0, "%s", name);
    }
    OK(transforms_pipeline_configure(p, "constant_folding,+decompose_divide"));
    OK(transforms_pipeline_is_enabled(p, "constant_folding", &e));
    cr_assert(e);
    OK(transforms_pipeline_is_enabled(p, "decompose_divide", &e));
    cr_assert(e);
    transforms_pipeline_free(p);
}

Test(pipeline, bad_configuration_changes_nothing)
{
    transforms_pipeline *p;
    OK(transforms_default_pipeline(NULL, &p));
    cr_assert_eq(transforms_pipeline_configure(p, "-constant_folding,-no_such_pass"), RN_NOT_FOUND);
    cr_assert(strstr(rn_last_error(), "'no_such_pass'") != NULL, "%s", rn_last_error());
    bool e;
    OK(transforms_pipeline_is_enabled(p, "constant_folding", &e));
    cr_assert(e, "the valid entry before the bad one must not apply");
    cr_assert_eq(transforms_pipeline_configure(p, "-constant_folding,,"), RN_INVALID_ARG);
    cr_assert_eq(transforms_pipeline_configure(p, "+"), RN_INVALID_ARG);
    OK(transforms_pipeline_is_enabled(p, "constant_folding", &e));
    cr_assert(e);
    transforms_pipeline_free(p);
}

Test(pipeline, failing_pass_is_named)
{
    transforms_pipeline *p;
    OK(transforms_pipeline_create(&p));
    countdown later = {0};
    OK(transforms_pipeline_add(p, "boom", failing_pass, NULL, 0));
    OK(transforms_pipeline_add(p, "later", countdown_pass, &later, 0));
    graph *g = tiny_graph();
    transforms_report rep;
    cr_assert_eq(transforms_pipeline_run(p, g, &rep), RN_SHAPE_MISMATCH);
    cr_assert(strstr(rn_last_error(), "pass 'boom'") != NULL, "%s", rn_last_error());
    cr_assert(strstr(rn_last_error(), "n7") != NULL, "the pass's own message stays");
    cr_assert_eq(rep.passes[0].runs, 1);
    cr_assert_eq(later.calls, 0, "no pass runs after a failure");
    transforms_pipeline_free(p);
    graph_free(g);
}

Test(pipeline, default_order_and_switches)
{
    static const char *const order[] = {"add_preprocessing", "remove_identity",
                                        "fuse_relu_relu",    "decompose_divide",
                                        "constant_folding",  "eliminate_dead_nodes"};
    transforms_pipeline *p;
    OK(transforms_default_pipeline(NULL, &p));
    cr_assert_eq(transforms_pipeline_count(p), 6);
    for (int i = 0; i < 6; i++) {
        cr_assert_str_eq(transforms_pipeline_name(p, i), order[i]);
        bool e;
        OK(transforms_pipeline_is_enabled(p, order[i], &e));
        cr_assert_eq(e, strcmp(order[i], "decompose_divide") != 0, "%s", order[i]);
    }
    transforms_pipeline_free(p);
}

/* A model with something for every default pass:
 *   w   = ConstantOfShape([2,3], 0.5) * 2            (folds to ones)
 *   a   = Identity(x)                                (removed)
 *   r2  = Relu(Relu(a))                              (fused)
 *   y   = r2 / (w + 1)                               (Add folds; Div kept)
 *   dead = Sigmoid(x)                                (unread: eliminated)
 */
static graph *busy_model(void)
{
    graph *g = tt_graph();
    const int64_t d23[2] = {2, 3}, d1[1] = {2};
    graph_value *x = tt_input(g, "x", RN_F32, 2, d23);
    graph_value *fill = tt_unary(g, "fill", "ConstantOfShape", tt_const_i64(g, "s", 1, d1, d23));
    tt_attr_tensor_f32(g, "fill", "value", 0.5f);
    graph_value *two = tt_const_f32(g, "two", 0, NULL, (const float[]){2.0f});
    graph_value *one = tt_const_f32(g, "one", 0, NULL, (const float[]){1.0f});
    graph_value *w = tt_binary(g, "w", "Mul", fill, two);
    graph_value *a = tt_unary(g, "a", "Identity", x);
    graph_value *r2 = tt_unary(g, "r2", "Relu", tt_unary(g, "r1", "Relu", a));
    tt_output(g, tt_binary(g, "y", "Div", r2, tt_binary(g, "w1", "Add", w, one)));
    tt_unary(g, "dead", "Sigmoid", x);
    tt_finish(g);
    return g;
}

Test(pipeline, default_pipeline_end_to_end)
{
    graph *g = busy_model();
    graph *before;
    OK(graph_clone(g, &before));
    transforms_options opt = {.const_eval = tt_ref_eval, .const_eval_ctx = tt_registry()};
    transforms_pipeline *p;
    OK(transforms_default_pipeline(&opt, &p));
    transforms_report rep;
    OK(transforms_pipeline_run(p, g, &rep));

    cr_assert_eq(g->n_nodes, 2, "Relu and Div remain");
    graph_node *relu = tt_find_node(g, "r2");
    graph_node *div = tt_find_node(g, "y");
    cr_assert(relu != NULL && div != NULL);
    cr_assert_eq(relu->inputs[0], g->inputs[0]);
    cr_assert(tt_has_fused(relu, "r1") && tt_has_fused(relu, "r2"));
    cr_assert_not_null(div->inputs[1]->constant, "w + 1 is folded");
    cr_assert_str_eq(g->outputs[0]->name, "y");
    cr_assert_null(graph_find_value(g, "fill", false), "folded intermediates are dropped");
    tt_assert_valid(g);

    cr_assert_eq(rep.passes[1].changes, 1, "one Identity");
    cr_assert_eq(rep.passes[2].changes, 1, "one Relu pair");
    cr_assert_not(rep.passes[3].enabled);
    cr_assert_eq(rep.passes[4].changes, 3, "ConstantOfShape, Mul, Add");
    cr_assert_gt(rep.passes[5].changes, 0, "the Sigmoid nobody reads");

    const int64_t d23[2] = {2, 3};
    float data[6] = {-1.0f, 0.0f, 1.0f, 2.0f, -4.0f, 8.0f};
    graph_tensor in = tt_tensor_f32(2, d23, data);
    graph_tensor want = {0}, got = {0};
    tt_run(before, &in, 1, &want);
    tt_run(g, &in, 1, &got);
    tt_assert_close_f32(&got, &want, 0);
    graph_tensor_release(&want);
    graph_tensor_release(&got);
    transforms_pipeline_free(p);
    graph_free(before);
    graph_free(g);
}

Test(pipeline, decompose_divide_when_enabled)
{
    graph *g = busy_model();
    graph *before;
    OK(graph_clone(g, &before));
    transforms_options opt = {.const_eval = tt_ref_eval, .const_eval_ctx = tt_registry()};
    transforms_pipeline *p;
    OK(transforms_default_pipeline(&opt, &p));
    OK(transforms_pipeline_configure(p, "+decompose_divide"));
    OK(transforms_pipeline_run(p, g, NULL));
    /* Pow(w + 1, -1) reads constants only, so folding turns it into the
     * reciprocal constant: Relu and Mul remain. */
    cr_assert_eq(g->n_nodes, 2);
    cr_assert_eq(tt_count_op(g, "Mul"), 1);
    cr_assert_eq(tt_count_op(g, "Div"), 0);
    cr_assert_str_eq(tt_find_node(g, "y")->op_type, "Mul");

    const int64_t d23[2] = {2, 3};
    float data[6] = {-1.0f, 0.0f, 1.0f, 2.0f, -4.0f, 8.0f};
    graph_tensor in = tt_tensor_f32(2, d23, data);
    graph_tensor want = {0}, got = {0};
    tt_run(before, &in, 1, &want);
    tt_run(g, &in, 1, &got);
    tt_assert_close_f32(&got, &want, 1e-6f);
    graph_tensor_release(&want);
    graph_tensor_release(&got);
    transforms_pipeline_free(p);
    graph_free(before);
    graph_free(g);
}

Test(pipeline, only_preprocessing_when_transformations_are_disabled)
{
    /* What REF does under DISABLE_TRANSFORMATIONS: the user's preprocessing
     * still becomes nodes, nothing else changes. */
    graph *g = busy_model();
    int nodes = g->n_nodes;
    transforms_input_preprocess in = {.name = "x", .type = RN_U8};
    transforms_preprocess pp = {.n_inputs = 1, .inputs = &in};
    transforms_options opt = {.preprocess = &pp};
    transforms_pipeline *p;
    OK(transforms_default_pipeline(&opt, &p));
    OK(transforms_pipeline_configure(p, "-*,+add_preprocessing"));
    OK(transforms_pipeline_run(p, g, NULL));
    cr_assert_eq(g->n_nodes, nodes + 1);
    cr_assert_eq(g->inputs[0]->type, RN_U8);
    cr_assert_eq(tt_count_op(g, "Identity"), 1);
    transforms_pipeline_free(p);
    graph_free(g);
}
