#!/usr/bin/env python3
"""How much the device stages of different requests overlapped, from a trace.

Reads a Chrome trace-event JSON written by rn_compiled_model_write_trace
(tools/bench -trace, bench/pipeline --trace) of a device that adds its own
commands as events {"cat": "device", "args": {"request": k, "stage":
"upload"|"execute"|"download"}} (the GPU device: OpenCL event timestamps,
plugins/gpu/trace.c), and prints, over the window from the first device
command to the last:

- each stage's busy time (the union of its commands, any request) and its
  share of the window;
- the time with commands of at least two different requests running, as a
  share of the time the device ran anything;
- for each pair of stages (A, B), the time during which a command of stage A
  of one request and a command of stage B of another request ran at once
  ("upload|execute": request i uploading while request j != i computes).

  trace_overlap.py TRACE.json [--json]
"""
import argparse
import itertools
import json
import sys

STAGES = ("upload", "execute", "download")


def device_events(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    out = []
    for e in events:
        if e.get("cat") != "device" or e.get("ph") != "X":
            continue
        args = e.get("args", {})
        if args.get("stage") not in STAGES or "request" not in args:
            continue
        start = float(e["ts"])
        end = start + float(e["dur"])
        if end > start:
            out.append((start, end, int(args["request"]), args["stage"]))
    return out


def analyse(events):
    """Sweeps the commands' start and end points (microseconds)."""
    points = []
    for start, end, request, stage in events:
        points.append((start, 1, request, stage))
        points.append((end, -1, request, stage))
    points.sort(key=lambda p: (p[0], p[1]))  # ends before starts at a tie
    active = {}  # (request, stage) -> commands running
    busy = dict.fromkeys(STAGES, 0.0)
    pairs = {p: 0.0 for p in itertools.combinations_with_replacement(STAGES, 2)}
    any_busy = 0.0
    multi = 0.0
    last = None
    for t, delta, request, stage in points:
        if last is not None and t > last and active:
            dt = t - last
            keys = list(active)
            any_busy += dt
            if len({r for r, _ in keys}) >= 2:
                multi += dt
            for s in STAGES:
                if any(k[1] == s for k in keys):
                    busy[s] += dt
            for a, b in pairs:
                if any(ka[1] == a and kb[1] == b and ka[0] != kb[0] for ka in keys for kb in keys):
                    pairs[(a, b)] += dt
        key = (request, stage)
        active[key] = active.get(key, 0) + delta
        if active[key] == 0:
            del active[key]
        last = t
    window = max(e[1] for e in events) - min(e[0] for e in events)
    return {
        "commands": len(events),
        "requests": len({e[2] for e in events}),
        "window_us": window,
        "device_busy_us": any_busy,
        "stage_busy_us": busy,
        "two_or_more_requests_us": multi,
        "pairs_us": {f"{a}|{b}": v for (a, b), v in pairs.items()},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    a = ap.parse_args()
    events = device_events(a.trace)
    if not events:
        print(f"{a.trace}: no device events (cat 'device' with args request and stage): "
              "was it written by a device that traces its commands, with ENABLE_TRACE=YES?",
              file=sys.stderr)
        return 1
    r = analyse(events)
    if a.json:
        print(json.dumps(r, indent=1))
        return 0
    w, b = r["window_us"], r["device_busy_us"]
    print(f"{r['commands']} device commands of {r['requests']} request arenas over "
          f"{w / 1000:.1f} ms; the device ran something {b / 1000:.1f} ms ({b / w:.0%})")
    for s in STAGES:
        v = r["stage_busy_us"][s]
        print(f"  {s:9s} busy {v / 1000:9.1f} ms  {v / w:6.1%} of the window")
    m = r["two_or_more_requests_us"]
    print(f"commands of >= 2 different requests at once: {m / 1000:.1f} ms, "
          f"{m / b if b else 0:.1%} of the device's busy time")
    print("stage of one request | stage of another, running at once:")
    for k, v in r["pairs_us"].items():
        print(f"  {k:18s} {v / 1000:9.1f} ms  {v / b if b else 0:6.1%} of busy time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
