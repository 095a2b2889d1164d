/* Op schemas of the rnn family (see graph/ops.h). */
#include "graph/ops.h"

const graph_op_schema graph_ops_rnn[] = {
    {0},
};
