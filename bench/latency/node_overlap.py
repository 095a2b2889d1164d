#!/usr/bin/env python3
"""How much of each request's time ran two DAG nodes at once, from a trace.

Branch parallelism under LATENCY (issue 30): one request's independent
nodes (Inception's branches, DenseNet's, an encoder's Q/K/V) may run at
once on the stream's workers. Reads a Chrome trace-event JSON written by
rn_compiled_model_write_trace (tools/bench -trace PATH, ENABLE_TRACE=YES):
the scheduler's task events ({"ph": "X", "args": {"instance", "run",
"node"}}, sched/trace.c). For each run of a request (instance, run), over
the span from its first task's start to its last task's end, it sums the
time at least two of its tasks ran at once and the time at least one did,
and prints, over the runs: the median share of the span with two or more
tasks running, the median span, the median busy time (any task running)
and the most tasks seen running at once.

  node_overlap.py TRACE.json [--skip N] [--json]

--skip drops each request's first N runs (warm-up: the first run of a
request creates its memory objects). Device events (cat "device", the GPU's
OpenCL commands) are left out: they are not DAG nodes. Under branch
parallelism (the CPU device under LATENCY, plugins/api/branch.c) the chains
of nodes are "branch" events of their own: then only those count.
"""
import argparse
import json
import statistics
import sys


def runs_of(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    # Branch parallelism (plugins/api/branch.c): the request's chains of
    # nodes run inside one scheduler task and are events of their own, cat
    # "branch" (instance the request, run a process-wide count); where there
    # are any, they are the nodes, and the scheduler's tasks are left out.
    branches = any(e.get("cat") == "branch" for e in events)
    runs = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") == "device":
            continue
        if branches and e.get("cat") != "branch":
            continue
        args = e.get("args", {})
        if "instance" not in args or "run" not in args:
            continue
        start = float(e["ts"])
        runs.setdefault((args["instance"], args["run"]), []).append(
            (start, start + float(e["dur"]), args.get("forked", 0)))
    return runs


def overlap(intervals):
    """(span, busy, two_or_more, most) of a list of (start, end) in µs."""
    points = []
    for s, e, _ in intervals:
        points.append((s, 1))
        points.append((e, -1))
    points.sort(key=lambda p: (p[0], p[1]))  # ends before starts at a tie
    running = most = 0
    busy = two = 0.0
    last = points[0][0]
    for t, d in points:
        if running >= 1:
            busy += t - last
        if running >= 2:
            two += t - last
        running += d
        most = max(most, running)
        last = t
    span = max(e for _, e, _ in intervals) - min(s for s, _, _ in intervals)
    return span, busy, two, most


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--skip", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    runs = runs_of(a.trace)
    kept = [v for (inst, run), v in sorted(runs.items()) if run > a.skip and v]
    if not kept:
        print("no request runs in the trace (ENABLE_TRACE=YES, more than --skip runs)",
              file=sys.stderr)
        return 1
    stats = [overlap(v) for v in kept]
    out = {
        "runs": len(stats),
        "tasks_per_run": statistics.median(len(v) for v in kept),
        "span_us": statistics.median(s[0] for s in stats),
        "busy_us": statistics.median(s[1] for s in stats),
        "two_or_more_share": statistics.median(s[2] / s[0] if s[0] > 0 else 0.0 for s in stats),
        "most_at_once": max(s[3] for s in stats),
        # Branch events: the share of chains run in a fork (one thread of
        # the team each; the others ran alone on the whole team).
        "forked_share": statistics.median(sum(1 for x in v if x[2]) / len(v) for v in kept),
    }
    if a.json:
        print(json.dumps(out))
    else:
        print("%d runs, %g tasks each: span %.1f us, busy %.1f us, two or more tasks at once "
              "%.1f %% of the span (median), at most %d at once"
              % (out["runs"], out["tasks_per_run"], out["span_us"], out["busy_us"],
                 100 * out["two_or_more_share"], out["most_at_once"]))
        if any(x[2] for v in kept for x in v):
            print("chains run in a fork (one thread each): %.1f %% (median)"
                  % (100 * out["forked_share"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
