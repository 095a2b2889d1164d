/* The one table of op schemas: the families of graph/ops/<family>.c, searched
 * by (domain, op_type). */
#include <string.h>

#include "graph/ops.h"

static const graph_op_schema *const families[] = {
    graph_ops_nn,       graph_ops_elementwise, graph_ops_movement, graph_ops_reduce,
    graph_ops_indexing, graph_ops_image,       graph_ops_quant,    graph_ops_signal,
    graph_ops_rnn,      graph_ops_random,      graph_ops_math,     graph_ops_control,
    graph_ops_sequence, graph_ops_string,
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
