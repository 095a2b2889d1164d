/* Models and the description of their inputs and outputs. */
#ifndef RUNNEL_MODEL_H
#define RUNNEL_MODEL_H

#include <stddef.h>

#include "runnel/core.h"
#include "runnel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One input or output of a model or compiled model. `name` is owned by the
 * object it was read from and lives as long as it does. */
typedef struct rn_port {
    const char *name;
    rn_element_type element_type;
    rn_partial_shape shape;
} rn_port;

/* Frees a model. NULL is a no-op. */
void rn_model_free(rn_model *model);

/* The model's name (the ONNX graph name). */
const char *rn_model_name(const rn_model *model);

size_t rn_model_input_count(const rn_model *model);
size_t rn_model_output_count(const rn_model *model);
/* Writes the index-th input/output into *out; RN_INVALID_ARG past the end. */
rn_status rn_model_input(const rn_model *model, size_t index, rn_port *out);
rn_status rn_model_output(const rn_model *model, size_t index, rn_port *out);

/* Sets the shape of input `name` (dims of RN_DIM_DYNAMIC stay dynamic) and
 * re-infers every shape of the model, as OpenVINO's reshape does. A rank or
 * a static dim that contradicts the model, or a shape the model's ops
 * cannot take, is an error naming the input; the model is then unchanged. */
rn_status rn_model_reshape(rn_model *model, const char *name, const rn_partial_shape *shape);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_MODEL_H */
