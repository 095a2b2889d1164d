/* The model bench/overhead runs: a chain of Add nodes on a vector of floats,
 * y_0 = x, y_{i+1} = y_i + c_i, written as ONNX ModelProto bytes.
 *
 * runnel's public API reads models from files only, and the project's
 * protobuf-c types are not visible to bench/, so the few messages the model
 * needs are encoded here by hand (protobuf wire format, proto2 defaults). */
#ifndef RUNNEL_BENCH_OVERHEAD_CHAIN_MODEL_H
#define RUNNEL_BENCH_OVERHEAD_CHAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* Constant i of the chain, element j: small and exactly representable, so
 * runnel's result and the direct kernel calls' can be compared bit for bit. */
float chain_constant(int i, int j);

/* Encodes the chain of `n_nodes` Adds on `width` floats (opset 13; input "x",
 * output "y", constants "c0"..., nodes "add0"...) into a malloc'ed buffer.
 * Returns NULL when out of memory. */
uint8_t *chain_model_encode(int n_nodes, int width, size_t *size);

#endif /* RUNNEL_BENCH_OVERHEAD_CHAIN_MODEL_H */
