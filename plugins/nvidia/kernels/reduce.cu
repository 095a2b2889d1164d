// Row reductions (LayerNormalization, ReduceMean over the last axis: one
// block per row, a shared-memory tree), 2D pooling for the pads cuDNN's
// pooling does not take and cross-channel LRN where cuDNN has none (bf16).
// Every launcher takes an NVK_* element type; sums are f32.
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

// A row's value at c: x plus the residual when there is one.
template <typename T>
__device__ __forceinline__ float row_at(const T *row, const T *res, int64_t c)
{
    return res != nullptr ? load(row, c) + load(res, c) : load(row, c);
}

template <typename T>
__global__ void layernorm_kernel(const T *x, const T *residual, const T *scale, const T *bias,
                                 float eps, T *y, int64_t cols)
{
    __shared__ float shared[kThreads];
    const T *row = x + (int64_t)blockIdx.x * cols;
    const T *res = residual != nullptr ? residual + (int64_t)blockIdx.x * cols : nullptr;
    T *out = y + (int64_t)blockIdx.x * cols;
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        sum += row_at(row, res, c);
    float mean = block_sum(sum, shared) / (float)cols;
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = row_at(row, res, c) - mean;
        sq += d * d;
    }
    float inv = rsqrtf(block_sum(sq, shared) / (float)cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = (row_at(row, res, c) - mean) * inv * load(scale, c);
        if (bias != nullptr)
            v += load(bias, c);
        store(out, c, v);
    }
}

// Rows of up to 32 x 32 features: one warp per row, the row in registers,
// mean and variance by shuffles (no shared memory, no block barriers).
constexpr int kRowWarps = 4;

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

template <typename T, int PER_LANE>
__global__ void layernorm_warp_kernel(const T *x, const T *residual, const T *scale,
                                      const T *bias, float eps, T *y, int64_t rows, int cols)
{
    int64_t row = (int64_t)blockIdx.x * kRowWarps + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    const T *in = x + row * cols;
    const T *res = residual != nullptr ? residual + row * cols : nullptr;
    T *out = y + row * cols;
    float v[PER_LANE];
    float sum = 0.0f;
#pragma unroll
    for (int t = 0; t < PER_LANE; t++) {
        int c = lane + 32 * t;
        v[t] = c < cols ? row_at(in, res, c) : 0.0f;
        sum += v[t];
    }
    float mean = warp_sum(sum) / (float)cols;
    float sq = 0.0f;
#pragma unroll
    for (int t = 0; t < PER_LANE; t++) {
        int c = lane + 32 * t;
        float d = c < cols ? v[t] - mean : 0.0f;
        sq += d * d;
    }
    float inv = rsqrtf(warp_sum(sq) / (float)cols + eps);
#pragma unroll
    for (int t = 0; t < PER_LANE; t++) {
        int c = lane + 32 * t;
        if (c < cols) {
            float r = (v[t] - mean) * inv * load(scale, c);
            if (bias != nullptr)
                r += load(bias, c);
            store(out, c, r);
        }
    }
}

template <typename T>
static void layernorm_typed(nvk_stream s, const void *x, const void *residual, const void *scale,
                            const void *bias, float eps, void *y, int64_t rows, int64_t cols)
{
    const T *xt = (const T *)x, *rt = (const T *)residual, *st = (const T *)scale,
            *bt = (const T *)bias;
    T *yt = (T *)y;
    unsigned grid = (unsigned)((rows + kRowWarps - 1) / kRowWarps);
    if (cols <= 256)
        layernorm_warp_kernel<T, 8><<<grid, kRowWarps * 32, 0, s>>>(xt, rt, st, bt, eps, yt, rows,
                                                                   (int)cols);
    else if (cols <= 1024)
        layernorm_warp_kernel<T, 32><<<grid, kRowWarps * 32, 0, s>>>(xt, rt, st, bt, eps, yt, rows,
                                                                    (int)cols);
    else
        layernorm_kernel<<<(unsigned)rows, kThreads, 0, s>>>(xt, rt, st, bt, eps, yt, cols);
}

extern "C" int nvk_layernorm(nvk_stream s, int type, const void *x, const void *residual,
                             const void *scale, const void *bias, float eps, void *y,
                             int64_t rows, int64_t cols)
{
    if (rows <= 0)
        return 0;
    with_type(type, [&](auto t) {
        layernorm_typed<typename decltype(t)::type>(s, x, residual, scale, bias, eps, y, rows,
                                                    cols);
    });
    return launched();
}

// The attention's additive mask over a row of scores (nvk_attention_softmax):
// row = (b * heads + h) * sq + i; values clamped to -1e30 as the fused
// attention kernel does, so that a row whose keys are all masked (-inf)
// averages them as the f32 graph does instead of dividing 0 by 0.
struct row_mask {
    const void *data; // nullptr: none (a plain Softmax)
    int64_t heads, sq;
    int64_t strides[4]; // batch, head, query, key
};

constexpr float kMaskFloor = -1e30f;

// Where row `row`'s mask starts (nullptr: no mask).
template <typename T>
__device__ __forceinline__ const T *mask_row(const row_mask &mk, int64_t row)
{
    if (mk.data == nullptr)
        return nullptr;
    int64_t i = row % mk.sq, bh = row / mk.sq, b = bh / mk.heads, h = bh % mk.heads;
    return (const T *)mk.data + b * mk.strides[0] + h * mk.strides[1] + i * mk.strides[2];
}

// x[c] plus the clamped mask when there is one.
template <typename T>
__device__ __forceinline__ float masked(const T *in, const T *mrow, int64_t key_stride, int64_t c)
{
    float v = load(in, c);
    return mrow != nullptr ? v + fmaxf(load(mrow, c * key_stride), kMaskFloor) : v;
}

// Softmax over rows of up to 1024 values: one warp per row in registers;
// longer rows loop over memory three times. In place when y is x (each lane
// writes only what it has read). With a mask, the attention's scores.
template <typename T, int PER_LANE>
__global__ void softmax_warp_kernel(const T *x, T *y, int64_t rows, int64_t cols, row_mask mk)
{
    int64_t row = (int64_t)blockIdx.x * kRowWarps + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows)
        return;
    const T *in = x + row * cols;
    T *out = y + row * cols;
    const T *mrow = mask_row<T>(mk, row);
    const int64_t ks = mk.strides[3];
    if (PER_LANE == 0) {
        float m = -INFINITY;
        for (int64_t c = lane; c < cols; c += 32)
            m = fmaxf(m, masked(in, mrow, ks, c));
        for (int off = 16; off > 0; off /= 2)
            m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        float sum = 0.0f;
        for (int64_t c = lane; c < cols; c += 32)
            sum += __expf(masked(in, mrow, ks, c) - m);
        float inv = 1.0f / warp_sum(sum);
        for (int64_t c = lane; c < cols; c += 32)
            store(out, c, __expf(masked(in, mrow, ks, c) - m) * inv);
        return;
    }
    float v[PER_LANE > 0 ? PER_LANE : 1];
    float m = -INFINITY;
#pragma unroll
    for (int t = 0; t < PER_LANE; t++) {
        int64_t c = lane + 32 * t;
        v[t] = c < cols ? masked(in, mrow, ks, c) : -INFINITY;
        m = fmaxf(m, v[t]);
    }
    for (int off = 16; off > 0; off /= 2)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    float sum = 0.0f;
#pragma unroll
    for (int t = 0; t < PER_LANE; t++) {
        v[t] = lane + 32 * t < cols ? __expf(v[t] - m) : 0.0f;
        sum += v[t];
    }
    float inv = 1.0f / warp_sum(sum);
#pragma unroll
    for (int t = 0; t < PER_LANE; t++) {
        int64_t c = lane + 32 * t;
        if (c < cols)
            store(out, c, v[t] * inv);
    }
}

template <typename T>
static void softmax_typed(nvk_stream s, const void *x, void *y, int64_t rows, int64_t cols,
                          const row_mask &mk)
{
    unsigned grid = (unsigned)((rows + kRowWarps - 1) / kRowWarps);
    const T *xt = (const T *)x;
    T *yt = (T *)y;
    if (cols <= 128)
        softmax_warp_kernel<T, 4><<<grid, kRowWarps * 32, 0, s>>>(xt, yt, rows, cols, mk);
    else if (cols <= 512)
        softmax_warp_kernel<T, 16><<<grid, kRowWarps * 32, 0, s>>>(xt, yt, rows, cols, mk);
    else if (cols <= 1024)
        softmax_warp_kernel<T, 32><<<grid, kRowWarps * 32, 0, s>>>(xt, yt, rows, cols, mk);
    else
        softmax_warp_kernel<T, 0><<<grid, kRowWarps * 32, 0, s>>>(xt, yt, rows, cols, mk);
}

extern "C" int nvk_softmax(nvk_stream s, int type, const void *x, void *y, int64_t rows,
                           int64_t cols)
{
    if (rows <= 0 || cols <= 0)
        return 0;
    row_mask none = {nullptr, 1, 1, {0, 0, 0, 0}};
    with_type(type, [&](auto t) {
        softmax_typed<typename decltype(t)::type>(s, x, y, rows, cols, none);
    });
    return launched();
}

extern "C" int nvk_attention_softmax(nvk_stream s, int type, const nvk_attention_args *a,
                                     void *scores, const void *mask)
{
    int64_t rows = a->batch * a->heads * a->sq;
    if (rows <= 0 || a->sk <= 0)
        return 0;
    row_mask mk = {mask, a->heads, a->sq, {0, 0, 0, 0}};
    for (int d = 0; d < 4; d++)
        mk.strides[d] = a->mask_strides[d];
    with_type(type, [&](auto t) {
        softmax_typed<typename decltype(t)::type>(s, scores, scores, rows, a->sk, mk);
    });
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

extern "C" int nvk_reduce_mean(nvk_stream s, int type, const void *x, void *y, int64_t rows,
                               int64_t cols)
{
    if (rows <= 0)
        return 0;
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        reduce_mean_kernel<<<(unsigned)rows, kThreads, 0, s>>>((const T *)x, (T *)y, cols);
    });
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

extern "C" int nvk_pool2d(nvk_stream s, int type, int mode, int include_pad, const void *x,
                          void *y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t oh,
                          int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                          int64_t pad_top, int64_t pad_left, int64_t pad_bottom,
                          int64_t pad_right)
{
    pool_args a = {mode, include_pad, h,  w,  oh,      ow,       kh,
                   kw,   sh,          sw, pad_top, pad_left, pad_bottom, pad_right};
    int64_t total = n * c * oh * ow;
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        pool_kernel<<<blocks(total), kThreads, 0, s>>>((const T *)x, (T *)y, a, total);
    });
    return launched();
}

// ONNX's LRN of NCHW: y = x / (bias + alpha / size * sum of x^2 over the
// channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2))^beta,
// one thread per element, the window read from memory (sizes are small).
template <typename T>
__global__ void lrn_kernel(const T *x, T *y, int64_t channels, int64_t inner, int64_t size,
                           float alpha, float beta, float bias, int64_t n)
{
    NVK_FOR(i, n)
    {
        int64_t c = i / inner % channels;
        int64_t lo = c - (size - 1) / 2, hi = c + size / 2;
        const T *at = x + (i - c * inner);
        float sum = 0.0f;
        for (int64_t k = lo > 0 ? lo : 0; k <= hi && k < channels; k++) {
            float v = load(at, k * inner);
            sum += v * v;
        }
        store(y, i, load(x, i) * powf(bias + alpha / (float)size * sum, -beta));
    }
}

extern "C" int nvk_lrn(nvk_stream s, int type, const void *x, void *y, int64_t outer,
                       int64_t channels, int64_t inner, int64_t size, float alpha, float beta,
                       float bias)
{
    int64_t n = outer * channels * inner;
    if (n <= 0)
        return 0;
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        lrn_kernel<<<blocks(n), kThreads, 0, s>>>((const T *)x, (T *)y, channels, inner, size,
                                                  alpha, beta, bias, n);
    });
    return launched();
}
