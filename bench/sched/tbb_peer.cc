// The oneTBB flow-graph peer of bench/sched: the same workloads as bench_sched.c, built from
// continue_nodes, with the same task bodies (bench.h).
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/version.h>

#include "bench/sched/bench.h"

namespace flow = oneapi::tbb::flow;
using node_t = flow::continue_node<flow::continue_msg>;

struct tbb_peer {
    oneapi::tbb::global_control control;
    oneapi::tbb::task_arena arena;
    explicit tbb_peer(int threads)
        : control(oneapi::tbb::global_control::max_allowed_parallelism,
                  static_cast<size_t>(threads)),
          arena(threads)
    {
        arena.initialize();
    }
};

struct tbb_graph {
    flow::graph g;
    std::vector<std::unique_ptr<node_t>> nodes;
    node_t *source = nullptr;
};

extern "C" {

tbb_peer *tbb_peer_create(int threads)
{
    return new tbb_peer(threads);
}

void tbb_peer_destroy(tbb_peer *p)
{
    delete p;
}

const char *tbb_peer_version(void)
{
    static char buf[64];
    std::snprintf(buf, sizeof(buf), "oneTBB %d.%d (interface %d)", TBB_VERSION_MAJOR,
                  TBB_VERSION_MINOR, TBB_INTERFACE_VERSION);
    return buf;
}

static node_t *add_work_node(tbb_graph *t, uint64_t spin_ns)
{
    if (spin_ns != 0)
        t->nodes.emplace_back(
            new node_t(t->g, [spin_ns](const flow::continue_msg &) { bench_spin(spin_ns); }));
    else
        t->nodes.emplace_back(new node_t(t->g, [](const flow::continue_msg &) { bench_work(); }));
    return t->nodes.back().get();
}

tbb_graph *tbb_graph_chain(size_t n)
{
    tbb_graph *t = new tbb_graph;
    t->nodes.reserve(n);
    node_t *prev = nullptr;
    for (size_t i = 0; i < n; i++) {
        node_t *cur = add_work_node(t, 0);
        if (prev != nullptr)
            flow::make_edge(*prev, *cur);
        prev = cur;
    }
    t->source = t->nodes.front().get();
    return t;
}

tbb_graph *tbb_graph_fan(size_t n, uint64_t spin_ns, int with_sink)
{
    tbb_graph *t = new tbb_graph;
    t->nodes.reserve(n + 2);
    node_t *src = add_work_node(t, 0);
    node_t *sink = with_sink ? add_work_node(t, 0) : nullptr;
    for (size_t i = 0; i < n; i++) {
        node_t *mid = add_work_node(t, spin_ns);
        flow::make_edge(*src, *mid);
        if (sink != nullptr)
            flow::make_edge(*mid, *sink);
    }
    t->source = src;
    return t;
}

tbb_graph *tbb_graph_tree(size_t n)
{
    tbb_graph *t = new tbb_graph;
    t->nodes.reserve(n);
    for (size_t i = 0; i < n; i++)
        add_work_node(t, 0);
    for (size_t i = 0; i < n; i++) {
        if (2 * i + 1 < n)
            flow::make_edge(*t->nodes[i], *t->nodes[2 * i + 1]);
        if (2 * i + 2 < n)
            flow::make_edge(*t->nodes[i], *t->nodes[2 * i + 2]);
    }
    t->source = t->nodes.front().get();
    return t;
}

void tbb_graph_free(tbb_graph *g)
{
    delete g;
}

uint64_t tbb_graph_run(tbb_graph *t)
{
    uint64_t t0 = bench_now_ns();
    t->source->try_put(flow::continue_msg());
    t->g.wait_for_all();
    return bench_now_ns() - t0;
}

uint64_t tbb_wake_latency(tbb_peer *p, uint64_t idle_us)
{
    std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
    std::atomic<uint64_t> started{0};
    uint64_t t0 = bench_now_ns();
    p->arena.enqueue([&started] { started.store(bench_now_ns(), std::memory_order_release); });
    uint64_t t1;
    while ((t1 = started.load(std::memory_order_acquire)) == 0)
        std::this_thread::yield();
    return t1 - t0;
}

} // extern "C"
