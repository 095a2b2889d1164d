// oneDNN's LRN across channels (size 5, as Inception-v1's, AlexNet's and
// ZFNet's) over a channel-blocked layout (nChw8c), channels-last (nhwc) and
// plain (nchw), and the reorders between nChw8c and nchw, timed in one run:
// what plugins/cpu/nn.c's lrn_over_plain weighs (an LRN after a blocked
// producer runs over plain between two reorders). Prints per line the time
// (the 20th percentile of 30 runs, best of 5 rounds, microseconds), the
// implementation and the layout. Threads: OMP_NUM_THREADS. Not a test:
// timings on a shared machine are for same-run comparisons only.
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

struct candidate {
    primitive p;
    memory src, dst;
    std::string name;
};

static double time_us(stream &st, candidate &c, int reps)
{
    std::vector<double> t;
    for (int i = 0; i < reps; i++) {
        auto a = std::chrono::steady_clock::now();
        c.p.execute(st, {{DNNL_ARG_SRC, c.src}, {DNNL_ARG_DST, c.dst}});
        st.wait();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a)
                        .count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 5];
}

static void fill(memory &m)
{
    float *p = static_cast<float *>(m.get_data_handle());
    for (size_t i = 0; i < m.get_desc().get_size() / sizeof(float); i++)
        p[i] = static_cast<float>(i % 7) * 0.1f;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: lrn CHANNELS HW\n");
        return 2;
    }
    int c = std::atoi(argv[1]), hw = std::atoi(argv[2]);
    if (c <= 0 || hw <= 0) {
        std::fprintf(stderr, "lrn: CHANNELS and HW must be positive\n");
        return 2;
    }
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    memory::dims d = {1, c, hw, hw};
    std::vector<candidate> cs;
    const std::pair<tag, const char *> layouts[] = {
        {tag::nChw8c, "nChw8c"}, {tag::nhwc, "nhwc"}, {tag::nchw, "nchw"}};
    for (auto &l : layouts) {
        memory::desc md(d, dt::f32, l.first);
#if DNNL_VERSION_MAJOR >= 3
        lrn_forward::primitive_desc pd(eng, prop_kind::forward_inference,
                                       algorithm::lrn_across_channels, md, md, 5, 1e-4f, 0.75f,
                                       1.f);
#else
        lrn_forward::desc ld(prop_kind::forward_inference, algorithm::lrn_across_channels, md, 5,
                             1e-4f, 0.75f, 1.f);
        lrn_forward::primitive_desc pd(ld, eng);
#endif
        candidate k{lrn_forward(pd), memory(md, eng), memory(md, eng),
                    std::string("lrn ") + pd.impl_info_str() + " " + l.second};
        fill(k.src);
        cs.push_back(k);
    }
    for (int dir = 0; dir < 2; dir++) {
        memory::desc a(d, dt::f32, dir == 0 ? tag::nChw8c : tag::nchw),
            b(d, dt::f32, dir == 0 ? tag::nchw : tag::nChw8c);
        reorder::primitive_desc pd(eng, a, eng, b);
        candidate k{reorder(pd), memory(a, eng), memory(b, eng),
                    std::string("reorder ") + pd.impl_info_str() +
                        (dir == 0 ? " nChw8c->nchw" : " nchw->nChw8c")};
        fill(k.src);
        cs.push_back(k);
    }
    std::vector<double> best(cs.size(), 1e30);
    for (auto &k : cs)
        time_us(st, k, 5);
    for (int round = 0; round < 5; round++)
        for (size_t k = 0; k < cs.size(); k++)
            best[k] = std::min(best[k], time_us(st, cs[k], 30));
    std::printf("# oneDNN %d.%d.%d, LRN size 5, %d channels %dx%d\n", dnnl_version()->major,
                dnnl_version()->minor, dnnl_version()->patch, c, hw, hw);
    for (size_t k = 0; k < cs.size(); k++)
        std::printf("%9.1f us  %s\n", best[k], cs[k].name.c_str());
    return 0;
}
