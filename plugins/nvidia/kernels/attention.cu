// Fused scaled-dot-product attention: y = Softmax(scale * Q K^T + mask) V
// per (batch, head), the scores never leaving the chip (flash attention's
// online softmax over tiles of keys).
//
// f16 and bf16 with head sizes up to 128: tensor cores through WMMA
// (16x16x16, f32 accumulation; bf16 fragments need sm_80, which is the
// oldest architecture built, and the plugin offers bf16 from compute
// capability 8.0 only). A block of 4 warps takes 64 query rows of one (batch,
// head); each warp 16 of them. For each tile of 64 keys the block loads K
// and V into shared memory, each warp computes its 16x64 scores, updates
// its rows' running maximum and sum, rescales its running output (in shared
// memory, f32) and adds P V (P rounded to the element type, as the
// products read it). Everything else (f32, larger heads) runs the
// scalar kernel: one warp per query row, the same online softmax.
//
// Q, K, V, the mask and the output are read and written with element
// strides over (batch, head, row, feature), so the head split of
// [B, S, H, D] tensors needs no copy. Mask values are clamped to -1e30 so
// that a row whose keys are all masked (-inf in f16) averages them as the
// f32 graph does instead of dividing 0 by 0.
#include <mma.h>

#include "plugins/nvidia/kernels/common.cuh"

using namespace nvk;
using namespace nvcuda;

namespace {

constexpr int kBlockRows = 64; // query rows per block (16 per warp)
constexpr int kTileKeys = 64;  // keys per tile
constexpr int kWarps = 4;
constexpr float kMaskFloor = -1e30f;
constexpr int kSmemSlack = 128; // bytes to align the tensor-core kernel's shared memory

struct geometry {
    int64_t q[4], k[4], v[4], o[4], m[4]; // strides: batch, head, row, feature
    int heads, sq, sk, d, dv;
    float scale;
    int has_mask;
};

template <typename T>
__device__ __forceinline__ float mask_at(const geometry &g, const T *mask, int64_t b, int64_t h,
                                         int64_t i, int64_t j)
{
    if (!g.has_mask)
        return 0.0f;
    int64_t off = b * g.m[0] + h * g.m[1] + i * g.m[2] + j * g.m[3];
    return fmaxf(load(mask, off), kMaskFloor);
}

// ---- tensor cores (f16, bf16) ----

// Rows of a [rows, width] tile of `src` (strides over row and feature) into
// shared memory [rows][ld], zeros beyond `valid` rows and `width` features.
template <typename T>
__device__ void load_tile(T *dst, int ld, const T *src, int64_t row_stride, int64_t feat_stride,
                          int rows, int valid, int width, int padded, bool vec)
{
    if (vec) { // 8 features (16 bytes) at a time: feat_stride 1, aligned
        int chunks = padded / 8;
        for (int idx = threadIdx.x; idx < rows * chunks; idx += blockDim.x) {
            int r = idx / chunks, c = (idx % chunks) * 8;
            uint4 val = make_uint4(0, 0, 0, 0);
            if (r < valid && c < width)
                val = *(const uint4 *)(src + r * row_stride + c);
            *(uint4 *)(dst + r * ld + c) = val;
        }
        return;
    }
    for (int idx = threadIdx.x; idx < rows * padded; idx += blockDim.x) {
        int r = idx / padded, c = idx % padded;
        dst[r * ld + c] =
            r < valid && c < width ? src[r * row_stride + c * feat_stride] : to_elem<T>(0.0f);
    }
}

template <typename T>
__global__ void attention_wmma(geometry g, const T *q, const T *k, const T *v, const T *mask, T *o,
                               int dp, int dvp, bool vec)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    // WMMA loads and stores need 32-byte aligned tiles. The declared
    // alignment of dynamic shared memory is a compile-time promise; the base
    // is rounded up here too (the launch asks for kSmemSlack bytes more), so
    // that the tiles stay aligned wherever a tool or driver puts the window.
    unsigned char *smem =
        (unsigned char *)(((uintptr_t)smem_raw + (kSmemSlack - 1)) & ~(uintptr_t)(kSmemSlack - 1));
    const int ldq = dp + 8, ldv = dvp + 8, lds = kTileKeys + 4, ldp = kTileKeys + 8,
              ldo = dvp + 4;
    T *qs = (T *)smem;
    T *ks = qs + kBlockRows * ldq;
    T *vs = ks + kTileKeys * ldq;
    float *ss = (float *)(vs + kTileKeys * ldv);
    T *ps = (T *)(ss + kWarps * 16 * lds);
    float *os = (float *)(ps + kWarps * 16 * ldp);

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t bh = blockIdx.y, b = bh / g.heads, h = bh % g.heads;
    const int row0 = blockIdx.x * kBlockRows;
    const T *qb = q + b * g.q[0] + h * g.q[1] + row0 * g.q[2];
    const T *kb = k + b * g.k[0] + h * g.k[1];
    const T *vb = v + b * g.v[0] + h * g.v[1];

    load_tile(qs, ldq, qb, g.q[2], g.q[3], kBlockRows, g.sq - row0, g.d, dp, vec);
    float *ow = os + warp * 16 * ldo;
    for (int idx = lane; idx < 16 * ldo; idx += 32)
        ow[idx] = 0.0f;
    float *sw = ss + warp * 16 * lds;
    T *pw = ps + warp * 16 * ldp;

    // Lane -> (row, half of the columns), fixed for the whole block.
    const int r = lane / 2, part = lane % 2;
    const int64_t qi = row0 + warp * 16 + r;
    float m_run = -INFINITY, l_run = 0.0f;

    for (int key0 = 0; key0 < g.sk; key0 += kTileKeys) {
        __syncthreads(); // the previous tile is consumed
        load_tile(ks, ldq, kb + key0 * g.k[2], g.k[2], g.k[3], kTileKeys, g.sk - key0, g.d, dp,
                  vec);
        load_tile(vs, ldv, vb + key0 * g.v[2], g.v[2], g.v[3], kTileKeys, g.sk - key0, g.dv, dvp,
                  vec);
        __syncthreads();

        // S (16 x 64) = Q_w (16 x dp) K^T (dp x 64).
        for (int n = 0; n < kTileKeys / 16; n++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.0f);
            for (int kk = 0; kk < dp; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
                wmma::load_matrix_sync(fa, qs + warp * 16 * ldq + kk, ldq);
                wmma::load_matrix_sync(fb, ks + n * 16 * ldq + kk, ldq);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(sw + n * 16, acc, lds, wmma::mem_row_major);
        }
        __syncwarp();

        // Online softmax of row r over this tile's 32 columns of the lane.
        float s[32];
        float tile_max = -INFINITY;
#pragma unroll
        for (int c = 0; c < 32; c++) {
            int col = part * 32 + c;
            int64_t j = key0 + col;
            float x = -INFINITY;
            if (j < g.sk && qi < g.sq)
                x = sw[r * lds + col] * g.scale + mask_at(g, mask, b, h, qi, j);
            s[c] = x;
            tile_max = fmaxf(tile_max, x);
        }
        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
        float m_new = fmaxf(m_run, tile_max);
        float alpha = m_new == -INFINITY ? 1.0f : __expf(m_run - m_new);
        float sum = 0.0f;
#pragma unroll
        for (int c = 0; c < 32; c++) {
            float p = m_new == -INFINITY ? 0.0f : __expf(s[c] - m_new);
            sum += p;
            pw[r * ldp + part * 32 + c] = to_elem<T>(p);
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        l_run = l_run * alpha + sum;
        m_run = m_new;
        for (int c = part; c < dvp; c += 2)
            ow[r * ldo + c] *= alpha;
        __syncwarp();

        // O_w (16 x dvp) += P_w (16 x 64) V (64 x dvp).
        for (int n = 0; n < dvp / 16; n++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::load_matrix_sync(acc, ow + n * 16, ldo, wmma::mem_row_major);
            for (int kk = 0; kk < kTileKeys; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
                wmma::load_matrix_sync(fa, pw + kk, ldp);
                wmma::load_matrix_sync(fb, vs + kk * ldv + n * 16, ldv);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(ow + n * 16, acc, ldo, wmma::mem_row_major);
        }
        __syncwarp();
    }

    if (qi >= g.sq)
        return;
    float inv = l_run > 0.0f ? 1.0f / l_run : 0.0f;
    T *ob = o + b * g.o[0] + h * g.o[1] + qi * g.o[2];
    for (int c = part; c < g.dv; c += 2)
        store(ob, c * g.o[3], ow[r * ldo + c] * inv);
}

// ---- any type, any head size up to 256: one warp per query row ----

constexpr int kMaxPerLane = 8; // 256 features

template <typename T>
__global__ void attention_rows(geometry g, const T *q, const T *k, const T *v, const T *mask,
                               T *o, int64_t rows)
{
    extern __shared__ __align__(128) unsigned char smem[];
    const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *qrow = (float *)smem + warp * g.d;
    int64_t row = (int64_t)blockIdx.x * warps + warp;
    if (row >= rows)
        return;
    int64_t i = row % g.sq, bh = row / g.sq, b = bh / g.heads, h = bh % g.heads;
    const T *qb = q + b * g.q[0] + h * g.q[1] + i * g.q[2];
    const T *kb = k + b * g.k[0] + h * g.k[1];
    const T *vb = v + b * g.v[0] + h * g.v[1];
    for (int c = lane; c < g.d; c += 32)
        qrow[c] = load(qb, c * g.q[3]);
    __syncwarp();
    float acc[kMaxPerLane];
    for (int t = 0; t < kMaxPerLane; t++)
        acc[t] = 0.0f;
    float m_run = -INFINITY, l_run = 0.0f;
    for (int j0 = 0; j0 < g.sk; j0 += 32) {
        int j = j0 + lane;
        float s = -INFINITY;
        if (j < g.sk) {
            const T *kr = kb + j * g.k[2];
            float dot = 0.0f;
            for (int c = 0; c < g.d; c++)
                dot += qrow[c] * load(kr, c * g.k[3]);
            s = dot * g.scale + mask_at(g, mask, b, h, i, j);
        }
        float tile_max = s;
        for (int off = 16; off > 0; off /= 2)
            tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
        float m_new = fmaxf(m_run, tile_max);
        float alpha = m_new == -INFINITY ? 1.0f : __expf(m_run - m_new);
        float p = m_new == -INFINITY ? 0.0f : __expf(s - m_new);
        float sum = p;
        for (int off = 16; off > 0; off /= 2)
            sum += __shfl_xor_sync(0xffffffffu, sum, off);
        l_run = l_run * alpha + sum;
        m_run = m_new;
        for (int t = 0; t < kMaxPerLane; t++)
            acc[t] *= alpha;
        int n = g.sk - j0 < 32 ? g.sk - j0 : 32;
        for (int jj = 0; jj < n; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            const T *vr = vb + (j0 + jj) * g.v[2];
            for (int t = 0; t < kMaxPerLane; t++) {
                int c = lane + 32 * t;
                if (c < g.dv)
                    acc[t] += pj * load(vr, c * g.v[3]);
            }
        }
    }
    float inv = l_run > 0.0f ? 1.0f / l_run : 0.0f;
    T *ob = o + b * g.o[0] + h * g.o[1] + i * g.o[2];
    for (int t = 0; t < kMaxPerLane; t++) {
        int c = lane + 32 * t;
        if (c < g.dv)
            store(ob, c * g.o[3], acc[t] * inv);
    }
}

// The tensor-core kernel's launch for element type T (f16 or bf16).
template <typename T>
int attention_tensor_cores(nvk_stream s, const geometry &g, int64_t bh, const void *q,
                           const void *k, const void *v, const void *mask, void *o)
{
    int dp = (g.d + 15) / 16 * 16, dvp = (g.dv + 15) / 16 * 16;
    bool vec = g.d % 8 == 0 && g.dv % 8 == 0 && g.q[3] == 1 && g.k[3] == 1 && g.v[3] == 1;
    for (int d = 0; d < 3 && vec; d++)
        vec = g.q[d] % 8 == 0 && g.k[d] % 8 == 0 && g.v[d] % 8 == 0;
    vec = vec && ((uintptr_t)q | (uintptr_t)k | (uintptr_t)v) % 16 == 0;
    size_t bytes = sizeof(T) * ((size_t)kBlockRows * (dp + 8) + (size_t)kTileKeys * (dp + 8) +
                                (size_t)kTileKeys * (dvp + 8)) +
                   sizeof(float) * (size_t)kWarps * 16 * (kTileKeys + 4) +
                   sizeof(T) * (size_t)kWarps * 16 * (kTileKeys + 8) +
                   sizeof(float) * (size_t)kWarps * 16 * (dvp + 4) + kSmemSlack;
    cudaError_t e = cudaFuncSetAttribute(attention_wmma<T>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess)
        return (int)e;
    dim3 grid((unsigned)((g.sq + kBlockRows - 1) / kBlockRows), (unsigned)bh);
    attention_wmma<T><<<grid, kWarps * 32, bytes, s>>>(g, (const T *)q, (const T *)k,
                                                       (const T *)v, (const T *)mask, (T *)o, dp,
                                                       dvp, vec);
    return launched();
}

} // namespace

extern "C" int nvk_attention(nvk_stream s, int type, const nvk_attention_args *a, const void *q,
                             const void *k, const void *v, const void *mask, void *o, int mode)
{
    geometry g;
    for (int d = 0; d < 4; d++) {
        g.q[d] = a->q_strides[d];
        g.k[d] = a->k_strides[d];
        g.v[d] = a->v_strides[d];
        g.o[d] = a->o_strides[d];
        g.m[d] = a->mask_strides[d];
    }
    g.heads = (int)a->heads;
    g.sq = (int)a->sq;
    g.sk = (int)a->sk;
    g.d = (int)a->d;
    g.dv = (int)a->dv;
    g.scale = a->scale;
    g.has_mask = mask != nullptr;
    int64_t bh = a->batch * a->heads;
    if (bh <= 0 || g.sq <= 0)
        return 0;
    if (g.d > 256 || g.dv > 256 || bh > 65535)
        return (int)cudaErrorInvalidValue;
    if (type != NVK_F32 && mode != NVK_ATTENTION_ROWS && g.d <= 128 && g.dv <= 128)
        return type == NVK_BF16
                   ? attention_tensor_cores<__nv_bfloat16>(s, g, bh, q, k, v, mask, o)
                   : attention_tensor_cores<__half>(s, g, bh, q, k, v, mask, o);
    const int warps = 4;
    int64_t rows = bh * g.sq;
    size_t bytes = sizeof(float) * (size_t)warps * (size_t)g.d;
    unsigned grid = (unsigned)((rows + warps - 1) / warps);
    with_type(type, [&](auto t) {
        using T = typename decltype(t)::type;
        attention_rows<<<grid, warps * 32, bytes, s>>>(g, (const T *)q, (const T *)k,
                                                       (const T *)v, (const T *)mask, (T *)o,
                                                       rows);
    });
    return launched();
}
