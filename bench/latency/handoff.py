#!/usr/bin/env python3
"""Where an async request's time goes, from bench_latency --stamps DIR.

Issue 30: a request started with start_async under LATENCY should take no
longer than a sync infer. bench_latency --stamps DIR writes, for every
round (a process of its own by default), the CLOCK_MONOTONIC instants each
timed request was started (before start_async or infer) and returned (after
wait or infer), DEVICE-MODEL-MODE-PID.stamps, and the scheduler's trace of
the round, DEVICE-MODEL-MODE-PID.json (sched/trace.c: one event per DAG node
run, ts in µs from otherData.origin_ns). For each async request this lines
up the caller's instants with its run's node events (instance, run) and
splits its time into

  start   start_async called -> the first node (preprocess) starts on the worker
  work    first node start -> last node (callback) end: the pipeline on the worker
  gaps    the part of work between nodes (the worker ran none of the run's nodes)
  return  the last node's end -> the caller back from wait
  cb>ret  the callback stage's start -> the caller back from wait (the stage
          releases the waiter before it ends: return alone can be negative)
  to cb   first node start -> the callback stage's start: the request's own
          work, comparable with a sync request's total

and prints their medians (µs) per device, model and mode, beside the sync
requests' medians of the same run. Sync requests have no node events (they
run inline in the caller's thread): only their total.

  handoff.py DIR [--skip N]

--skip leaves out each round's first N timed requests.
"""
import argparse
import glob
import json
import os
import statistics
import sys


def load(base):
    with open(base + ".stamps") as f:
        stamps = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    runs = {}
    origin = None
    if os.path.exists(base + ".json"):
        with open(base + ".json") as f:
            doc = json.load(f)
        origin = doc.get("otherData", {}).get("origin_ns")
        for e in doc["traceEvents"]:
            if e.get("ph") != "X" or e.get("cat") != "node":
                continue
            a = e["args"]
            start = origin + float(e["ts"]) * 1000.0
            runs.setdefault((a["instance"], a["run"]), []).append(
                (start, start + float(e["dur"]) * 1000.0, e["name"], e["tid"]))
    return stamps, sorted((sorted(v) for v in runs.values()), key=lambda r: r[0][0])


def split(stamps, runs):
    """Per request (t0, t1) the run whose first node starts between them."""
    out = []
    j = 0
    for t0, t1 in stamps:
        while j < len(runs) and runs[j][0][0] < t0:
            j += 1
        if j == len(runs) or runs[j][0][0] > t1:
            continue
        ev = runs[j]
        first, last = ev[0][0], max(e[1] for e in ev)
        busy = sum(e[1] - e[0] for e in ev)
        # The callback stage: the run's last node (its only sink).
        cb = max(ev, key=lambda e: e[1])
        out.append({
            "total": (t1 - t0) / 1e3,
            "start": (first - t0) / 1e3,
            "work": (last - first) / 1e3,
            "to_callback": (cb[0] - first) / 1e3,
            "callback": (cb[1] - cb[0]) / 1e3,
            "gaps": (last - first - busy) / 1e3,
            "return": (t1 - last) / 1e3,
            "callback_return": (t1 - cb[0]) / 1e3,
            "nodes": len(ev),
            "threads": len({e[3] for e in ev}),
        })
        j += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--skip", type=int, default=0)
    args = ap.parse_args()
    groups = {}
    for path in sorted(glob.glob(os.path.join(args.dir, "*.stamps"))):
        base = path[:-len(".stamps")]
        device, model, mode, _pid = os.path.basename(base).rsplit("-", 3)
        stamps, runs = load(base)
        stamps = stamps[args.skip:]
        g = groups.setdefault((device, model), {"sync": [], "async": []})
        if mode == "sync":
            g["sync"].extend({"total": (t1 - t0) / 1e3} for t0, t1 in stamps)
        else:
            got = split(stamps, runs)
            if len(got) < len(stamps):
                print(f"{os.path.basename(base)}: {len(stamps) - len(got)} of {len(stamps)} "
                      "requests without node events", file=sys.stderr)
            g["async"].extend(got)
    med = statistics.median
    print("# µs per request, medians over every round's timed requests")
    for (device, model), g in sorted(groups.items()):
        s, a = g["sync"], g["async"]
        line = f"{device:6s} {model:14s}"
        if s:
            line += f" sync {med(r['total'] for r in s):9.1f} ({len(s)})"
        if a:
            line += (f"  async {med(r['total'] for r in a):9.1f} ({len(a)}):"
                     f" start {med(r['start'] for r in a):7.1f}"
                     f" work {med(r['work'] for r in a):9.1f}"
                     f" (gaps {med(r['gaps'] for r in a):6.1f},"
                     f" {med(r['nodes'] for r in a):.0f} nodes on"
                     f" {max(r['threads'] for r in a)} threads)"
                     f" return {med(r['return'] for r in a):7.1f}"
                     f" cb>ret {med(r['callback_return'] for r in a):7.1f}")
        if s and a:
            sync = med(r['total'] for r in s)
            line += (f"  async-sync {med(r['total'] for r in a) - sync:7.1f}"
                     f"  to cb-sync {med(r['to_callback'] for r in a) - sync:7.1f}")
        print(line)


if __name__ == "__main__":
    main()
