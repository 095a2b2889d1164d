// Shared by runnel's CUDA kernels: loads and stores as f32 of each element
// type (f32, f16, bf16: arithmetic is f32 for every one), the launchers'
// dispatch on an NVK_* type, activations, grid sizes.
#ifndef RUNNEL_PLUGINS_NVIDIA_KERNELS_COMMON_CUH
#define RUNNEL_PLUGINS_NVIDIA_KERNELS_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "plugins/nvidia/kernels.h"

namespace nvk {

__device__ __forceinline__ float load(const float *p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half *p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half *p, int64_t i, float v) { p[i] = __float2half(v); }
// bf16: round to nearest even, as the host's plugin_f32_to_bf16 (weights.c).
__device__ __forceinline__ float load(const __nv_bfloat16 *p, int64_t i)
{
    return __bfloat162float(p[i]);
}
__device__ __forceinline__ void store(__nv_bfloat16 *p, int64_t i, float v)
{
    p[i] = __float2bfloat16(v);
}
// v as an element of type T (rounded as store rounds).
template <typename T> __device__ __forceinline__ T to_elem(float v)
{
    T r;
    store(&r, 0, v);
    return r;
}

// Calls f(type_tag<T>{}) with T the element type of an NVK_* type (f32 for
// any other value), so that a launcher instantiates its kernel once per
// type:
//     with_type(type, [&](auto t) { using T = typename decltype(t)::type; ... });
template <typename T> struct type_tag {
    using type = T;
};
template <typename F> inline void with_type(int type, F &&f)
{
    switch (type) {
    case NVK_F16: f(type_tag<__half>{}); break;
    case NVK_BF16: f(type_tag<__nv_bfloat16>{}); break;
    default: f(type_tag<float>{}); break;
    }
}

// nv_act's numbers (plugins/nvidia/nvidia.h).
enum {
    ACT_NONE = 0, ACT_RELU, ACT_SIGMOID, ACT_TANH, ACT_LEAKY_RELU, ACT_CLIP, ACT_GELU,
    ACT_GELU_TANH, ACT_ERF, ACT_SQRT, ACT_EXP, ACT_NEG, ACT_ABS, ACT_RECIPROCAL, ACT_IDENTITY
};

__device__ __forceinline__ float activate(int act, float x, float alpha, float beta)
{
    switch (act) {
    case ACT_RELU: return x > 0.0f ? x : 0.0f;
    case ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case ACT_TANH: return tanhf(x);
    case ACT_LEAKY_RELU: return x >= 0.0f ? x : alpha * x;
    case ACT_CLIP: return fminf(fmaxf(x, alpha), beta);
    case ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case ACT_ERF: return erff(x);
    case ACT_SQRT: return sqrtf(x);
    case ACT_EXP: return expf(x);
    case ACT_NEG: return -x;
    case ACT_ABS: return fabsf(x);
    case ACT_RECIPROCAL: return 1.0f / x;
    default: return x;
    }
}

constexpr int kThreads = 256;

inline unsigned blocks(int64_t n)
{
    int64_t b = (n + kThreads - 1) / kThreads;
    if (b > 65535LL * 32)
        b = 65535LL * 32; // grid-stride loops cover the rest
    return (unsigned)(b > 0 ? b : 1);
}

#define NVK_FOR(i, n)                                                                          \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                  \
         i += (int64_t)gridDim.x * blockDim.x)

inline int launched() { return (int)cudaGetLastError(); }

} // namespace nvk

#endif
