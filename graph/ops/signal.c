/* Op schemas of the signal family (see graph/ops.h). */
#include "graph/ops.h"

const graph_op_schema graph_ops_signal[] = {
    {0},
};
