/* Stateful sequences of a served model, as Triton's sequence batcher with
 * implicit state: requests carry sequence_id (and sequence_start,
 * sequence_end); each state output of a request becomes the matching state
 * input of the next request of its sequence (zeros at its start). Requests
 * of one sequence run one at a time, in the order they arrived; requests of
 * different sequences go through the model's queue and batch together. A
 * sequence idle for max_idle_us is reclaimed, and a request that continues
 * it is then refused.
 *
 * The model layer (model.c) calls these at bind, submit, completion and
 * answer. A sequences table has its own lock; no call waits on inference. */
#ifndef RUNNEL_SERVER_SEQUENCE_H
#define RUNNEL_SERVER_SEQUENCE_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/runnel.h"
#include "server/codec.h"
#include "server/repository.h"

struct server_job;
typedef struct server_sequences server_sequences;

/* Resolves the config's state pairs against the compiled model: each input
 * and output must exist, have the same datatype and the same static dims
 * (past the batch dim when `batching`). Else RN_INVALID_ARG naming them. */
rn_status server_sequences_create(const rn_compiled_model *compiled,
                                  const server_model_config *config, int batching,
                                  server_sequences **out);

void server_sequences_free(server_sequences *sequences);

/* Sequences active now (after reclaiming the idle ones). */
size_t server_sequences_active(server_sequences *sequences);

/* At bind (inputs in the model's order, state inputs absent): checks the
 * request's sequence parameters (a sequence_id, a sequence that is active
 * or that this request starts, batch size 1 when batching) and adds a
 * placeholder for each state input. RN_INVALID_ARG naming the problem. */
rn_status server_sequences_bind(server_sequences *sequences, const rn_compiled_model *compiled,
                                const char *model, server_infer *infer);

/* Whether model input `index` is a state input. */
int server_sequences_is_state(const server_sequences *sequences, size_t index);

/* At submit: *now = 1 when the job may enter the model's queue at once (its
 * state inputs filled), 0 when it waits behind its sequence's request in
 * flight (server_sequences_release hands it back). A sequence reclaimed
 * meanwhile, or one start too many, is RN_RESULT_NOT_READY (503). */
rn_status server_sequences_admit(server_sequences *sequences, struct server_job *job, int *now);

/* At completion of a job that ran: keeps its state outputs (rows [row,
 * row + 1) of the request's outputs when `sliced`) as its sequence's state. */
void server_sequences_capture(server_sequences *sequences, struct server_job *job,
                              rn_infer_request *request, int sliced, int64_t row);

/* When an admitted job is answered (ran or not): the next job of its
 * sequence, its state inputs filled, for the model's queue; or NULL. A job
 * with sequence_end ends the sequence once nothing waits behind it. */
struct server_job *server_sequences_release(server_sequences *sequences, struct server_job *job);

#endif /* RUNNEL_SERVER_SEQUENCE_H */
