/* Op schemas of the indexing family (see graph/ops.h). */
#include "graph/ops.h"

const graph_op_schema graph_ops_indexing[] = {
    {0},
};
