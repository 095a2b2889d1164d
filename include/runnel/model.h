/* Models and the description of their inputs and outputs. */
#ifndef RUNNEL_MODEL_H
#define RUNNEL_MODEL_H

#include <stddef.h>

#include "runnel/api.h"
#include "runnel/core.h"
#include "runnel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One input or output of a model or compiled model. `name` is owned by the
 * object it was read from and lives as long as it does. */
typedef enum rn_port_kind {
    RN_PORT_TENSOR = 0,
    RN_PORT_SEQUENCE = 1,          /* a sequence of tensors of element_type */
    RN_PORT_OPTIONAL_TENSOR = 2,   /* a tensor, or none (rn_tensor_create_none) */
    RN_PORT_OPTIONAL_SEQUENCE = 3, /* a sequence, or none */
    RN_PORT_MAP = 4,               /* a map whose values are of element_type */
    RN_PORT_SEQUENCE_MAP = 5,      /* a sequence of such maps (ZipMap's output) */
} rn_port_kind;

typedef struct rn_port {
    const char *name;
    rn_element_type element_type;
    rn_partial_shape shape; /* of the tensor, or of each item of a sequence */
    rn_port_kind kind;
} rn_port;

/* Frees a model. NULL is a no-op. */
RN_API void rn_model_free(rn_model *model);

/* The model's name (the ONNX graph name). */
RN_API const char *rn_model_name(const rn_model *model);

/* What reading the model let pass but a user should know, one sentence
 * each (owned by the model): a declared shape (value_info, a declared
 * output) that shape inference contradicted and overrode, naming the value.
 * rn_model_warning returns NULL past the end. */
RN_API size_t rn_model_warning_count(const rn_model *model);
RN_API const char *rn_model_warning(const rn_model *model, size_t index);

RN_API size_t rn_model_input_count(const rn_model *model);
RN_API size_t rn_model_output_count(const rn_model *model);
/* Writes the index-th input/output into *out; RN_INVALID_ARG past the end. */
RN_API rn_status rn_model_input(const rn_model *model, size_t index, rn_port *out);
RN_API rn_status rn_model_output(const rn_model *model, size_t index, rn_port *out);

/* Preprocessing declared on a model input: what the user will feed, and
 * the steps that turn it into what the model takes. They become graph nodes
 * (Cast, Sub, Div, Transpose) in the model itself, so every device sees one
 * graph and the input's port changes to the user's type and layout. */
typedef struct rn_input_preprocess {
    rn_element_type element_type; /* the user's element type; RN_UNDEFINED: the model's */
    const char *layout;           /* the user's layout ("NHWC"); NULL: the model's */
    const char *model_layout;     /* the model's ("NCHW"); NULL: N, C, then the rest */
    size_t n_mean;                /* 0, 1 or one per channel */
    const float *mean;            /* subtracted */
    size_t n_scale;               /* 0, 1 or one per channel */
    const float *scale;           /* divided by */
} rn_input_preprocess;

/* Declares preprocessing on input `name` (once per input). A description
 * that does not fit the input (a layout of another rank, a mean per channel
 * of the wrong count) is an error naming it; the model is then unchanged. */
RN_API rn_status rn_model_set_input_preprocess(rn_model *model, const char *name,
                                               const rn_input_preprocess *pp);

/* Makes output `name` deliver `type` (a Cast after the result). */
RN_API rn_status rn_model_set_output_element_type(rn_model *model, const char *name,
                                                  rn_element_type type);

/* Sets the shape of input `name` (dims of RN_DIM_DYNAMIC stay dynamic) and
 * re-infers every shape of the model, as OpenVINO's reshape does. A rank or
 * a static dim that contradicts the model, or a shape the model's ops
 * cannot take, is an error naming the input; the model is then unchanged. */
RN_API rn_status rn_model_reshape(rn_model *model, const char *name, const rn_partial_shape *shape);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_MODEL_H */
