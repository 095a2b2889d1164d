#!/usr/bin/env python3
"""Peak memory of runnel against OpenVINO, measured in the same run.

For each model (ResNet-50 from the onnx wheel's light models by default),
runs runnel's tools/bench on a device (REF by default) and OpenVINO's CPU
plugin on the same model, each in a process of its own, with the throughput
hint, the same number of requests in flight (4) and the same number of
inferences (after one warm-up), and prints each process's peak resident set
(ru_maxrss from wait4, the kernel's VmHWM of the process) and the ratio
runnel / OpenVINO (lower is better). OpenVINO runs at f32
(INFERENCE_PRECISION_HINT), as REF does.

A process's peak includes what it holds before it reads a model: its
libraries, and for OpenVINO the Python interpreter. So each line also
prints that floor (runnel: tools/bench -h; OpenVINO: the process's resident
set after importing openvino and numpy) and the peak above it, with their
ratio. Not a test: it never fails on a number.

  bench/models/run --memory [--device REF] [--nireq 4] [--niter 16] [MODEL ...]
"""
import argparse
import json
import os
import re
import sys
import time

from common import cpu_line, rss_kib, run_measured


def runnel_peak(bench, path, device, nireq, niter):
    code, out, peak = run_measured(
        [bench, "-m", path, "-d", device, "-hint", "throughput", "-api", "async",
         "-nireq", str(nireq), "-niter", str(niter),
         # f32, as OpenVINO below: CPU's default is bf16 on CPUs with native bf16.
         "-infer_precision", "f32"])
    if code != 0:
        raise RuntimeError(f"tools/bench exited {code}:\n{out[-2000:]}")
    streams = re.search(r"NUM_STREAMS\W+(\w+)", out)
    fps = re.search(r"Throughput:\s+([0-9.]+) FPS", out)
    return {"peak_kib": peak, "streams": streams.group(1) if streams else "?",
            "fps": float(fps.group(1)) if fps else 0.0}


def runnel_floor(bench):
    _, _, peak = run_measured([bench, "-h"])
    return peak


def openvino_child(path, nireq, niter):
    """Runs in its own process: OpenVINO with nireq requests in flight."""
    import numpy as np
    import openvino as ov

    floor = rss_kib("VmRSS")
    core = ov.Core()
    compiled = core.compile_model(core.read_model(path), "CPU", {
        "PERFORMANCE_HINT": "THROUGHPUT",
        "PERFORMANCE_HINT_NUM_REQUESTS": str(nireq),
        "INFERENCE_PRECISION_HINT": "f32",
    })
    feeds = {}
    for port in compiled.inputs:
        shape = [d.get_length() if d.is_static else 1 for d in port.get_partial_shape()]
        n = int(np.prod(shape))
        feeds[port.get_any_name()] = (np.arange(n, dtype=np.float64) / n).astype(
            np.float32).reshape(shape)
    queue = ov.AsyncInferQueue(compiled, nireq)
    queue.start_async(feeds)  # warm-up, as tools/bench's first inference
    queue.wait_all()
    t0 = time.perf_counter()
    for _ in range(niter):
        queue.start_async(feeds)
    queue.wait_all()
    fps = niter / (time.perf_counter() - t0)
    print(json.dumps({"version": ov.get_version(), "floor_kib": floor, "fps": fps,
                      "streams": str(compiled.get_property("NUM_STREAMS"))}))


def openvino_peak(path, nireq, niter):
    code, out, peak = run_measured(
        [sys.executable, __file__, "--openvino-child", "--nireq", str(nireq),
         "--niter", str(niter), path])
    if code != 0:
        raise RuntimeError(f"OpenVINO exited {code}:\n{out[-2000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_kib"] = peak
    return result


def mib(kib):
    return kib / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="REF")
    ap.add_argument("--nireq", type=int, default=4)
    ap.add_argument("--niter", type=int, default=16)
    ap.add_argument("--bench", help="path of the built tools/bench")
    ap.add_argument("--openvino-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    if a.openvino_child:
        openvino_child(a.models[0], a.nireq, a.niter)
        return
    if not a.bench:
        ap.error("--bench is required")
    models = a.models or [os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                       "../../.cache/onnx-1.22.0/light/light_resnet50.onnx")]
    print(cpu_line())
    print(f"# peak RSS of the process (wait4 ru_maxrss), throughput hint, {a.nireq} requests in "
          f"flight, {a.niter} inferences after one warm-up; floor = the process before it reads "
          f"a model")
    floor = runnel_floor(a.bench)
    for path in models:
        name = os.path.basename(path)
        try:
            ours = runnel_peak(a.bench, path, a.device, a.nireq, a.niter)
            theirs = openvino_peak(path, a.nireq, a.niter)
        except Exception as e:  # a model one side cannot run is reported, not fatal
            print(f"{name:24s} error: {e}")
            continue
        ours_above = ours["peak_kib"] - floor
        theirs_above = theirs["peak_kib"] - theirs["floor_kib"]
        print(f"{name}")
        for label, r, fl in [(f"runnel/{a.device}", ours, floor),
                             (f"openvino {theirs['version'].split('-')[0]}/CPU", theirs,
                              theirs["floor_kib"])]:
            print(f"  {label:22s} peak {mib(r['peak_kib']):7.1f} MiB  floor {mib(fl):6.1f} MiB  "
                  f"above floor {mib(r['peak_kib'] - fl):7.1f} MiB  ({r['streams']} streams, "
                  f"{r['fps']:.2f} FPS)")
        print(f"  ratio={ours['peak_kib'] / theirs['peak_kib']:.2f} (runnel / openvino, peak)  "
              f"ratio={ours_above / theirs_above:.2f} (above floor)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
