/* Infer requests: set inputs, run, read outputs and per-node profiling.
 *
 * A request owns a tensor for every input and output of its compiled model.
 * Inputs start zero-filled with the model's static shape (dynamic dims as 0)
 * until the caller sets them. A request is used by one thread at a time. */
#ifndef RUNNEL_INFER_REQUEST_H
#define RUNNEL_INFER_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/api.h"
#include "runnel/compiled_model.h"
#include "runnel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Frees the request. NULL is a no-op. */
RN_API void rn_infer_request_free(rn_infer_request *request);

/* Sets the tensor for the input or output called `name`. The request keeps
 * a reference to the caller's tensor (no copy: its buffer is read at infer
 * time), which must outlive the request or be replaced. Element type and
 * rank must match the port; static dims must match. For an output, the
 * result is written into the caller's buffer when its shape fits. */
RN_API rn_status rn_infer_request_set_tensor(rn_infer_request *request, const char *name,
                                             rn_tensor *tensor);
RN_API rn_status rn_infer_request_set_input_tensor(rn_infer_request *request, size_t index,
                                                   rn_tensor *tensor);
RN_API rn_status rn_infer_request_set_output_tensor(rn_infer_request *request, size_t index,
                                                    rn_tensor *tensor);

/* The tensor bound to the input or output called `name` (borrowed: owned by
 * the request, or the caller's if set). Output tensors hold the results of
 * the last infer. */
RN_API rn_status rn_infer_request_get_tensor(rn_infer_request *request, const char *name,
                                             rn_tensor **out);
RN_API rn_status rn_infer_request_get_input_tensor(rn_infer_request *request, size_t index,
                                                   rn_tensor **out);
RN_API rn_status rn_infer_request_get_output_tensor(rn_infer_request *request, size_t index,
                                                    rn_tensor **out);

/* Runs inference synchronously in the caller's thread (no other thread is
 * used). RN_REQUEST_BUSY while an async run is in flight. */
RN_API rn_status rn_infer_request_infer(rn_infer_request *request);

/* Called when an async run completes, with the request and the run's status
 * (RN_OK, RN_CANCELLED or the error; rn_last_error() has the detail). It runs
 * on the callback executor's thread, may read outputs, set tensors and start
 * the request again; it must not free the request. */
typedef void (*rn_infer_callback)(rn_infer_request *request, rn_status status, void *user_data);

/* Starts inference and returns at once; the stages run as tasks on the
 * compiled model's streams. RN_REQUEST_BUSY while a run is in flight. The
 * input tensors must stay unchanged until the run completes. */
RN_API rn_status rn_infer_request_start_async(rn_infer_request *request);

/* Waits for the run in flight and returns its status, after its callback
 * has returned. RN_OK at once when nothing was started. */
RN_API rn_status rn_infer_request_wait(rn_infer_request *request);

/* As wait, for at most timeout_ms milliseconds: RN_RESULT_NOT_READY when the
 * run is still going; a negative timeout is RN_INVALID_ARG. */
RN_API rn_status rn_infer_request_wait_for(rn_infer_request *request, int64_t timeout_ms);

/* Cancels the run in flight: kernels not yet started are skipped and the run
 * completes with RN_CANCELLED. The request may be started again. A no-op on
 * an idle request. */
RN_API rn_status rn_infer_request_cancel(rn_infer_request *request);

/* Sets the completion callback (fn NULL clears it). RN_REQUEST_BUSY while a
 * run is in flight. */
RN_API rn_status rn_infer_request_set_callback(rn_infer_request *request, rn_infer_callback fn,
                                               void *user_data);

typedef enum rn_node_status {
    RN_NODE_NOT_RUN = 0, /* not executed (e.g. folded away, or no infer yet) */
    RN_NODE_OPTIMIZED_OUT = 1,
    RN_NODE_EXECUTED = 2,
} rn_node_status;

/* Per-node profiling of the last infer (filled when the model was compiled
 * with ENABLE_PROFILING=YES; otherwise real_time_us is 0). Strings are owned
 * by the compiled model. */
typedef struct rn_profiling_info {
    const char *node_name;
    const char *node_type; /* the op */
    const char *exec_type; /* the kernel implementation ("ref") */
    rn_node_status status;
    uint64_t real_time_us;
} rn_profiling_info;

/* The profiling entries of the last infer, one per node in execution order.
 * The array is owned by the request and valid until its next infer. */
RN_API rn_status rn_infer_request_profiling_info(rn_infer_request *request,
                                                 const rn_profiling_info **info, size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_INFER_REQUEST_H */
