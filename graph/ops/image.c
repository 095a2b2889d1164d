/* Op schemas of the image family (see graph/ops.h). */
#include "graph/ops.h"

const graph_op_schema graph_ops_image[] = {
    {0},
};
