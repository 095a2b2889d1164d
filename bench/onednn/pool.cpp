// Every implementation oneDNN lists for an f32 pooling (max, average with
// and without the padding), over nChw8c and nhwc, timed in one run: what
// plugins/cpu/nn.c's prefer_sse41_pooling weighs (oneDNN 2.6.3's AVX2
// pooling kernel against its SSE4.1 one). Prints per line the layout, the
// shape and, per implementation, the time (the 20th percentile of 40 runs,
// microseconds). Threads: OMP_NUM_THREADS. Not a test: timings on a shared
// machine are for same-run comparisons only.
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

int main(int argc, char **argv)
{
    if (argc != 8) {
        std::fprintf(stderr, "usage: pool C HW KERNEL STRIDE PAD max|avg_ex|avg_in nChw8c|nhwc\n");
        return 2;
    }
    int c = std::atoi(argv[1]), hw = std::atoi(argv[2]), k = std::atoi(argv[3]),
        s = std::atoi(argv[4]), p = std::atoi(argv[5]);
    std::string alg_name = argv[6], layout = argv[7];
    if (c <= 0 || hw <= 0 || k <= 0 || s <= 0 || p < 0 || hw + 2 * p < k) {
        std::fprintf(stderr, "pool: bad shape\n");
        return 2;
    }
    algorithm alg = alg_name == "max"      ? algorithm::pooling_max
                    : alg_name == "avg_ex" ? algorithm::pooling_avg_exclude_padding
                                           : algorithm::pooling_avg_include_padding;
    tag t = layout == "nhwc" ? tag::nhwc : tag::nChw8c;
    int oh = (hw + 2 * p - k) / s + 1;
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    memory::desc sd({1, c, hw, hw}, dt::f32, t), dd({1, c, oh, oh}, dt::f32, t);
#if DNNL_VERSION_MAJOR >= 3
    pooling_forward::primitive_desc pd(eng, prop_kind::forward_inference, alg, sd, dd, {s, s},
                                       {k, k}, {0, 0}, {p, p}, {p, p});
#else
    pooling_v2_forward::desc d(prop_kind::forward_inference, alg, sd, dd, {s, s}, {k, k}, {0, 0},
                               {p, p}, {p, p});
    pooling_v2_forward::primitive_desc pd(d, eng);
#endif
    std::string line;
    do {
        std::string impl = pd.impl_info_str();
        if (impl.find("ref") != std::string::npos || impl.find("simple") != std::string::npos)
            continue; // milliseconds per run, never a candidate
#if DNNL_VERSION_MAJOR >= 3
        pooling_forward prim(pd);
#else
        pooling_v2_forward prim(pd);
#endif
        memory src(sd, eng), dst(pd.dst_desc(), eng);
        float *f = static_cast<float *>(src.get_data_handle());
        for (size_t i = 0; i < sd.get_size() / sizeof(float); i++)
            f[i] = static_cast<float>(i % 7) * 0.1f;
        std::vector<double> times;
        for (int i = 0; i < 45; i++) {
            auto a = std::chrono::steady_clock::now();
            prim.execute(st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
            st.wait();
            if (i >= 5)
                times.push_back(std::chrono::duration<double, std::micro>(
                                    std::chrono::steady_clock::now() - a)
                                    .count());
        }
        std::sort(times.begin(), times.end());
        char buf[96];
        std::snprintf(buf, sizeof buf, "  %s %.0f", impl.c_str(), times[times.size() / 5]);
        line += buf;
    } while (pd.next_impl());
    std::printf("%s %d x %dx%d, %dx%d/%d pad %d %s:%s\n", layout.c_str(), c, hw, hw, k, k, s, p,
                alg_name.c_str(), line.c_str());
    return 0;
}
