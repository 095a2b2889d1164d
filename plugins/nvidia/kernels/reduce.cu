// Row reductions (LayerNormalization, ReduceMean over the last axis: one
// block per row, a shared-memory tree) and 2D pooling for the pads cuDNN's
// pooling does not take.
#include "plugins/nvidia/kernels/common.cuh"

using namespace nvk;

// Sum of v over the block (every thread gets it).
__device__ float block_sum(float v, float *shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if ((int)threadIdx.x < step)
            shared[threadIdx.x] += shared[threadIdx.x + step];
        __syncthreads();
    }
    float r = shared[0];
    __syncthreads();
    return r;
}

template <typename T>
__global__ void layernorm_kernel(const T *x, const T *scale, const T *bias, float eps, T *y,
                                 int64_t cols)
{
    __shared__ float shared[kThreads];
    const T *row = x + (int64_t)blockIdx.x * cols;
    T *out = y + (int64_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        sum += load(row, c);
    float mean = block_sum(sum, shared) / (float)cols;
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = load(row, c) - mean;
        sq += d * d;
    }
    float inv = rsqrtf(block_sum(sq, shared) / (float)cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = (load(row, c) - mean) * inv * load(scale, c);
        if (bias != nullptr)
            v += load(bias, c);
        store(out, c, v);
    }
}

extern "C" int nvk_layernorm(nvk_stream s, int half, const void *x, const void *scale,
                             const void *bias, float eps, void *y, int64_t rows, int64_t cols)
{
    if (rows <= 0)
        return 0;
    if (half)
        layernorm_kernel<<<(unsigned)rows, kThreads, 0, s>>>(
            (const __half *)x, (const __half *)scale, (const __half *)bias, eps, (__half *)y, cols);
    else
        layernorm_kernel<<<(unsigned)rows, kThreads, 0, s>>>(
            (const float *)x, (const float *)scale, (const float *)bias, eps, (float *)y, cols);
    return launched();
}

template <typename T> __global__ void reduce_mean_kernel(const T *x, T *y, int64_t cols)
{
    __shared__ float shared[kThreads];
    const T *row = x + (int64_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        sum += load(row, c);
    float total = block_sum(sum, shared);
    if (threadIdx.x == 0)
        store(y, blockIdx.x, total / (float)cols);
}

extern "C" int nvk_reduce_mean(nvk_stream s, int half, const void *x, void *y, int64_t rows,
                               int64_t cols)
{
    if (rows <= 0)
        return 0;
    if (half)
        reduce_mean_kernel<<<(unsigned)rows, kThreads, 0, s>>>((const __half *)x, (__half *)y,
                                                               cols);
    else
        reduce_mean_kernel<<<(unsigned)rows, kThreads, 0, s>>>((const float *)x, (float *)y, cols);
    return launched();
}

struct pool_args {
    int mode, include_pad;
    int64_t h, w, oh, ow, kh, kw, sh, sw, pt, pl, pb, pr;
};

template <typename T> __global__ void pool_kernel(const T *x, T *y, pool_args a, int64_t n)
{
    NVK_FOR(i, n)
    {
        int64_t ox = i % a.ow, oy = i / a.ow % a.oh, plane = i / a.ow / a.oh;
        const T *src = x + plane * a.h * a.w;
        int64_t y0 = oy * a.sh - a.pt, x0 = ox * a.sw - a.pl;
        float acc = a.mode == 0 ? -3.402823466e38f : 0.0f;
        int64_t count = 0;
        for (int64_t ky = 0; ky < a.kh; ky++)
            for (int64_t kx = 0; kx < a.kw; kx++) {
                int64_t yy = y0 + ky, xx = x0 + kx;
                bool inside = yy >= 0 && yy < a.h && xx >= 0 && xx < a.w;
                if (inside) {
                    float v = load(src, yy * a.w + xx);
                    acc = a.mode == 0 ? fmaxf(acc, v) : acc + v;
                    count++;
                } else if (a.include_pad && yy < a.h + a.pb && xx < a.w + a.pr) {
                    count++; // a pad position (not beyond the explicit end pads)
                }
            }
        store(y, i, a.mode == 0 ? acc : acc / (float)(count > 0 ? count : 1));
    }
}

extern "C" int nvk_pool2d(nvk_stream s, int half, int mode, int include_pad, const void *x,
                          void *y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
                          int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                          int64_t pad_top, int64_t pad_left, int64_t pad_bottom,
                          int64_t pad_right)
{
    pool_args a = {mode, include_pad, h,  w,  oh,      ow,       kh,
                   kw,   sh,          sw, pad_top, pad_left, pad_bottom, pad_right};
    int64_t total = n * c * oh * ow;
    if (half)
        pool_kernel<<<blocks(total), kThreads, 0, s>>>((const __half *)x, (__half *)y, a, total);
    else
        pool_kernel<<<blocks(total), kThreads, 0, s>>>((const float *)x, (float *)y, a, total);
    return launched();
}
