// An Inception block's sibling 1x1 convolutions (same input, stride 1, no
// padding, bias, ReLU post-op) timed as separate primitives against one
// convolution with their output channels concatenated (horizontal fusion,
// issue 30). Source nChw8c (what runnel's plan gives these convolutions on
// AVX2), weights and destination format any. Prints the shape, the sum of
// the separate convolutions' times and the merged one's (the minimum
// and the 20th percentile of 60 runs, microseconds), in ROUNDS alternating rounds.
// Threads: OMP_NUM_THREADS. Not a test: timings on a shared machine are for
// same-run comparisons only.
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct conv {
    convolution_forward prim;
    memory w, b, dst;
};

static conv make(engine &eng, const memory::desc &sd, int ic, int oc, int hw)
{
    memory::desc wd({oc, ic, 1, 1}, dt::f32, tag::any), bd({oc}, dt::f32, tag::x),
        dd({1, oc, hw, hw}, dt::f32, tag::any);
    post_ops po;
    po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    primitive_attr attr;
    attr.set_post_ops(po);
#if DNNL_VERSION_MAJOR >= 3
    convolution_forward::primitive_desc pd(eng, prop_kind::forward_inference,
                                           algorithm::convolution_direct, sd, wd, bd, dd, {1, 1},
                                           {0, 0}, {0, 0}, attr);
#else
    convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, sd, wd,
                                bd, dd, {1, 1}, {0, 0}, {0, 0});
    convolution_forward::primitive_desc pd(d, attr, eng);
#endif
    conv c{convolution_forward(pd), memory(pd.weights_desc(), eng), memory(bd, eng),
           memory(pd.dst_desc(), eng)};
    std::fill_n(static_cast<float *>(c.w.get_data_handle()),
                pd.weights_desc().get_size() / sizeof(float), 0.01f);
    std::fill_n(static_cast<float *>(c.b.get_data_handle()), oc, 0.1f);
    static bool shown;
    if (!shown || std::getenv("SHOW_IMPL"))
        std::fprintf(stderr, "  impl %s\n", pd.impl_info_str());
    shown = true;
    return c;
}

struct timing {
    double min, p20;
};

static timing time_us(stream &st, std::vector<conv> &cs, memory &src)
{
    std::vector<double> times;
    for (int i = 0; i < 70; i++) {
        auto a = std::chrono::steady_clock::now();
        for (auto &c : cs)
            c.prim.execute(st, {{DNNL_ARG_SRC, src},
                                {DNNL_ARG_WEIGHTS, c.w},
                                {DNNL_ARG_BIAS, c.b},
                                {DNNL_ARG_DST, c.dst}});
        st.wait();
        if (i >= 10)
            times.push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a)
                    .count());
    }
    std::sort(times.begin(), times.end());
    return {times[0], times[times.size() / 5]};
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: sibling_conv ROUNDS IC HW OC1 OC2 [OC3 ...]\n");
        return 2;
    }
    int rounds = std::atoi(argv[1]), ic = std::atoi(argv[2]), hw = std::atoi(argv[3]);
    std::vector<int> ocs;
    int total = 0;
    for (int i = 4; i < argc; i++) {
        ocs.push_back(std::atoi(argv[i]));
        total += ocs.back();
    }
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    memory::desc sd({1, ic, hw, hw}, dt::f32, tag::nChw8c);
    memory src(sd, eng);
    std::fill_n(static_cast<float *>(src.get_data_handle()), sd.get_size() / sizeof(float), 0.5f);
    std::vector<conv> sep, merged;
    for (int oc : ocs)
        sep.push_back(make(eng, sd, ic, oc, hw));
    merged.push_back(make(eng, sd, ic, total, hw));
    std::string name =
        std::to_string(ic) + " x " + std::to_string(hw) + "x" + std::to_string(hw) + " ->";
    for (int oc : ocs)
        name += " " + std::to_string(oc);
    for (int r = 0; r < rounds; r++) {
        timing s = time_us(st, sep, src), m = time_us(st, merged, src);
        std::printf("%s: min separate %.0f merged %.0f (%.2fx), p20 separate %.0f merged %.0f "
                    "(%.2fx)\n",
                    name.c_str(), s.min, m.min, s.min / m.min, s.p20, m.p20, s.p20 / m.p20);
        std::fflush(stdout);
    }
    return 0;
}
