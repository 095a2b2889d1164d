// Every implementation oneDNN lists for a grouped 1x1 convolution, timed in
// one run: activations plain (nchw), channels-last (nhwc) and the primitive's
// pick (any); post-ops none, ReLU, sum + ReLU (a FusedConv residual); groups
// as given. Builds against oneDNN 2.x (Debian's libdnnl) or 3.x (PyPI's
// onednn-devel-cpu-gomp): bench/onednn/run. Prints, per line, the time (the
// 20th percentile of 30 runs, best of 5 rounds, microseconds), the
// implementation, the layout asked for and the post-ops. Not a test: timings
// on a shared machine are for same-run comparisons only.
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

struct candidate {
    primitive p;
    memory src, wei, bias, dst;
    std::string name;
};

static double time_us(stream &st, candidate &c, int reps)
{
    std::vector<double> t;
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, c.src},
                                         {DNNL_ARG_WEIGHTS, c.wei},
                                         {DNNL_ARG_BIAS, c.bias},
                                         {DNNL_ARG_DST, c.dst}};
    for (int i = 0; i < reps; i++) {
        auto a = std::chrono::steady_clock::now();
        c.p.execute(st, args);
        st.wait();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a)
                        .count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 5];
}

static void fill(memory &m, float v)
{
    float *p = static_cast<float *>(m.get_data_handle());
    for (size_t i = 0; i < m.get_desc().get_size() / sizeof(float); i++)
        p[i] = v;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: grouped_conv IC OC HW GROUPS\n");
        return 2;
    }
    int ic = std::atoi(argv[1]), oc = std::atoi(argv[2]), hw = std::atoi(argv[3]),
        g = std::atoi(argv[4]);
    if (ic <= 0 || oc <= 0 || hw <= 0 || g <= 0 || ic % g != 0 || oc % g != 0) {
        std::fprintf(stderr, "grouped_conv: IC and OC must be positive multiples of GROUPS\n");
        return 2;
    }
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    memory::dims sd = {1, ic, hw, hw}, dd = {1, oc, hw, hw};
    memory::dims wd = g > 1 ? memory::dims{g, oc / g, ic / g, 1, 1} : memory::dims{oc, ic, 1, 1};
    const char *post_names[] = {"none", "relu", "sum+relu"};
    std::vector<candidate> cs;
    for (tag t : {tag::nchw, tag::nhwc, tag::any}) {
        for (int post = 0; post < 3; post++) {
            post_ops po;
            if (post == 2)
                po.append_sum(1.f);
#if DNNL_VERSION_MAJOR >= 3
            if (post >= 1)
                po.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f);
#else
            if (post >= 1)
                po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
#endif
            primitive_attr attr;
            attr.set_post_ops(po);
            memory::desc src(sd, dt::f32, t), wei(wd, dt::f32, tag::any),
                bias({oc}, dt::f32, tag::a), dst(dd, dt::f32, t);
#if DNNL_VERSION_MAJOR >= 3
            convolution_forward::primitive_desc pd(eng, prop_kind::forward_inference,
                                                   algorithm::convolution_direct, src, wei, bias,
                                                   dst, {1, 1}, {0, 0}, {0, 0}, attr);
#else
            convolution_forward::desc cd(prop_kind::forward_inference,
                                         algorithm::convolution_direct, src, wei, bias, dst, {1, 1},
                                         {0, 0}, {0, 0});
            convolution_forward::primitive_desc pd(cd, attr, eng);
#endif
            do {
                std::string impl = pd.impl_info_str();
                if (impl.find("ref") != std::string::npos ||
                    impl.find("sse41") != std::string::npos)
                    continue; // minutes per run, never a candidate
                candidate c;
                c.p = convolution_forward(pd);
                c.src = memory(pd.src_desc(), eng);
                c.wei = memory(pd.weights_desc(), eng);
                c.bias = memory(pd.bias_desc(), eng);
                c.dst = memory(pd.dst_desc(), eng);
                fill(c.src, 1.f);
                fill(c.dst, 1.f);
                c.name = impl + " " +
                         (t == tag::nchw   ? "nchw"
                          : t == tag::nhwc ? "nhwc"
                                           : "any") +
                         " " + post_names[post];
                cs.push_back(c);
            } while (pd.next_impl());
        }
    }
    std::vector<double> best(cs.size(), 1e30);
    for (auto &c : cs)
        time_us(st, c, 10);
    for (int round = 0; round < 5; round++)
        for (size_t k = 0; k < cs.size(); k++)
            best[k] = std::min(best[k], time_us(st, cs[k], 30));
    std::printf("# oneDNN %d.%d.%d, ic %d oc %d %dx%d, %d groups\n", dnnl_version()->major,
                dnnl_version()->minor, dnnl_version()->patch, ic, oc, hw, hw, g);
    for (size_t k = 0; k < cs.size(); k++)
        std::printf("%9.1f us  %s\n", best[k], cs[k].name.c_str());
    return 0;
}
