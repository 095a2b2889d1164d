/* Attribute defaults in the op schemas (graph/ops, rn_attr_spec.dflt):
 * every default a schema gives equals ONNX's, from the table the onnx
 * wheel's schemas produce (tests/graph/onnx_attr_defaults.txt, made by
 * scripts/onnx-attr-defaults, which scripts/test compares with the wheel);
 * runnel's fused ops give their base op's; the lookups return the attribute
 * when present and the schema's default when absent; the window parser
 * reads auto_pad's default from the schema into its enum. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/ops.h"
#include "graph/ops/attr_parse.h"

#define TABLE "tests/graph/onnx_attr_defaults.txt"

typedef struct onnx_default {
    char op[64], attr[64], type[16], value[64];
} onnx_default;

static onnx_default table[512];
static int n_table;

static void read_table(void)
{
    FILE *f = fopen(TABLE, "r");
    cr_assert_not_null(f, "%s is missing from the runfiles", TABLE);
    char line[512];
    n_table = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#')
            continue;
        onnx_default *d = &table[n_table];
        cr_assert_lt(n_table, 512);
        cr_assert_eq(sscanf(line, "%63s %63s %15s %63[^\n]", d->op, d->attr, d->type, d->value), 4,
                     "bad line: %s", line);
        n_table++;
    }
    fclose(f);
    cr_assert_gt(n_table, 100, "the table has %d entries", n_table);
}

static const onnx_default *onnx_of(const char *op, const char *attr)
{
    for (int i = 0; i < n_table; i++)
        if (strcmp(table[i].op, op) == 0 && strcmp(table[i].attr, attr) == 0)
            return &table[i];
    return NULL;
}

/* Whether spec's default is the table's, with the reason when not. */
static bool same_default(const rn_attr_spec *spec, const onnx_default *d, char *why, size_t size)
{
    switch (spec->type) {
    case RN_ATTR_FLOAT: {
        float want = strtof(d->value, NULL);
        snprintf(why, size, "FLOAT %a, ONNX %s (%a)", spec->dflt.f, d->value, want);
        return strcmp(d->type, "FLOAT") == 0 && spec->dflt.f == want;
    }
    case RN_ATTR_INT:
        snprintf(why, size, "INT %lld, ONNX %s %s", (long long)spec->dflt.i, d->type, d->value);
        return strcmp(d->type, "INT") == 0 && spec->dflt.i == strtoll(d->value, NULL, 10);
    case RN_ATTR_STRING: {
        char quoted[80];
        snprintf(quoted, sizeof quoted, "\"%s\"", spec->dflt.s);
        snprintf(why, size, "STRING %s, ONNX %s %s", quoted, d->type, d->value);
        return strcmp(d->type, "STRING") == 0 && strcmp(quoted, d->value) == 0;
    }
    default:
        snprintf(why, size, "a default of type %d", spec->type);
        return false;
    }
}

Test(attr_defaults, every_schema_default_is_onnx_s)
{
    read_table();
    int checked = 0;
    for (int i = 0; i < graph_op_count(); i++) {
        const graph_op_schema *s = graph_op_at(i);
        /* The default domain's ops against ONNX's; runnel's fused ops
         * ("FusedGemm", "QLinearFusedGemm") against their base op's ("Gemm"). */
        const char *base = s->op_type;
        if (strcmp(s->domain, "runnel") == 0 && strncmp(s->op_type, "Fused", 5) == 0)
            base = s->op_type + 5;
        else if (strcmp(s->domain, "runnel") == 0 && strncmp(s->op_type, "QLinearFused", 12) == 0)
            base = s->op_type + 12;
        else if (s->domain[0] != '\0')
            continue;
        for (int a = 0; a < GRAPH_MAX_ATTR_SPECS && s->attrs[a].name != NULL; a++) {
            const rn_attr_spec *spec = &s->attrs[a];
            if (!spec->has_default)
                continue;
            const onnx_default *d = onnx_of(base, spec->name);
            cr_expect_not_null(d, "%s.%s has a default; ONNX's %s gives none", s->op_type,
                               spec->name, base);
            if (d == NULL)
                continue;
            char why[256];
            cr_expect(same_default(spec, d, why, sizeof why), "%s.%s: %s", s->op_type, spec->name,
                      why);
            checked++;
        }
    }
    /* The ops whose defaults the devices no longer restate, at least. */
    cr_assert_geq(checked, 50, "only %d defaults checked", checked);
    const char *covered[][2] = {
        {"LeakyRelu", "alpha"},
        {"Elu", "alpha"},
        {"Selu", "alpha"},
        {"Selu", "gamma"},
        {"HardSigmoid", "alpha"},
        {"HardSigmoid", "beta"},
        {"LRN", "alpha"},
        {"LRN", "beta"},
        {"LRN", "bias"},
        {"Gemm", "alpha"},
        {"Gemm", "transB"},
        {"Conv", "auto_pad"},
        {"MaxPool", "ceil_mode"},
        {"BatchNormalization", "epsilon"},
        {"LayerNormalization", "axis"},
    };
    for (size_t c = 0; c < sizeof covered / sizeof covered[0]; c++) {
        const rn_attr_spec *spec = rn_op_attr_spec("", covered[c][0], covered[c][1]);
        cr_assert(spec != NULL && spec->has_default, "%s.%s has no default in its schema",
                  covered[c][0], covered[c][1]);
    }
}

Test(attr_defaults, every_auto_pad_and_ceil_mode_has_one)
{
    for (int i = 0; i < graph_op_count(); i++) {
        const graph_op_schema *s = graph_op_at(i);
        for (int a = 0; a < GRAPH_MAX_ATTR_SPECS && s->attrs[a].name != NULL; a++) {
            const rn_attr_spec *spec = &s->attrs[a];
            if (strcmp(spec->name, "auto_pad") == 0)
                cr_expect(spec->has_default && strcmp(spec->dflt.s, "NOTSET") == 0, "%s's auto_pad",
                          s->op_type);
            if (strcmp(spec->name, "ceil_mode") == 0)
                cr_expect(spec->has_default && spec->dflt.i == 0, "%s's ceil_mode", s->op_type);
        }
    }
}

/* A node of op_type with one input and one output in a new graph. */
static graph_node *node_of(graph *g, const char *op_type)
{
    graph_value *x, *y;
    cr_assert_eq(graph_add_value(g, "x", &x), RN_OK);
    cr_assert_eq(graph_add_value(g, "y", &y), RN_OK);
    graph_node *n;
    cr_assert_eq(graph_add_node(g, "n", "", op_type, 22, 1, &x, 1, &y, &n), RN_OK, "%s",
                 rn_last_error());
    return n;
}

Test(attr_defaults, a_lookup_gives_the_attribute_or_the_schema_default)
{
    graph *g;
    cr_assert_eq(graph_create("g", &g), RN_OK);
    graph_node *n = node_of(g, "LeakyRelu");
    /* Absent: the schema's default, the float nearest 0.01 (ONNX's). */
    cr_assert_eq(rn_node_attr_float_or_default(n, "alpha"), 0.01f);
    cr_assert(graph_node_attr_has_default(n, "alpha"));
    cr_assert(!graph_node_attr_has_default(n, "beta"));
    graph_attr a = {.name = strdup("alpha"), .type = GRAPH_ATTR_FLOAT, .f = 0.25f};
    cr_assert_eq(graph_node_add_attr(n, &a), RN_OK);
    cr_assert_eq(rn_node_attr_float_or_default(n, "alpha"), 0.25f);
    graph_free(g);
    /* A fused activation's parameters: those given, then the op's defaults. */
    float p[4];
    const float given[] = {0.3f};
    cr_assert_eq(rn_activation_params("HardSigmoid", NULL, 0, p, 4), 2);
    cr_assert(p[0] == 0.2f && p[1] == 0.5f, "%g %g", p[0], p[1]);
    cr_assert_eq(rn_activation_params("HardSigmoid", given, 1, p, 4), 2);
    cr_assert(p[0] == 0.3f && p[1] == 0.5f, "%g %g", p[0], p[1]);
    cr_assert_eq(rn_activation_params("LeakyRelu", NULL, 0, p, 4), 1);
    cr_assert_eq(p[0], 0.01f);
    cr_assert_eq(rn_activation_params("Relu", NULL, 0, p, 4), 0);
}

Test(attr_defaults, the_window_parser_takes_auto_pad_from_the_schema)
{
    graph *g;
    cr_assert_eq(graph_create("g", &g), RN_OK);
    graph_node *n = node_of(g, "MaxPool");
    int64_t k[] = {3, 3};
    graph_attr ks = {.name = strdup("kernel_shape"),
                     .type = GRAPH_ATTR_INTS,
                     .count = 2,
                     .ints = malloc(sizeof k)};
    memcpy(ks.ints, k, sizeof k);
    cr_assert_eq(graph_node_add_attr(n, &ks), RN_OK);
    rn_window w;
    cr_assert_eq(rn_node_window(n, 2, NULL, true, &w), RN_OK, "%s", rn_last_error());
    cr_assert_eq(w.auto_pad, RN_AUTO_PAD_NOTSET);
    cr_assert(!w.ceil_mode && w.stride[0] == 1 && w.dilation[1] == 1 && w.pads[3] == 0);
    graph_attr ap = {
        .name = strdup("auto_pad"), .type = GRAPH_ATTR_STRING, .s = strdup("SAME_LOWER")};
    cr_assert_eq(graph_node_add_attr(n, &ap), RN_OK);
    cr_assert_eq(rn_node_window(n, 2, NULL, true, &w), RN_OK);
    cr_assert_eq(w.auto_pad, RN_AUTO_PAD_SAME_LOWER);
    /* 6 outputs over 6 at stride 1: a 3-window pads 2 in all, 1 and 1; a
     * 4-window 3, the odd unit first for SAME_LOWER, last for SAME_UPPER
     * (ONNX's rule). */
    int64_t b, e;
    rn_window_pads(&w, 0, 6, 6, &b, &e);
    cr_assert(b == 1 && e == 1, "%lld %lld", (long long)b, (long long)e);
    w.kernel[0] = 4;
    rn_window_pads(&w, 0, 6, 6, &b, &e); /* total 3: the odd unit first */
    cr_assert(b == 2 && e == 1, "SAME_LOWER: %lld %lld", (long long)b, (long long)e);
    w.auto_pad = RN_AUTO_PAD_SAME_UPPER;
    rn_window_pads(&w, 0, 6, 6, &b, &e);
    cr_assert(b == 1 && e == 2, "SAME_UPPER: %lld %lld", (long long)b, (long long)e);
    graph_free(g);
}
