/* REF sequences, optionals and strings, and their public API: the Sequence*
 * ops with ONNX's positions, SplitToSequence / ConcatFromSequence,
 * SequenceMap, the optionals, StringNormalizer / StringSplit / StringConcat /
 * RegexFullMatch; then string, sequence and optional rn_tensors through a
 * compiled model. Expected values are worked out by hand beside each test. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops.h"
#include "plugins/api/plan.h"
#include "plugins/ref/ref.h"
#include "tests/ref/node_case.h"

static graph_value *const_i64(graph *g, const char *name, int64_t x)
{
    return pc_constant(g, name, RN_I64, 0, NULL, &x);
}
#include "runnel/runnel.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static void expect_strings(const graph_tensor *t, int rank, const int64_t *dims,
                           const char *const *want)
{
    cr_assert_eq(t->type, RN_STRING);
    cr_assert_eq(t->rank, rank, "rank %d, expected %d", t->rank, rank);
    for (int d = 0; d < rank; d++)
        cr_assert_eq(t->dims[d], dims[d], "dim %d is %lld, expected %lld", d, (long long)t->dims[d],
                     (long long)dims[d]);
    char *const *s = t->data;
    for (size_t i = 0; i < graph_tensor_count(t); i++)
        cr_assert_str_eq(s[i], want[i], "element %zu", i);
}

static const int64_t d1[] = {1}, d2[] = {2}, d3[] = {3};

/* ---- Sequence* ---- */

Test(sequence, positions_count_from_either_end)
{
    /* s1 = [x, y]; s2 = insert z at -1 -> [x, z, y]; s3 = erase 0 -> [z, y];
     * at = s3[-1] = y; len = |s2| = 3; cat = concat(s2) = x ++ z ++ y */
    graph *g = pc_graph("main", NULL, 20);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 1, d1);
    graph_value *y = pc_input(g, "y", GRAPH_KIND_TENSOR, RN_F32, 1, d2);
    graph_value *z = pc_input(g, "z", GRAPH_KIND_TENSOR, RN_F32, 1, d1);
    graph_value *s1 = pc_value(g, "s1"), *s2 = pc_value(g, "s2"), *s3 = pc_value(g, "s3"),
                *at = pc_value(g, "at"), *len = pc_value(g, "len"), *cat = pc_value(g, "cat");
    graph_value *minus1 = const_i64(g, "minus1", -1), *zero = const_i64(g, "zero", 0);
    pc_node(g, "construct", "SequenceConstruct", 2, (graph_value *[]){x, y}, 1, &s1);
    pc_node(g, "insert", "SequenceInsert", 3, (graph_value *[]){s1, z, minus1}, 1, &s2);
    pc_node(g, "erase", "SequenceErase", 2, (graph_value *[]){s2, zero}, 1, &s3);
    pc_node(g, "at", "SequenceAt", 2, (graph_value *[]){s3, minus1}, 1, &at);
    pc_node(g, "len", "SequenceLength", 1, &s2, 1, &len);
    pc_attr(pc_node(g, "cat", "ConcatFromSequence", 1, &s2, 1, &cat), attr_int("axis", 0));
    graph_add_output(g, at);
    graph_add_output(g, len);
    graph_add_output(g, cat);
    graph_add_output(g, s3);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    static const float xv[] = {1}, yv[] = {2, 3}, zv[] = {4};
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d1, xv));
    pc_set_input(&r, 1, tensor_view(RN_F32, 1, d2, yv));
    pc_set_input(&r, 2, tensor_view(RN_F32, 1, d1, zv));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    graph_tensor t = pc_output(&r, 0);
    expect_f32_tensor(&t, 1, d2, yv);
    t = pc_output(&r, 1);
    cr_assert_eq(t.type, RN_I64);
    cr_assert_eq(*(int64_t *)t.data, 3);
    static const int64_t d4[] = {4};
    static const float cat_want[] = {1, 4, 2, 3};
    t = pc_output(&r, 2);
    expect_f32_tensor(&t, 1, d4, cat_want);
    t = pc_output(&r, 3);
    cr_assert_eq(t.kind, GRAPH_KIND_SEQUENCE);
    cr_assert_eq(t.n_items, 2);
    expect_f32_tensor(&t.items[0], 1, d1, zv);
    expect_f32_tensor(&t.items[1], 1, d2, yv);
    pc_free(&r);
    graph_free(g);
}

Test(sequence, a_position_out_of_range_is_an_error)
{
    /* SequenceAt(s, 2) on a sequence of 2: positions are -2..1 */
    graph *g = pc_graph("main", NULL, 20);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 1, d1);
    graph_value *s = pc_value(g, "s"), *at = pc_value(g, "at"), *two = const_i64(g, "two", 2);
    pc_node(g, "construct", "SequenceConstruct", 2, (graph_value *[]){x, x}, 1, &s);
    pc_node(g, "pick", "SequenceAt", 2, (graph_value *[]){s, two}, 1, &at);
    graph_add_output(g, at);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    static const float xv[] = {1};
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d1, xv));
    cr_assert_eq(plugin_request_infer(r.req), RN_INVALID_ARG);
    cr_assert_not_null(strstr(rn_last_error(), "pick"), "%s", rn_last_error());
    cr_assert_not_null(strstr(rn_last_error(), "position 2"), "%s", rn_last_error());
    pc_free(&r);
    graph_free(g);
}

Test(sequence, split_and_stack)
{
    /* x = 0..4 split by 2 -> [0,1], [2,3], [4]; m [2,3] without split and
     * keepdims 0 -> three columns of [2]; stacked along a new last axis they
     * give m back. */
    graph *g = pc_graph("main", NULL, 20);
    static const int64_t d5[] = {5}, d23[] = {2, 3};
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 1, d5);
    graph_value *m = pc_input(g, "m", GRAPH_KIND_TENSOR, RN_F32, 2, d23);
    graph_value *two = const_i64(g, "two", 2);
    graph_value *parts = pc_value(g, "parts"), *cols = pc_value(g, "cols"),
                *back = pc_value(g, "back");
    pc_node(g, "split", "SplitToSequence", 2, (graph_value *[]){x, two}, 1, &parts);
    graph_node *n = pc_node(g, "cols", "SplitToSequence", 1, &m, 1, &cols);
    pc_attr(n, attr_int("axis", 1));
    pc_attr(n, attr_int("keepdims", 0));
    n = pc_node(g, "stack", "ConcatFromSequence", 1, &cols, 1, &back);
    pc_attr(n, attr_int("axis", -1));
    pc_attr(n, attr_int("new_axis", 1));
    graph_add_output(g, parts);
    graph_add_output(g, cols);
    graph_add_output(g, back);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    static const float xv[] = {0, 1, 2, 3, 4}, mv[] = {1, 2, 3, 4, 5, 6};
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d5, xv));
    pc_set_input(&r, 1, tensor_view(RN_F32, 2, d23, mv));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    graph_tensor p = pc_output(&r, 0);
    cr_assert_eq(p.n_items, 3);
    expect_f32_tensor(&p.items[0], 1, d2, xv);
    expect_f32_tensor(&p.items[2], 1, d1, xv + 4);
    graph_tensor c = pc_output(&r, 1);
    cr_assert_eq(c.n_items, 3);
    static const float col1[] = {2, 5};
    expect_f32_tensor(&c.items[1], 1, d2, col1);
    graph_tensor b = pc_output(&r, 2);
    expect_f32_tensor(&b, 2, d23, mv);
    pc_free(&r);
    graph_free(g);
}

Test(sequence, sequence_map_runs_the_body_per_item)
{
    /* y = map(s, k) { Add(item, k) } with s = [[1,2], [3]] and k = [10]:
     * [[11,12], [13]] */
    graph *g = pc_graph("main", NULL, 20);
    graph_value *s = pc_input(g, "s", GRAPH_KIND_SEQUENCE, RN_F32, -1, NULL);
    graph_value *k = pc_input(g, "k", GRAPH_KIND_TENSOR, RN_F32, 1, d1);
    graph_value *y = pc_value(g, "y");
    graph *b = pc_graph("body", g, 20);
    graph_value *item = pc_value(b, "item"), *kk = pc_value(b, "kk"), *o = pc_value(b, "o");
    graph_add_input(b, item);
    graph_add_input(b, kk);
    pc_node(b, "add", "Add", 2, (graph_value *[]){item, kk}, 1, &o);
    graph_add_output(b, o);
    graph_node *n = pc_node(g, "map", "SequenceMap", 2, (graph_value *[]){s, k}, 1, &y);
    pc_attr(n, attr_graph("body", b));
    graph_add_output(g, y);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    static const float i0[] = {1, 2}, i1[] = {3}, kv[] = {10};
    graph_tensor items[2] = {tensor_view(RN_F32, 1, d2, i0), tensor_view(RN_F32, 1, d1, i1)};
    graph_tensor seq = {.kind = GRAPH_KIND_SEQUENCE, .type = RN_F32, .n_items = 2, .items = items};
    pc_set_input(&r, 0, seq);
    pc_set_input(&r, 1, tensor_view(RN_F32, 1, d1, kv));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    graph_tensor t = pc_output(&r, 0);
    cr_assert_eq(t.kind, GRAPH_KIND_SEQUENCE);
    cr_assert_eq(t.n_items, 2);
    static const float w0[] = {11, 12}, w1[] = {13};
    expect_f32_tensor(&t.items[0], 1, d2, w0);
    expect_f32_tensor(&t.items[1], 1, d1, w1);
    /* a tensor where the sequence is declared is refused when bound */
    graph_tensor plain = tensor_view(RN_F32, 1, d1, kv);
    cr_assert_eq(plugin_request_set_input(r.req, 0, &plain), RN_TYPE_MISMATCH);
    pc_free(&r);
    graph_free(g);
}

/* ---- optionals ---- */

Test(sequence, optionals_with_and_without_a_value)
{
    /* some = Optional(x); none = Optional[type f32](); has(some) = 1,
     * has(none) = 0, get(some) = x; get(none) fails */
    graph *g = pc_graph("main", NULL, 20);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_F32, 1, d3);
    graph_value *some = pc_value(g, "some"), *none = pc_value(g, "none"), *h1 = pc_value(g, "h1"),
                *h2 = pc_value(g, "h2"), *got = pc_value(g, "got");
    pc_node(g, "some", "Optional", 1, &x, 1, &some);
    graph_node *n = pc_node(g, "none", "Optional", 0, NULL, 1, &none);
    pc_attr(n, attr_type("type", GRAPH_KIND_TENSOR, RN_F32));
    pc_node(g, "has1", "OptionalHasElement", 1, &some, 1, &h1);
    pc_node(g, "has2", "OptionalHasElement", 1, &none, 1, &h2);
    pc_node(g, "get", "OptionalGetElement", 1, &some, 1, &got);
    graph_add_output(g, h1);
    graph_add_output(g, h2);
    graph_add_output(g, got);
    graph_add_output(g, none);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    static const float xv[] = {1, 2, 3};
    pc_set_input(&r, 0, tensor_view(RN_F32, 1, d3, xv));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    cr_assert_eq(*(uint8_t *)pc_output(&r, 0).data, 1);
    cr_assert_eq(*(uint8_t *)pc_output(&r, 1).data, 0);
    graph_tensor t = pc_output(&r, 2);
    expect_f32_tensor(&t, 1, d3, xv);
    cr_assert_eq(pc_output(&r, 3).kind, GRAPH_KIND_OPTIONAL);
    pc_free(&r);
    graph_free(g);

    g = pc_graph("main", NULL, 20);
    none = pc_value(g, "none");
    got = pc_value(g, "got");
    n = pc_node(g, "none", "Optional", 0, NULL, 1, &none);
    pc_attr(n, attr_type("type", GRAPH_KIND_TENSOR, RN_F32));
    pc_node(g, "get", "OptionalGetElement", 1, &none, 1, &got);
    graph_add_output(g, got);
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    cr_assert_eq(plugin_request_infer(r.req), RN_INVALID_ARG);
    cr_assert_not_null(strstr(rn_last_error(), "without a value"), "%s", rn_last_error());
    pc_free(&r);
    graph_free(g);
}

/* ---- strings ---- */

Test(strings, normalizer_drops_stop_words_and_changes_case)
{
    /* LOWER, case-insensitive, stop word "monday": "Monday" -> "" (dropped),
     * "Tuesday" -> "tuesday", "MONDAY Ünd x" -> "ünd x" (Latin-1 too) */
    graph *g = pc_graph("main", NULL, 20);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_STRING, 1, d3);
    graph_value *y = pc_value(g, "y");
    graph_node *n = pc_node(g, "norm", "StringNormalizer", 1, &x, 1, &y);
    pc_attr(n, attr_string("case_change_action", "LOWER"));
    pc_attr(n, attr_strings("stopwords", 1, (const char *const[]){"monday"}));
    graph_add_output(g, y);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    const char *in[] = {"Monday", "Tuesday", "MONDAY \xc3\x9cnd x"};
    pc_set_input(&r, 0, tensor_view(RN_STRING, 1, d3, in));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    graph_tensor t = pc_output(&r, 0);
    expect_strings(&t, 1, d2, (const char *const[]){"tuesday", "\xc3\xbcnd x"});
    /* all gone: one empty string */
    const char *only[] = {"monday", "MONDAY", "Monday"};
    pc_set_input(&r, 0, tensor_view(RN_STRING, 1, d3, only));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    t = pc_output(&r, 0);
    expect_strings(&t, 1, d1, (const char *const[]){""});
    /* an unset string is refused when bound */
    const char *unset[] = {"a", NULL, "b"};
    graph_tensor bad = tensor_view(RN_STRING, 1, d3, unset);
    cr_assert_eq(plugin_request_set_input(r.req, 0, &bad), RN_INVALID_ARG);
    pc_free(&r);
    graph_free(g);
}

Test(strings, split_concat_and_regex)
{
    /* split(["a,b,,c", ""], ",") -> [[a,b,"",c], ["","","",""]], lengths
     * [4, 1]; split(x) on whitespace with maxsplit 1: "  hello  big world" ->
     * [hello, "big world"]; concat(x, "!") broadcasts; regex www\.[\w.-]+\.com
     * matches "www.a-b.com" and not "www.x.org" */
    graph *g = pc_graph("main", NULL, 20);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_STRING, 1, d2);
    graph_value *w = pc_input(g, "w", GRAPH_KIND_TENSOR, RN_STRING, 1, d1);
    graph_value *bang = pc_input(g, "bang", GRAPH_KIND_TENSOR, RN_STRING, 1, d1);
    graph_value *sub = pc_value(g, "sub"), *len = pc_value(g, "len"), *ws = pc_value(g, "ws"),
                *wl = pc_value(g, "wl"), *cat = pc_value(g, "cat"), *match = pc_value(g, "match");
    pc_attr(pc_node(g, "split", "StringSplit", 1, &x, 2, (graph_value *[]){sub, len}),
            attr_string("delimiter", ","));
    pc_attr(pc_node(g, "words", "StringSplit", 1, &w, 2, (graph_value *[]){ws, wl}),
            attr_int("maxsplit", 1));
    pc_node(g, "cat", "StringConcat", 2, (graph_value *[]){x, bang}, 1, &cat);
    pc_attr(pc_node(g, "re", "RegexFullMatch", 1, &cat, 1, &match),
            attr_string("pattern", "www\\.[\\w.-]+\\.com!"));
    graph_add_output(g, sub);
    graph_add_output(g, len);
    graph_add_output(g, ws);
    graph_add_output(g, cat);
    graph_add_output(g, match);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_OK, "%s", rn_last_error());
    const char *xs[] = {"a,b,,c", ""}, *wv[] = {"  hello  big world"}, *bv[] = {"!"};
    pc_set_input(&r, 0, tensor_view(RN_STRING, 1, d2, xs));
    pc_set_input(&r, 1, tensor_view(RN_STRING, 1, d1, wv));
    pc_set_input(&r, 2, tensor_view(RN_STRING, 1, d1, bv));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    static const int64_t d24[] = {2, 4}, d12[] = {1, 2};
    graph_tensor t = pc_output(&r, 0);
    expect_strings(&t, 2, d24, (const char *const[]){"a", "b", "", "c", "", "", "", ""});
    t = pc_output(&r, 1);
    cr_assert_eq(((int64_t *)t.data)[0], 4);
    cr_assert_eq(((int64_t *)t.data)[1], 1);
    t = pc_output(&r, 2);
    expect_strings(&t, 2, d12, (const char *const[]){"hello", "big world"});
    t = pc_output(&r, 3);
    expect_strings(&t, 1, d2, (const char *const[]){"a,b,,c!", "!"});
    const char *urls[] = {"www.a-b.com", "www.x.org"};
    pc_set_input(&r, 0, tensor_view(RN_STRING, 1, d2, urls));
    cr_assert_eq(plugin_request_infer(r.req), RN_OK, "%s", rn_last_error());
    t = pc_output(&r, 4);
    cr_assert_eq(((uint8_t *)t.data)[0], 1);
    cr_assert_eq(((uint8_t *)t.data)[1], 0);
    pc_free(&r);
    graph_free(g);
}

Test(strings, a_pattern_without_a_posix_form_is_unsupported)
{
    graph *g = pc_graph("main", NULL, 20);
    graph_value *x = pc_input(g, "x", GRAPH_KIND_TENSOR, RN_STRING, 1, d1);
    graph_value *y = pc_value(g, "y");
    pc_attr(pc_node(g, "re", "RegexFullMatch", 1, &x, 1, &y), attr_string("pattern", "(?i)abc"));
    graph_add_output(g, y);
    plan_case r;
    cr_assert_eq(pc_compile(g, 1, &r), RN_UNSUPPORTED, "%s", rn_last_error());
    cr_assert_not_null(strstr(rn_last_error(), "(?"), "%s", rn_last_error());
    pc_free(&r);
    graph_free(g);
}

/* ---- the public API ---- */

Test(api, string_tensors_own_their_strings)
{
    static const int64_t dims[] = {2};
    rn_tensor *t;
    cr_assert_eq(rn_tensor_create(RN_STRING, dims, 1, &t), RN_OK, "%s", rn_last_error());
    cr_assert_null(rn_tensor_get_string(t, 0), "entries start unset");
    char word[] = "hello";
    cr_assert_eq(rn_tensor_set_string(t, 0, word), RN_OK);
    word[0] = 'j';
    cr_assert_str_eq(rn_tensor_get_string(t, 0), "hello", "the tensor keeps a copy");
    cr_assert_eq(rn_tensor_set_string(t, 0, "again"), RN_OK);
    cr_assert_eq(rn_tensor_set_string(t, 2, "x"), RN_INVALID_ARG);
    cr_assert_null(rn_tensor_get_string(t, 2));
    cr_assert_eq(rn_tensor_byte_size(t), 2 * sizeof(char *));
    rn_tensor_free(t);
    const char *arr[] = {"a", "b"};
    cr_assert_eq(rn_tensor_wrap(RN_STRING, dims, 1, arr, sizeof arr, &t), RN_OK);
    cr_assert_str_eq(rn_tensor_get_string(t, 1), "b");
    cr_assert_eq(rn_tensor_set_string(t, 0, "z"), RN_INVALID_ARG, "a wrapped tensor borrows");
    rn_tensor_free(t);
}

/* The compiled test model at `path` with one request. */
typedef struct model_run {
    rn_core *core;
    rn_model *model;
    rn_compiled_model *cm;
    rn_infer_request *req;
} model_run;

static void open_model(const char *path, model_run *m)
{
    cr_assert_eq(rn_core_create(&m->core), RN_OK);
    cr_assert_eq(rn_core_read_model(m->core, path, &m->model), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_core_compile_model(m->core, m->model, "REF", NULL, 0, &m->cm), RN_OK, "%s",
                 rn_last_error());
    cr_assert_eq(rn_compiled_model_create_infer_request(m->cm, &m->req), RN_OK, "%s",
                 rn_last_error());
}

static void close_model(model_run *m)
{
    rn_infer_request_free(m->req);
    rn_compiled_model_free(m->cm);
    rn_model_free(m->model);
    rn_core_free(m->core);
}

Test(api, strings_through_a_model)
{
    /* UPPER, case-sensitive, stop word "monday": ["monday", "tuesday",
     * "Monday", "wed"] -> ["TUESDAY", "MONDAY", "WED"] */
    model_run m;
    open_model(NODE_DIR "/test_strnormalizer_export_monday_casesensintive_upper/model.onnx", &m);
    rn_tensor *x;
    cr_assert_eq(rn_infer_request_get_input_tensor(m.req, 0, &x), RN_OK);
    cr_assert_eq(rn_tensor_element_type(x), RN_STRING);
    cr_assert_eq(rn_infer_request_infer(m.req), RN_INVALID_ARG, "unset strings are refused");
    const char *words[] = {"monday", "tuesday", "Monday", "wed"};
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(rn_tensor_set_string(x, i, words[i]), RN_OK);
    cr_assert_eq(rn_infer_request_infer(m.req), RN_OK, "%s", rn_last_error());
    rn_tensor *y;
    cr_assert_eq(rn_infer_request_get_output_tensor(m.req, 0, &y), RN_OK);
    cr_assert_eq(rn_tensor_element_count(y), 3);
    cr_assert_str_eq(rn_tensor_get_string(y, 0), "TUESDAY");
    cr_assert_str_eq(rn_tensor_get_string(y, 1), "MONDAY");
    cr_assert_str_eq(rn_tensor_get_string(y, 2), "WED");
    close_model(&m);
}

Test(api, sequences_through_a_model)
{
    /* insert [7,8,9] at position -1 of [[1,2,3], [4,5,6]]:
     * [[1,2,3], [7,8,9], [4,5,6]] */
    model_run m;
    open_model(NODE_DIR "/test_sequence_insert_at_front/model.onnx", &m);
    static const int64_t d3v[] = {3}, d1v[] = {1};
    int64_t a[] = {1, 2, 3}, b[] = {4, 5, 6}, c[] = {7, 8, 9}, pos[] = {-1};
    rn_tensor *ta, *tb, *tc, *tp, *seq;
    cr_assert_eq(rn_tensor_wrap(RN_I64, d3v, 1, a, sizeof a, &ta), RN_OK);
    cr_assert_eq(rn_tensor_wrap(RN_I64, d3v, 1, b, sizeof b, &tb), RN_OK);
    cr_assert_eq(rn_tensor_wrap(RN_I64, d3v, 1, c, sizeof c, &tc), RN_OK);
    cr_assert_eq(rn_tensor_wrap(RN_I64, d1v, 1, pos, sizeof pos, &tp), RN_OK);
    cr_assert_eq(rn_tensor_create_sequence(RN_I64, (rn_tensor *[]){ta, tb}, 2, &seq), RN_OK, "%s",
                 rn_last_error());
    a[0] = 100; /* the sequence holds copies */
    cr_assert_eq(rn_tensor_kind(seq), RN_VALUE_SEQUENCE);
    cr_assert_eq(rn_tensor_sequence_length(seq), 2);
    cr_assert_eq(rn_tensor_create_sequence(RN_F32, (rn_tensor *[]){ta}, 1, &(rn_tensor *){NULL}),
                 RN_INVALID_ARG, "items of another type are refused");
    /* a plain tensor where the model declares a sequence is refused */
    cr_assert_eq(rn_infer_request_set_input_tensor(m.req, 0, tc), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(m.req, 1, tc), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(m.req, 2, tp), RN_OK);
    cr_assert_eq(rn_infer_request_infer(m.req), RN_TYPE_MISMATCH, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_set_input_tensor(m.req, 0, seq), RN_OK);
    cr_assert_eq(rn_infer_request_infer(m.req), RN_OK, "%s", rn_last_error());
    rn_tensor *out;
    cr_assert_eq(rn_infer_request_get_output_tensor(m.req, 0, &out), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_tensor_kind(out), RN_VALUE_SEQUENCE);
    cr_assert_eq(rn_tensor_sequence_length(out), 3);
    static const int64_t want[3][3] = {{1, 2, 3}, {7, 8, 9}, {4, 5, 6}};
    for (size_t i = 0; i < 3; i++) {
        rn_tensor *item;
        cr_assert_eq(rn_tensor_sequence_item(out, i, &item), RN_OK);
        cr_assert_eq(rn_tensor_element_count(item), 3);
        const int64_t *d = rn_tensor_data(item);
        for (size_t k = 0; k < 3; k++)
            cr_assert_eq(d[k], want[i][k], "item %zu element %zu is %lld", i, k, (long long)d[k]);
    }
    cr_assert_eq(rn_tensor_sequence_item(out, 3, &(rn_tensor *){NULL}), RN_INVALID_ARG);
    close_model(&m);
    rn_tensor_free(seq);
    rn_tensor_free(ta);
    rn_tensor_free(tb);
    rn_tensor_free(tc);
    rn_tensor_free(tp);
}

Test(api, optionals_through_a_model)
{
    /* OptionalHasElement of an optional without a value is false; of a
     * tensor, true */
    model_run m;
    open_model(NODE_DIR "/test_optional_has_element/model.onnx", &m);
    rn_tensor *none;
    cr_assert_eq(rn_tensor_create_none(RN_F32, 0, &none), RN_OK);
    cr_assert_eq(rn_tensor_kind(none), RN_VALUE_NONE);
    cr_assert_eq(rn_tensor_element_count(none), 0);
    cr_assert_eq(rn_infer_request_set_input_tensor(m.req, 0, none), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_infer(m.req), RN_OK, "%s", rn_last_error());
    rn_tensor *y;
    cr_assert_eq(rn_infer_request_get_output_tensor(m.req, 0, &y), RN_OK);
    cr_assert_eq(*(uint8_t *)rn_tensor_data(y), 0);
    static const int64_t d4[] = {4};
    float v[4] = {1, 2, 3, 4};
    rn_tensor *x;
    cr_assert_eq(rn_tensor_wrap(RN_F32, d4, 1, v, sizeof v, &x), RN_OK);
    cr_assert_eq(rn_infer_request_set_input_tensor(m.req, 0, x), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_infer(m.req), RN_OK, "%s", rn_last_error());
    cr_assert_eq(rn_infer_request_get_output_tensor(m.req, 0, &y), RN_OK);
    cr_assert_eq(*(uint8_t *)rn_tensor_data(y), 1);
    close_model(&m);
    rn_tensor_free(x);
    rn_tensor_free(none);
}

Test(api, a_loop_over_sequences_survives_export_and_import)
{
    /* trip 3 from an empty sequence: the body appends x[0:i+1] of x = 1..5,
     * so [[1], [1,2], [1,2,3]] — before the export and after the import */
    model_run m;
    open_model(NODE_DIR "/test_loop13_seq/model.onnx", &m);
    void *blob;
    size_t size;
    cr_assert_eq(rn_compiled_model_export(m.cm, &blob, &size), RN_OK, "%s", rn_last_error());
    rn_compiled_model *imported;
    cr_assert_eq(rn_core_import_model(m.core, blob, size, "REF", NULL, 0, &imported), RN_OK, "%s",
                 rn_last_error());
    free(blob);
    rn_infer_request *reqs[2] = {m.req, NULL};
    cr_assert_eq(rn_compiled_model_create_infer_request(imported, &reqs[1]), RN_OK);
    int64_t trip = 3;
    uint8_t cond = 1;
    rn_tensor *t_trip, *t_cond, *empty;
    cr_assert_eq(rn_tensor_wrap(RN_I64, NULL, 0, &trip, sizeof trip, &t_trip), RN_OK);
    cr_assert_eq(rn_tensor_wrap(RN_BOOL, NULL, 0, &cond, sizeof cond, &t_cond), RN_OK);
    cr_assert_eq(rn_tensor_create_sequence(RN_F32, NULL, 0, &empty), RN_OK);
    for (int k = 0; k < 2; k++) {
        rn_infer_request *r = reqs[k];
        cr_assert_eq(rn_infer_request_set_input_tensor(r, 0, t_trip), RN_OK);
        cr_assert_eq(rn_infer_request_set_input_tensor(r, 1, t_cond), RN_OK);
        cr_assert_eq(rn_infer_request_set_input_tensor(r, 2, empty), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_infer_request_infer(r), RN_OK, "%s", rn_last_error());
        rn_tensor *out;
        cr_assert_eq(rn_infer_request_get_output_tensor(r, 0, &out), RN_OK, "%s", rn_last_error());
        cr_assert_eq(rn_tensor_sequence_length(out), 3);
        for (size_t i = 0; i < 3; i++) {
            rn_tensor *item;
            cr_assert_eq(rn_tensor_sequence_item(out, i, &item), RN_OK);
            cr_assert_eq(rn_tensor_element_count(item), i + 1);
            const float *d = rn_tensor_data(item);
            for (size_t j = 0; j <= i; j++)
                cr_assert_eq(d[j], (float)(j + 1), "request %d item %zu element %zu", k, i, j);
        }
    }
    rn_infer_request_free(reqs[1]);
    rn_compiled_model_free(imported);
    close_model(&m);
    rn_tensor_free(t_trip);
    rn_tensor_free(t_cond);
    rn_tensor_free(empty);
}
