/* Op schemas of the math family (see graph/ops.h). */
#include "graph/ops.h"

const graph_op_schema graph_ops_math[] = {
    {0},
};
