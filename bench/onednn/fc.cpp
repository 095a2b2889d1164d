// A transformer encoder's products by constant weights (y[M, N] = x[M, K] @ W[K, N] + b, with
// GELU or a residual sum), every way oneDNN can compute them, timed in one run: a matmul
// with weights in the layout it picks (oneDNN 2.6 on AVX2: plain, gemm:jit), an inner product
// (layouts its pick), and a 1x1 convolution over x viewed as an image of M rows and one
// column, channels last (nhwc: x's own bytes, no reorder), weights in the convolution's
// blocked layout, converted once. Builds against oneDNN 2.x (Debian's libdnnl) or 3.x (PyPI's
// onednn-devel-cpu-gomp): bench/onednn/run --fc. Prints, per line, the time (the 20th
// percentile of 30 runs, best of 5 rounds, microseconds), GFLOP/s, the primitive, its
// implementation and the epilogue. Threads: OMP_NUM_THREADS. FC_DT=bf16: x, W and y in bf16
// (the bias f32), as the CPU device runs the products in bf16. Not a test: timings on a
// shared machine are for same-run comparisons only.
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct candidate {
    primitive p;
    std::unordered_map<int, memory> args;
    std::string name;
};

static double time_us(stream &st, candidate &c, int reps)
{
    std::vector<double> t;
    for (int i = 0; i < reps; i++) {
        auto a = std::chrono::steady_clock::now();
        c.p.execute(st, c.args);
        st.wait();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a)
                        .count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 5];
}

static memory filled(const memory::desc &d, const engine &eng, float v)
{
    memory m(d, eng);
    if (d.data_type() == dt::bf16) { // the upper half of each f32
        unsigned short *p = static_cast<unsigned short *>(m.get_data_handle());
        for (size_t i = 0; i < d.get_size() / sizeof *p; i++) {
            float f = v * (float)((i % 7) + 1) / 7.f;
            unsigned u;
            std::memcpy(&u, &f, sizeof u);
            p[i] = (unsigned short)(u >> 16);
        }
        return m;
    }
    float *p = static_cast<float *>(m.get_data_handle());
    for (size_t i = 0; i < d.get_size() / sizeof(float); i++)
        p[i] = v * (float)((i % 7) + 1) / 7.f;
    return m;
}

enum { NONE, GELU, SUM };
static const char *post_names[] = {"bias", "bias+gelu_erf", "bias+sum"};

static primitive_attr make_attr(int post)
{
    post_ops po;
    if (post == SUM)
        po.append_sum(1.f);
#if DNNL_VERSION_MAJOR >= 3
    if (post == GELU)
        po.append_eltwise(algorithm::eltwise_gelu_erf, 0.f, 0.f);
#else
    if (post == GELU)
        po.append_eltwise(1.f, algorithm::eltwise_gelu_erf, 0.f, 0.f);
#endif
    primitive_attr attr;
    attr.set_post_ops(po);
    return attr;
}

template <typename PD>
static void add(std::vector<candidate> &cs, const engine &eng, PD &pd, const memory::desc &plain,
                const char *what, int post, bool all)
{
    do {
        std::string impl = pd.impl_info_str();
        if (impl.find("ref") != std::string::npos)
            continue; // minutes per run, never a candidate
        candidate c;
        c.args = {{DNNL_ARG_SRC, filled(pd.src_desc(), eng, 1.f)},
                  {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), eng, 0.01f)},
                  {DNNL_ARG_BIAS, filled(pd.bias_desc(), eng, 0.1f)},
                  {DNNL_ARG_DST, filled(pd.dst_desc(), eng, 1.f)}};
        c.p = typename PD::primitive_kind_t(pd);
        std::string wtag = pd.weights_desc() == plain ? "plain weights" : "weights in its layout";
        c.name = std::string(what) + " " + impl + ", " + wtag + ", " + post_names[post];
        cs.push_back(std::move(c));
    } while (all && pd.next_impl());
}

struct mm_pd : matmul::primitive_desc {
    using primitive_kind_t = matmul;
    using matmul::primitive_desc::primitive_desc;
};
struct ip_pd : inner_product_forward::primitive_desc {
    using primitive_kind_t = inner_product_forward;
    using inner_product_forward::primitive_desc::primitive_desc;
};
struct conv_pd : convolution_forward::primitive_desc {
    using primitive_kind_t = convolution_forward;
    using convolution_forward::primitive_desc::primitive_desc;
};

int main(int argc, char **argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: fc M K N\n");
        return 2;
    }
    long m = std::atol(argv[1]), k = std::atol(argv[2]), n = std::atol(argv[3]);
    if (m <= 0 || k <= 0 || n <= 0) {
        std::fprintf(stderr, "fc: M, K and N must be positive\n");
        return 2;
    }
    const char *dts = std::getenv("FC_DT");
    const dt a = dts != nullptr && std::string(dts) == "bf16" ? dt::bf16 : dt::f32;
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    std::vector<candidate> cs;
    for (int post = NONE; post <= SUM; post++) {
        primitive_attr attr = make_attr(post);
        // matmul: x [1, M, K] plain, W [1, K, N] any, b [1, 1, N], y [1, M, N] plain
        // (what plugins/cpu/gemm.c asks for).
        memory::desc x({1, m, k}, a, tag::abc), w({1, k, n}, a, tag::any),
            b({1, 1, n}, dt::f32, tag::abc), y({1, m, n}, a, tag::abc);
#if DNNL_VERSION_MAJOR >= 3
        mm_pd mpd(eng, x, w, b, y, attr);
#else
        mm_pd mpd(matmul::desc(x, w, b, y), attr, eng);
#endif
        add(cs, eng, mpd, memory::desc({1, k, n}, a, tag::abc), "matmul", post, false);
        // inner product: x [M, K] plain, W [N, K] any, y [M, N] plain.
        memory::desc x2({m, k}, a, tag::ab), w2({n, k}, a, tag::any), b2({n}, dt::f32, tag::a),
            y2({m, n}, a, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
        ip_pd ipd(eng, prop_kind::forward_inference, x2, w2, b2, y2, attr);
#else
        ip_pd ipd(inner_product_forward::desc(prop_kind::forward_inference, x2, w2, b2, y2), attr,
                  eng);
#endif
        add(cs, eng, ipd, memory::desc({n, k}, a, tag::ab), "inner product", post, false);
        // 1x1 convolution: x as [1, K, M, 1] nhwc (the same bytes as [M, K]), W [N, K, 1, 1]
        // any, y [1, N, M, 1] nhwc.
        memory::desc x3({1, k, m, 1}, a, tag::nhwc), w3({n, k, 1, 1}, a, tag::any),
            b3({n}, dt::f32, tag::a), y3({1, n, m, 1}, a, tag::nhwc);
#if DNNL_VERSION_MAJOR >= 3
        conv_pd cpd(eng, prop_kind::forward_inference, algorithm::convolution_direct, x3, w3, b3,
                    y3, {1, 1}, {0, 0}, {0, 0}, attr);
#else
        conv_pd cpd(convolution_forward::desc(prop_kind::forward_inference,
                                              algorithm::convolution_direct, x3, w3, b3, y3, {1, 1},
                                              {0, 0}, {0, 0}),
                    attr, eng);
#endif
        add(cs, eng, cpd, memory::desc({n, k, 1, 1}, a, tag::abcd), "conv 1x1 nhwc", post,
            true);
    }
    std::vector<double> best(cs.size(), 1e30);
    for (auto &c : cs)
        time_us(st, c, 5);
    for (int round = 0; round < 5; round++)
        for (size_t i = 0; i < cs.size(); i++)
            best[i] = std::min(best[i], time_us(st, cs[i], 30));
    const char *thr = std::getenv("OMP_NUM_THREADS");
    std::printf("# oneDNN %d.%d.%d, %s, M %ld K %ld N %ld, OMP_NUM_THREADS %s\n",
                dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch,
                a == dt::bf16 ? "bf16" : "f32", m, k, n, thr ? thr : "unset");
    double flop = 2.0 * m * k * n;
    for (size_t i = 0; i < cs.size(); i++)
        std::printf("%9.1f us %6.1f GFLOP/s  %s\n", best[i], flop / best[i] / 1e3,
                    cs[i].name.c_str());
    return 0;
}
