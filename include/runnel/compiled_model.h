/* A model compiled for one device: creates infer requests. */
#ifndef RUNNEL_COMPILED_MODEL_H
#define RUNNEL_COMPILED_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "runnel/api.h"
#include "runnel/core.h"
#include "runnel/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rn_infer_request rn_infer_request;

/* Releases a compiled model. Its infer requests keep it alive until they are
 * freed too. NULL is a no-op. */
RN_API void rn_compiled_model_free(rn_compiled_model *compiled);

/* The device the model was compiled for ("REF"). */
RN_API const char *rn_compiled_model_device(const rn_compiled_model *compiled);

RN_API size_t rn_compiled_model_input_count(const rn_compiled_model *compiled);
RN_API size_t rn_compiled_model_output_count(const rn_compiled_model *compiled);
RN_API rn_status rn_compiled_model_input(const rn_compiled_model *compiled, size_t index,
                                         rn_port *out);
RN_API rn_status rn_compiled_model_output(const rn_compiled_model *compiled, size_t index,
                                          rn_port *out);

/* Reads a property of the compiled model into buf (NUL-terminated).
 * RN_NOT_FOUND names an unknown key; RN_INVALID_ARG when buf is too small. */
RN_API rn_status rn_compiled_model_get_property(const rn_compiled_model *compiled, const char *key,
                                                char *buf, size_t size);

/* Changes properties of a compiled model: ENABLE_PROFILING (from the next
 * run of each request) and LOG_LEVEL. A key fixed at compile time (streams,
 * hints, precision, ...) is RN_INVALID_ARG saying so; an unknown key or a
 * bad value is an error naming it; nothing changes then. */
RN_API rn_status rn_compiled_model_set_property(rn_compiled_model *compiled,
                                                const rn_property *properties, size_t n_properties);

/* One stage of the request pipeline and the executor it runs on:
 * "stream" (the task executor of the request's stream), "device-wait"
 * (device completions) or "callback". */
typedef struct rn_pipeline_stage {
    const char *stage; /* "preprocess", "upload", "infer", "wait", ... */
    const char *executor;
} rn_pipeline_stage;

/* The stages an infer request runs through, in order (owned by the
 * compiled model). Every stage is a node of the request's task DAG. */
RN_API rn_status rn_compiled_model_pipeline(const rn_compiled_model *compiled,
                                            const rn_pipeline_stage **stages, size_t *count);

/* One node of the runtime model: what the device runs, in execution order. */
typedef struct rn_runtime_node {
    const char *name;
    const char *layer_type; /* the op ("Convolution" in OpenVINO; here the ONNX op) */
    int execution_order;
    const char *impl_type;      /* the kernel implementation ("ref") */
    int64_t perf_counter_us;    /* time in the last profiled run; -1: not_executed */
    const char *original_names; /* the model's node names it stands for, comma-separated */
    /* The layout of each input / output, comma-separated ("plain",
     * "nChw16c"). Conversions the plan inserted are nodes of their own
     * (layer_type "Reorder"), as are partitions ("Partition"). */
    const char *input_layouts;
    const char *output_layouts;
    /* Why the device's first kernel for this node refused it (a oneDNN
     * primitive that cannot be created for these shapes), so that impl_type
     * names the kernel it fell back to ("ref"); NULL when none did. */
    const char *fallback;
} rn_runtime_node;

/* The runtime model: one entry per node the device runs. The array is owned
 * by the compiled model and valid until the next call or its release. */
RN_API rn_status rn_compiled_model_runtime_model(rn_compiled_model *compiled,
                                                 const rn_runtime_node **nodes, size_t *count);

/* Writes a Chrome trace-event JSON file (opens in Perfetto) of every task
 * the compiled model's streams ran so far: each stage and kernel of every
 * request, per stream and worker. Needs ENABLE_TRACE=YES at compile time;
 * compiled models with the same stream configuration share their executors,
 * and so their trace. */
RN_API rn_status rn_compiled_model_write_trace(const rn_compiled_model *compiled, const char *path);

/* Exports the compiled model into a blob that rn_core_import_model reads
 * back: *data is malloc'ed and the caller frees it with free(). */
RN_API rn_status rn_compiled_model_export(const rn_compiled_model *compiled, void **data,
                                          size_t *size);

/* Creates an infer request with its own input and output buffers. */
RN_API rn_status rn_compiled_model_create_infer_request(rn_compiled_model *compiled,
                                                        rn_infer_request **out);

#ifdef __cplusplus
}
#endif

#endif /* RUNNEL_COMPILED_MODEL_H */
