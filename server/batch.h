/* Dynamic batching's tensor work: requests of batch k1, k2, ... joined
 * along dim 0 into one run, and the run's outputs split back. */
#ifndef RUNNEL_SERVER_BATCH_H
#define RUNNEL_SERVER_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/runnel.h"

/* Joins `n` tensors of one element type and equal dims past dim 0 along dim
 * 0 into a new tensor (*out, the caller's). Another type, rank or trailing
 * dim is RN_INVALID_ARG naming the part. */
rn_status server_batch_concat(rn_tensor *const *parts, size_t n, rn_tensor **out);

/* Rows [begin, begin + count) of `t` along dim 0, as a new tensor the caller
 * frees: a view of t's buffer for numbers (valid while t is unchanged), a
 * copy for strings. Rows past dim 0 are RN_INVALID_ARG. */
rn_status server_batch_slice(const rn_tensor *t, int64_t begin, int64_t count, rn_tensor **out);

#endif /* RUNNEL_SERVER_BATCH_H */
