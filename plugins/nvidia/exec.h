/* A program on the device (exec.c): weights, prepared steps, request
 * slots; the partition kernel's state. Needs a device. */
#ifndef RUNNEL_PLUGINS_NVIDIA_EXEC_H
#define RUNNEL_PLUGINS_NVIDIA_EXEC_H

#include "plugins/nvidia/nvidia.h"

typedef struct nv_exec nv_exec;

typedef struct nv_exec_options {
    int device;
    bool allow_tf32;
    bool cuda_graph; /* capture each slot's steps into a CUDA graph after a warm-up run */
    int max_slots;   /* request slots made on demand (arena, stream, handles) */
} nv_exec_options;

/* Takes `prog` over (freed on failure too). input_names are the
 * partition's, in the order the kernel's args.inputs come. */
rn_status nv_exec_create(nv_program *prog, const char *const *input_names, int n_inputs,
                         const nv_exec_options *o, nv_exec **out);
/* Runs the program for one request (the partition kernel's run). */
rn_status nv_exec_run(nv_exec *x, const rn_kernel_args *args);
/* NVIDIA_STEP_TIMING: CUDA events between the steps of each run, and the
 * sum of the steps' times of the last such run (ns): each layer alone, the
 * limit the benchmark compares with. */
void nv_exec_set_timing(nv_exec *x, bool on);
uint64_t nv_exec_steps_ns(const nv_exec *x);
/* The last timed run's time per step kind, costliest first:
 * "cublas_gemm 72x 5.120 ms; cuda_attention 12x 0.800 ms; ...". */
void nv_exec_step_profile(nv_exec *x, char *buf, size_t size);
const char *nv_exec_impl(const nv_exec *x);
const nv_program *nv_exec_program(const nv_exec *x);
void nv_exec_free(nv_exec *x);
/* Pinned host memory (cudaHostAlloc, portable): NVIDIA's host tensors and
 * request arenas, which the DMA engine copies without staging. */
rn_status nv_host_alloc(size_t size, void **data);
void nv_host_free(void *data);

#endif /* RUNNEL_PLUGINS_NVIDIA_EXEC_H */
