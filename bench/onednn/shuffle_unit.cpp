// The pieces of a ShuffleNet v1 unit on oneDNN 2.x, one thread, timed side
// by side (bench/onednn/run --unit C HW THREADS): a grouped (4) 1x1
// convolution over plain activations with its post-ops inside the gemm
// primitive (ReLU; sum + ReLU) against the post-op-free gemm followed by a
// jit eltwise (in place) or binary add with the ReLU as post-op (runnel's
// split epilogue, plugins/cpu/conv.c); and the channel shuffle of a plain
// tensor into nChw8c as oneDNN's shuffle + a reorder against one reorder
// between strided views over [N, g, K/q, q, H, W] (plugins/cpu/nn.c,
// shuffle_into_blocked), whose outputs it checks equal. Prints the 20th
// percentile of 30 runs, best of 5 rounds, microseconds. Not a test:
// timings on a shared machine are for same-run comparisons only.
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

template <class F> static double time_us(F f)
{
    double best = 1e30;
    for (int round = 0; round < 6; round++) {
        std::vector<double> t;
        for (int i = 0; i < 30; i++) {
            auto a = std::chrono::steady_clock::now();
            f();
            t.push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a)
                    .count());
        }
        std::sort(t.begin(), t.end());
        if (round > 0) // the first round warms up
            best = std::min(best, t[t.size() / 5]);
    }
    return best;
}

static convolution_forward::primitive_desc conv_pd(engine &eng, const memory::desc &x,
                                                   const memory::desc &w, const memory::desc &b,
                                                   const post_ops &po)
{
    primitive_attr attr;
    attr.set_post_ops(po);
    convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct, x, w,
                                 b, x, {1, 1}, {0, 0}, {0, 0});
    return convolution_forward::primitive_desc(cd, attr, eng);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: shuffle_unit C HW\n");
        return 2;
    }
    long c = std::atol(argv[1]), hw = std::atol(argv[2]), g = 4, b = 8;
    long k = c / g, q = b / g, s = hw * hw;
    if (c <= 0 || hw <= 0 || c % g != 0 || k % q != 0) {
        std::fprintf(stderr, "shuffle_unit: C must be a positive multiple of 8\n");
        return 2;
    }
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    memory::desc x({1, c, hw, hw}, dt::f32, tag::nchw), blk({1, c, hw, hw}, dt::f32, tag::nChw8c);
    memory::desc w({g, c / g, c / g, 1, 1}, dt::f32, tag::any), bias({c}, dt::f32, tag::a);
    post_ops none, relu, sum_relu;
    relu.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    sum_relu.append_sum(1.f);
    sum_relu.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    auto pd_none = conv_pd(eng, x, w, bias, none), pd_relu = conv_pd(eng, x, w, bias, relu),
         pd_sum = conv_pd(eng, x, w, bias, sum_relu);
    convolution_forward c_none(pd_none), c_relu(pd_relu), c_sum(pd_sum);
    primitive_attr relu_attr;
    relu_attr.set_post_ops(relu);
    binary::primitive_desc add_pd(binary::desc(algorithm::binary_add, x, x, x), relu_attr, eng);
    binary add(add_pd);
    eltwise_forward::primitive_desc elt_pd(
        eltwise_forward::desc(prop_kind::forward_inference, algorithm::eltwise_relu, x, 0.f, 0.f),
        eng);
    eltwise_forward elt(elt_pd);
    memory src(x, eng), wei(pd_none.weights_desc(), eng), bm(bias, eng), tmp(x, eng), dst(x, eng),
        out(blk, eng);
    std::fill_n(static_cast<float *>(src.get_data_handle()), c * s, 0.5f);
    std::fill_n(static_cast<float *>(wei.get_data_handle()), wei.get_desc().get_size() / 4, 0.1f);
    auto conv = [&](convolution_forward &p, memory &to) {
        p.execute(st, {{DNNL_ARG_SRC, src},
                       {DNNL_ARG_WEIGHTS, wei},
                       {DNNL_ARG_BIAS, bm},
                       {DNNL_ARG_DST, to}});
    };
    std::printf("# oneDNN %d.%d.%d, C %ld, %ldx%ld, 4 groups, %s\n", dnnl_version()->major,
                dnnl_version()->minor, dnnl_version()->patch, c, hw, hw, pd_none.impl_info_str());
    std::printf("%9.1f us  conv, no post-ops\n", time_us([&] { conv(c_none, dst), st.wait(); }));
    std::printf("%9.1f us  conv + ReLU post-op (%s)\n",
                time_us([&] { conv(c_relu, dst), st.wait(); }), pd_relu.impl_info_str());
    std::printf("%9.1f us  conv, then eltwise ReLU in place (%s)\n", time_us([&] {
                    conv(c_none, dst);
                    elt.execute(st, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
                    st.wait();
                }),
                elt_pd.impl_info_str());
    std::printf("%9.1f us  conv + sum + ReLU post-ops (%s)\n",
                time_us([&] { conv(c_sum, dst), st.wait(); }), pd_sum.impl_info_str());
    std::printf(
        "%9.1f us  conv to scratch, then binary add + ReLU into the residual (%s)\n", time_us([&] {
            conv(c_none, tmp);
            add.execute(st, {{DNNL_ARG_SRC_0, dst}, {DNNL_ARG_SRC_1, tmp}, {DNNL_ARG_DST, dst}});
            st.wait();
        }),
        add_pd.impl_info_str());
    // The shuffle: output channel j*g + i is input channel i*k + j.
    memory::dims d6 = {1, g, k / q, q, hw, hw};
    memory::desc from(d6, dt::f32, memory::dims{c * s, k * s, q * s, s, hw, 1});
    memory::desc to(d6, dt::f32, memory::dims{c * s, 1, s * b, g, hw * b, b});
    reorder::primitive_desc one_pd(eng, from, eng, to), blk_pd(eng, x, eng, blk);
    reorder one(one_pd), to_blk(blk_pd);
    shuffle_forward::primitive_desc sh_pd(
        shuffle_forward::desc(prop_kind::forward_inference, x, 1, (int)k), eng);
    shuffle_forward sh(sh_pd);
    float *in = static_cast<float *>(src.get_data_handle());
    for (long i = 0; i < c * s; i++)
        in[i] = (float)i;
    memory out2(blk, eng);
    auto run_one = [&](memory &o) {
        memory f(from, eng, src.get_data_handle()), t(to, eng, o.get_data_handle());
        one.execute(st, {{DNNL_ARG_FROM, f}, {DNNL_ARG_TO, t}});
        st.wait();
    };
    auto run_two = [&](memory &o) {
        sh.execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, tmp}});
        to_blk.execute(st, {{DNNL_ARG_FROM, tmp}, {DNNL_ARG_TO, o}});
        st.wait();
    };
    run_one(out);
    run_two(out2);
    bool same = std::equal(static_cast<float *>(out.get_data_handle()),
                           static_cast<float *>(out.get_data_handle()) + c * s,
                           static_cast<float *>(out2.get_data_handle()));
    std::printf("%9.1f us  shuffle (%s) + reorder to nChw8c (%s)\n",
                time_us([&] { run_two(out2); }), sh_pd.impl_info_str(), blk_pd.impl_info_str());
    std::printf("%9.1f us  one reorder of strided views into nChw8c (%s)%s\n",
                time_us([&] { run_one(out); }), one_pd.impl_info_str(),
                same ? "" : "  OUTPUTS DIFFER");
    return same ? 0 : 1;
}
