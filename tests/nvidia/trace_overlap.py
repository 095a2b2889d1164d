#!/usr/bin/env python3
"""One line about a Chrome trace of `tools/bench -trace` (ENABLE_TRACE) on
NVIDIA, for the NVIDIA_ASYNC_STAGES A/B (scripts/nvidia-harness async).

With NVIDIA_ASYNC_STAGES=YES each run's `wait` and `download` stages are
nodes of their own: between the end of its `wait` (armed: the GPU has the
work) and the start of its `download` (the stream callback came) the run is
pending, and the worker that armed it is free. The line says how many runs
were pending that way, for how long on average, how many at once at most,
and how many tasks of other runs started on that worker meanwhile (the
overlap the stages buy). With NO there are no such stages: the program's
node holds its worker while the GPU works, and the line gives that node's
mean time instead (the longest node).

    trace_overlap.py TRACE LABEL
"""
import collections
import json
import sys


def main(path, label):
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and e.get("cat") == "node"]
    runs = collections.defaultdict(dict)
    for e in events:
        runs[(e["args"]["instance"], e["args"]["run"])][e["name"]] = e
    pending = []  # (start, end, worker, run) from the wait's end to the download's start
    for key, stages in runs.items():
        if "wait" in stages and "download" in stages:
            w, d = stages["wait"], stages["download"]
            pending.append((w["ts"] + w["dur"], d["ts"], (w["pid"], w["tid"]), key))
    at_once, most = 0, 0
    for _, delta in sorted([(p[0], 1) for p in pending] + [(p[1], -1) for p in pending]):
        at_once += delta
        most = max(most, at_once)
    meanwhile = 0
    by_worker = collections.defaultdict(list)
    for e in events:
        by_worker[(e["pid"], e["tid"])].append(e)
    for start, end, worker, key in pending:
        meanwhile += sum(1 for e in by_worker[worker]
                         if start <= e["ts"] < end
                         and (e["args"]["instance"], e["args"]["run"]) != key)
    durations = collections.defaultdict(list)
    for e in events:
        durations[e["name"]].append(e["dur"])
    longest = max(durations, key=lambda n: sum(durations[n]) / len(durations[n]))
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
    print("trace %s: runs=%d pending_runs=%d pending_mean=%.3f ms max_pending_at_once=%d "
          "other_tasks_on_the_worker_meanwhile=%d longest_node=%s mean=%.3f ms"
          % (label, len(runs), len(pending), mean([p[1] - p[0] for p in pending]) / 1000, most,
             meanwhile, longest, mean(durations[longest]) / 1000))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
