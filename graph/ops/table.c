/* The one table of op schemas: the families of graph/ops/<family>.c, searched
 * by (domain, op_type). */
#include <string.h>

#include "graph/ops.h"

static const graph_op_schema *const families[] = {
    graph_ops_nn,       graph_ops_elementwise, graph_ops_movement, graph_ops_reduce,
    graph_ops_indexing, graph_ops_image,       graph_ops_quant,    graph_ops_signal,
    graph_ops_rnn,      graph_ops_random,      graph_ops_math,     graph_ops_control,
    graph_ops_sequence, graph_ops_string,      graph_ops_contrib,  graph_ops_ml,
};

#define N_FAMILIES ((int)(sizeof families / sizeof families[0]))

static bool same_domain(const char *a, const char *b)
{
    if (strcmp(a, "ai.onnx") == 0)
        a = "";
    if (strcmp(b, "ai.onnx") == 0)
        b = "";
    return strcmp(a, b) == 0;
}

const graph_op_schema *graph_op_find(const char *domain, const char *op_type)
{
    if (domain == NULL)
        domain = "";
    for (int f = 0; f < N_FAMILIES; f++)
        for (const graph_op_schema *s = families[f]; s->op_type != NULL; s++)
            if (strcmp(s->op_type, op_type) == 0 && same_domain(s->domain, domain))
                return s;
    return graph_op_find_extension(domain, op_type);
}

int graph_op_count(void)
{
    int n = 0;
    for (int f = 0; f < N_FAMILIES; f++)
        for (const graph_op_schema *s = families[f]; s->op_type != NULL; s++)
            n++;
    return n;
}

const graph_op_schema *graph_op_at(int i)
{
    for (int f = 0; f < N_FAMILIES; f++)
        for (const graph_op_schema *s = families[f]; s->op_type != NULL; s++)
            if (i-- == 0)
                return s;
    return NULL;
}

/* The newest opset of each domain the schemas implement: the default domain
 * as of the onnx 1.22.0 test data (opset 27), ai.onnx.ml 5, the preview
 * domains 1, and the com.microsoft contrib ops ONNX Runtime writes at
 * version 1. */
static const struct {
    const char *domain;
    int newest;
} newest_opsets[] = {
    {"", 27},
    {"ai.onnx.ml", 5},
    {"ai.onnx.preview", 1},
    {"ai.onnx.preview.training", 1},
    {"com.microsoft", 1},
};

int graph_op_newest_opset(const char *domain)
{
    if (domain == NULL)
        domain = "";
    for (size_t i = 0; i < sizeof newest_opsets / sizeof newest_opsets[0]; i++)
        if (same_domain(newest_opsets[i].domain, domain))
            return newest_opsets[i].newest;
    return 0;
}
