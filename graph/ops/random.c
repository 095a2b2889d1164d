/* Op schemas of the random family (see graph/ops.h). */
#include "graph/ops.h"

const graph_op_schema graph_ops_random[] = {
    {0},
};
