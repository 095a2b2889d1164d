/* Op schemas of the quant family (see graph/ops.h). */
#include "graph/ops.h"

const graph_op_schema graph_ops_quant[] = {
    {0},
};
