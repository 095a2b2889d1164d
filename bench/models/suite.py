#!/usr/bin/env python3
"""runnel against OpenVINO's CPU plugin and ONNX Runtime, on the same models, in one run.

Models: the onnx wheel's 9 light models (.cache/onnx-1.22.0/light), BERT-base and MiniLM-L6
encoders at batch 1 and 8 written by make_encoder.py and an int8 (QDQ) ResNet-50 written by make_int8.py (both made once
into .cache/bench-models). Every model runs with the THROUGHPUT and with the LATENCY
performance hint, each at the runtime's default precision and at f32
(INFERENCE_PRECISION_HINT=f32, for runnel and OpenVINO alike), for a fixed time per case.

  runnel       tools/bench (the public API's benchmark_app) on --device: -hint, -t,
               -infer_precision f32, the inputs from .npy files (-i), its JSON report;
  OpenVINO     the openvino wheel's CPU plugin through its Python API, as benchmark_app drives
               it: PERFORMANCE_HINT, OPTIMAL_NUMBER_OF_INFER_REQUESTS requests in an
               AsyncInferQueue kept busy, latency per request as OpenVINO measures it;
  ONNX Runtime the CPU execution provider (no precision hint: f32, int8 where the model is
               QDQ), THROUGHPUT as one session of one thread per CPU, each driven by its own
               thread; LATENCY as one session with a thread per CPU. Measured once per model
               and hint, printed on both precisions' lines.

Each case runs in a process of its own, so the peak resident set (wait4's ru_maxrss, the
process's VmHWM) and the compile time (reading the model + compiling it: tools/bench's read
and compile steps, OpenVINO's read_model + compile_model, ONNX Runtime's session creation)
belong to that model alone. A Python process starts higher than tools/bench (the
interpreter, numpy, the runtime's library), so memory is compared above each process's own
floor: the peak minus the resident set before the model is read (runnel: tools/bench -h,
measured once at the start; OpenVINO and ONNX Runtime: VmRSS after the imports and the
inputs, measured in each case's process). Both the peak and the part above the floor are
printed; the ratios use the part above the floor.

Each case prints one line: the model, hint and precision, and per runtime its precision, FPS,
median latency, peak RSS and compile time; then ratio= runnel / OpenVINO of FPS for
THROUGHPUT (higher is better) and of median latency for LATENCY (lower is better). Then the
geometric means of the ratios. With --repeat N each case also prints every round's ratio
(runnel's process and OpenVINO's, run back to back) and their median, and the summary their
geomean: paired rounds cancel the host's slow phases, which each runtime's median process does
not. A case a runtime cannot run prints why on the next line.
Not a test: nothing fails on a number.

  bench/models/run --suite [--device D] [--duration S | --quick] [--models a,b]
                   [--hints THROUGHPUT,LATENCY] [--precisions default,f32] [--json PATH]
                   [--markdown PATH]
"""
import argparse
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from importlib import metadata

import numpy as np
from common import cpu_line, graph_inputs, load_line, rss_kib, run_measured, test_input

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
LIGHT = os.path.join(ROOT, ".cache/onnx-1.22.0/light")
MADE = os.path.join(ROOT, ".cache/bench-models")
HINTS = ["THROUGHPUT", "LATENCY"]
PRECISIONS = ["default", "f32"]
RUNTIMES = ["runnel", "openvino", "onnxruntime"]


# ---- models and their inputs -----------------------------------------------------------

def made_model(name, script, args, inputs_from_script=False):
    """A model written by a script of this folder into .cache/bench-models, rewritten when the
    script is newer than it (or, for a script that writes the inputs too, when they are gone)."""
    path = os.path.join(MADE, name + ".onnx")
    inputs = os.path.join(MADE, "inputs", name)
    script_path = os.path.join(HERE, script)
    if (not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(script_path)
            or (inputs_from_script and not os.path.isdir(inputs))):
        os.makedirs(MADE, exist_ok=True)
        print(f"# making {os.path.relpath(path, ROOT)} with bench/models/{script}", flush=True)
        extra = ["--inputs", inputs] if inputs_from_script else []
        tmp = os.path.join(MADE, name + ".tmp.onnx")
        subprocess.run([sys.executable, script_path] + args + [tmp] + extra, check=True,
                       stdout=subprocess.DEVNULL)
        os.replace(tmp, path)
    return path


def all_models(selected):
    """[(name, path, maker)] of every model the suite knows, in order; maker makes the model
    when it is absent, so only the selected ones are made."""
    models = [(os.path.basename(p)[len("light_"):-len(".onnx")], p, None)
              for p in sorted(glob.glob(os.path.join(LIGHT, "light_*.onnx")))]
    if not models:
        sys.exit(f"no light models in {LIGHT}: run scripts/setup")
    models.append(("bert_base_encoder", None,
                   lambda: made_model("bert_base_encoder", "make_encoder.py", [], True)))
    models.append(("minilm_l6_encoder", None,
                   lambda: made_model("minilm_l6_encoder", "make_encoder.py",
                                      ["--minilm", "--layers", "6"], True)))
    # The encoders at batch 8 (issue 30): sequences padded to different lengths by the mask.
    models.append(("bert_base_encoder_b8", None,
                   lambda: made_model("bert_base_encoder_b8", "make_encoder.py",
                                      ["--batch", "8"], True)))
    models.append(("minilm_l6_encoder_b8", None,
                   lambda: made_model("minilm_l6_encoder_b8", "make_encoder.py",
                                      ["--minilm", "--layers", "6", "--batch", "8"], True)))
    models.append(("resnet50_int8", None,
                   lambda: made_model("resnet50_int8", "make_int8.py",
                                      [os.path.join(LIGHT, "light_resnet50.onnx")])))
    models.append(("resnet50_int8_qop", None,
                   lambda: made_model("resnet50_int8_qop", "make_int8.py",
                                      ["--qop", os.path.join(LIGHT, "light_resnet50.onnx")])))
    if selected:
        known = [m[0] for m in models]
        for s in selected:
            if s not in known:
                sys.exit(f"--models: no model '{s}' (models: {', '.join(known)})")
        models = [m for m in models if m[0] in selected]
    return models


def model_inputs(name, path):
    """{input name: .npy path}: the same data for every runtime. Float inputs get the light
    models' test input (arange(n)/n); the encoder's come from make_encoder.py; other
    integer inputs are zeros."""
    directory = os.path.join(MADE, "inputs", name)
    os.makedirs(directory, exist_ok=True)
    files = {}
    for input_name, dtype, shape in graph_inputs(path):
        file = os.path.join(directory, input_name.replace("/", "_") + ".npy")
        if not os.path.exists(file):
            if np.issubdtype(dtype, np.floating):
                data = test_input(shape, dtype)
            else:
                data = np.zeros(shape, dtype)
            np.save(file, data)
        files[input_name] = file
    return files


# ---- runnel: tools/bench in a process of its own ---------------------------------------

def last_error(output):
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("[ ERROR ]")]
    text = errors[-1][len("[ ERROR ]"):].strip() if errors else (lines[-1] if lines else "")
    return text[:400]


def measure_runnel(a, path, inputs, hint, precision):
    fd, report = tempfile.mkstemp(prefix="runnel-bench-", suffix=".json")
    os.close(fd)
    cmd = [os.path.join(a.tools, "bench"), "-m", path, "-d", a.device, "-hint", hint.lower(),
           "-t", f"{a.duration:g}", "-json", report]
    for name, file in inputs.items():
        cmd += ["-i", f"{name}={file}"]
    if precision != "default":
        cmd += ["-infer_precision", precision]
    if a.plugins:
        cmd += ["-plugins", a.plugins]
    try:
        code, out, peak = run_measured(cmd, timeout=a.timeout)
        if code != 0:
            why = "timed out" if code < 0 else f"exit {code}"
            return {"error": f"tools/bench {why}: {last_error(out)}"}
        with open(report) as f:
            j = json.load(f)
    finally:
        os.unlink(report)
    props = j["compiled_model_properties"]
    return {"fps": j["results"]["throughput_fps"],
            "median_ms": j["results"]["latency"]["median_ms"],
            "count": j["results"]["count"],
            "peak_kib": peak,
            "compile_ms": j["steps"]["read_ms"] + j["steps"]["compile_ms"],
            "precision": props.get("INFERENCE_PRECISION_HINT", "?"),
            "streams": props.get("NUM_STREAMS", "?"),
            "nireq": j["settings"]["nireq"],
            "version": j["runnel_version"]}


# ---- OpenVINO and ONNX Runtime: this script again, as a child ----------------------------

def load_feeds(inputs_json):
    return {name: np.load(file) for name, file in json.loads(inputs_json).items()}


def openvino_child(a):
    """benchmark_app's loop: OPTIMAL_NUMBER_OF_INFER_REQUESTS requests, each with its own copy
    of the inputs, restarted as soon as one is free, one first inference not counted."""
    import openvino as ov
    feeds = load_feeds(a.inputs)
    floor = rss_kib("VmRSS")
    core = ov.Core()
    t0 = time.perf_counter()
    model = core.read_model(a.model)
    config = {"PERFORMANCE_HINT": a.hint}
    if a.precision != "default":
        config["INFERENCE_PRECISION_HINT"] = a.precision
    compiled = core.compile_model(model, "CPU", config)
    compile_ms = (time.perf_counter() - t0) * 1e3
    del model
    nireq = int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
    queue = ov.AsyncInferQueue(compiled, nireq)
    for i in range(len(queue)):
        for name, data in feeds.items():
            queue[i].set_tensor(name, ov.Tensor(np.ascontiguousarray(data).copy()))
    latencies = []
    queue.set_callback(lambda request, _: latencies.append(request.latency))
    queue.start_async()
    queue.wait_all()
    latencies.clear()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < a.duration:
        queue.start_async()  # waits for a free request
        count += 1
    queue.wait_all()
    elapsed = time.perf_counter() - start
    return {"fps": count / elapsed, "median_ms": statistics.median(latencies), "count": count,
            "compile_ms": compile_ms, "floor_kib": floor,
            "precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
            "streams": str(compiled.get_property("NUM_STREAMS")), "nireq": nireq,
            "version": ov.get_version()}


def onnxruntime_child(a):
    import onnxruntime as ort
    feeds = load_feeds(a.inputs)
    floor = rss_kib("VmRSS")
    cpus = len(os.sched_getaffinity(0))
    n_sessions, threads = (cpus, 1) if a.hint == "THROUGHPUT" else (1, cpus)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    t0 = time.perf_counter()
    sessions = [ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])]
    compile_ms = (time.perf_counter() - t0) * 1e3  # one session's creation
    sessions += [ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
                 for _ in range(n_sessions - 1)]
    for s in sessions:
        s.run(None, feeds)  # the first inference, not counted
    latencies = [[] for _ in sessions]
    start = time.perf_counter()
    deadline = start + a.duration

    def drive(session, out):
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            session.run(None, feeds)  # releases the GIL while it runs
            out.append((time.perf_counter() - t) * 1e3)

    workers = [threading.Thread(target=drive, args=(s, l)) for s, l in zip(sessions, latencies)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - start
    every = [x for l in latencies for x in l]
    return {"fps": len(every) / elapsed, "median_ms": statistics.median(every),
            "count": len(every), "compile_ms": compile_ms, "floor_kib": floor,
            "precision": "f32", "streams": f"{n_sessions}x{threads}", "nireq": n_sessions,
            "version": ort.__version__}


def measure_child(a, runtime, path, inputs, hint, precision):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", runtime, "--child-model", path,
           "--child-inputs", json.dumps(inputs), "--hints", hint, "--precisions", precision,
           "--duration", f"{a.duration:g}"]
    code, out, peak = run_measured(cmd, timeout=a.timeout)
    lines = [l for l in out.splitlines() if l.strip()]
    result = None
    if lines:
        try:
            result = json.loads(lines[-1])
        except ValueError:
            pass
    if result is None:
        why = "timed out" if code < 0 else f"exit {code}"
        return {"error": f"{runtime} {why}: {(lines[-1] if lines else '')[:400]}"}
    if "error" not in result:
        result["peak_kib"] = peak
        result["above_kib"] = max(peak - result["floor_kib"], 0)
    return result


def child_main(a):
    try:
        a.hint, a.precision, a.model, a.inputs = a.hints, a.precisions, a.child_model, \
            a.child_inputs
        result = openvino_child(a) if a.child == "openvino" else onnxruntime_child(a)
    except Exception as e:  # reported by the parent as the reason, not a crash
        first = " ".join(str(e).split())
        result = {"error": f"{a.child}: {type(e).__name__}: {first[:400]}"}
    print(json.dumps(result))


# ---- report ------------------------------------------------------------------------------

def cell(r, width_prec=5):
    if r is None:
        return f"{'-':>{width_prec}s} {'not run':>41s}"
    if "error" in r:
        return f"{'-':>{width_prec}s} {'cannot run (below)':>41s}"
    return (f"{r['precision']:>{width_prec}s} {r['fps']:8.2f} FPS {r['median_ms']:8.2f} ms "
            f"{r['peak_kib'] / 1024:6.0f} MiB (+{r['above_kib'] / 1024:.0f}) "
            f"{r['compile_ms'] / 1000:6.2f} s")


def median_round(results, hint):
    """Of one runtime's rounds (processes) of a case, the one with the median value (FPS under
    THROUGHPUT, median latency under LATENCY; the lower middle of an even count); an error when
    every round failed."""
    ok = [r for r in results if "error" not in r]
    if not ok:
        return results[0]
    key = "fps" if hint == "THROUGHPUT" else "median_ms"
    ok.sort(key=lambda r: r[key])
    return ok[(len(ok) - 1) // 2]


def ratio(rn, ov, hint):
    if not rn or not ov or "error" in rn or "error" in ov:
        return None
    if hint == "THROUGHPUT":
        return rn["fps"] / ov["fps"] if ov["fps"] > 0 else None
    return rn["median_ms"] / ov["median_ms"] if ov["median_ms"] > 0 else None


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt_ratio(v):
    return "n/a" if v is None else f"{v:.2f}"


def print_line(name, hint, precision, device, results):
    rn, ov, ort_ = (results.get(k) for k in RUNTIMES)
    print(f"{name:18s} {hint:10s} {precision:7s} | runnel/{device} {cell(rn)} | "
          f"openvino {cell(ov)} | onnxruntime {cell(ort_)} | "
          f"ratio={fmt_ratio(ratio(rn, ov, hint))}", flush=True)
    for runtime in RUNTIMES:
        r = results.get(runtime)
        if r and "error" in r:
            label = f"runnel/{device}" if runtime == "runnel" else runtime
            print(f"    {label} cannot run {name} ({hint}, {precision}): {r['error']}", flush=True)


def print_summary(rows, device, light_names):
    print("\n# geometric means over the models both runnel and OpenVINO ran; ratio= runnel / "
          "OpenVINO (THROUGHPUT: FPS, higher is better; LATENCY: median latency, lower is "
          "better); peak RSS above each process's floor and compile time ratios: lower is "
          "better")
    for hint in HINTS:
        for precision in PRECISIONS:
            group = [r for r in rows if r["hint"] == hint and r["precision"] == precision]
            pairs = [(r, ratio(r["runnel"], r["openvino"], hint)) for r in group]
            pairs = [(r, v) for r, v in pairs if v is not None]
            if not group:
                continue
            if not pairs:
                print(f"{hint:10s} {precision:7s} no model ran on both runnel/{device} and "
                      f"OpenVINO")
                continue
            light = [v for r, v in pairs if r["model"] in light_names]
            worst = (min if hint == "THROUGHPUT" else max)(
                [(v, r["model"]) for r, v in pairs if r["model"] in light_names],
                default=None)
            rss = geomean([r["runnel"]["above_kib"] / r["openvino"]["above_kib"]
                           for r, _ in pairs if r["openvino"]["above_kib"] > 0])
            comp = geomean([r["runnel"]["compile_ms"] / r["openvino"]["compile_ms"]
                            for r, _ in pairs])
            vs_ort = geomean([ratio(r["runnel"], r["onnxruntime"], hint) for r, _ in pairs])
            paired = [(r["paired"], r["model"]) for r, _ in pairs if r.get("paired") is not None]
            if paired:
                worst_round = (min if hint == "THROUGHPUT" else max)(paired)
                print(f"{hint:10s} {precision:7s} median rounds: geomean "
                      f"{fmt_ratio(geomean([v for v, _ in paired]))} over {len(paired)} models, "
                      f"worst {worst_round[1]} {worst_round[0]:.2f}")
            worst_text = f", worst light {worst[1]} {worst[0]:.2f}" if worst else ""
            print(f"{hint:10s} {precision:7s} ratio={fmt_ratio(geomean([v for _, v in pairs]))} "
                  f"over {len(pairs)} models (light {len(light)}: "
                  f"{fmt_ratio(geomean(light))}{worst_text}); RSS above floor ratio="
                  f"{fmt_ratio(rss)}; "
                  f"compile ratio={fmt_ratio(comp)}; runnel/onnxruntime={fmt_ratio(vs_ort)}")


def markdown_cell(r):
    if not r:
        return "—"
    if "error" in r:
        return "cannot run"
    return f"{r['fps']:.1f} FPS / {r['median_ms']:.1f} ms ({r['precision']})"


def write_markdown(path, rows, device):
    """The results as a Markdown table for bench/LOG.md, one row per case."""
    def pair(rn, ov, key, scale, fmt):
        if not rn or not ov or "error" in rn or "error" in ov:
            return "—"
        return f"{rn[key] / scale:{fmt}} / {ov[key] / scale:{fmt}}"

    with open(path, "w") as f:
        f.write(f"| model | hint | precision | runnel {device} | OpenVINO CPU | ONNX Runtime | "
                f"ratio | RSS above floor MiB, runnel / OpenVINO | compile s, runnel / OpenVINO |\n"
                f"|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            rn, ov = r["runnel"], r["openvino"]
            f.write(f"| {r['model']} | {r['hint']} | {r['precision']} | {markdown_cell(rn)} | "
                    f"{markdown_cell(ov)} | {markdown_cell(r['onnxruntime'])} | "
                    f"{fmt_ratio(ratio(rn, ov, r['hint']))} | "
                    f"{pair(rn, ov, 'above_kib', 1024, '.0f')} | "
                    f"{pair(rn, ov, 'compile_ms', 1000, '.2f')} |\n")


# ---- main --------------------------------------------------------------------------------

def default_device(a):
    """CPU when tools/query lists it, else REF."""
    cmd = [os.path.join(a.tools, "query"), "-json"] + (["-plugins", a.plugins] if a.plugins
                                                       else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"tools/query failed: {out.stderr.strip()}")
    names = [d["name"] for d in json.loads(out.stdout)["devices"]]
    return "CPU" if "CPU" in names else "REF"


def parse_list(text, allowed, flag):
    items = [x.strip() for x in text.split(",") if x.strip()]
    for x in items:
        if allowed is not None and x not in allowed:
            sys.exit(f"{flag}: '{x}' is not one of {', '.join(allowed)}")
    return items


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", help="the folder of the built tools/bench and tools/query")
    ap.add_argument("--device", help="runnel's device (default: CPU if present, else REF)")
    ap.add_argument("--duration", type=float, default=8.0, help="seconds per case (default 8)")
    ap.add_argument("--quick", action="store_true", help="1 s per case: a check that it runs")
    ap.add_argument("--repeat", type=int, default=1,
                    help="processes per case and runtime, runnel and OpenVINO alternating; each "
                    "reports the process with the median value and prints every round's ratio "
                    "(default 1)")
    ap.add_argument("--models", default="", help="comma-separated names (default: all)")
    ap.add_argument("--hints", default=",".join(HINTS))
    ap.add_argument("--precisions", default=",".join(PRECISIONS))
    ap.add_argument("--runtimes", default=",".join(RUNTIMES))
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per process")
    ap.add_argument("--plugins", help="device plugins file for tools/bench and tools/query")
    ap.add_argument("--json", help="also write every result to this file")
    ap.add_argument("--markdown", help="also write the results as a Markdown table")
    ap.add_argument("--child", choices=["openvino", "onnxruntime"], help=argparse.SUPPRESS)
    ap.add_argument("--child-model", help=argparse.SUPPRESS)
    ap.add_argument("--child-inputs", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child_main(a)
        return
    if not a.tools:
        ap.error("--tools is required (bench/models/run --suite passes it)")
    if a.quick:
        a.duration = 1.0
    hints = parse_list(a.hints.upper(), HINTS, "--hints")
    precisions = parse_list(a.precisions, None, "--precisions")
    runtimes = parse_list(a.runtimes, RUNTIMES, "--runtimes")
    a.device = a.device or default_device(a)
    models = all_models(parse_list(a.models, None, "--models"))
    light_names = {m[0] for m in models if m[2] is None}

    print(cpu_line())
    print(load_line("at start"))
    versions = ", ".join(f"{p} {metadata.version(p)}" for p in ("openvino", "onnxruntime"))
    print(f"# runnel on {a.device} (tools/bench), {versions}; {a.duration:g} s per case, "
          f"{a.repeat} process(es) per case and runtime (the median one reported); "
          f"onnxruntime THROUGHPUT = {len(os.sched_getaffinity(0))} sessions x 1 thread, "
          f"LATENCY = 1 session x {len(os.sched_getaffinity(0))} threads")
    runnel_floor = run_measured([os.path.join(a.tools, "bench"), "-h"])[2]
    print(f"# per runtime: precision, FPS, median latency, peak RSS (+ above its floor), "
          f"compile time "
          f"(read + compile); ratio= runnel/OpenVINO, FPS (THROUGHPUT) or latency (LATENCY)",
          flush=True)
    rows = []
    for name, path, maker in models:
        try:
            path = path or maker()
            inputs = model_inputs(name, path)
        except Exception as e:  # a model that cannot be made is reported, not fatal
            print(f"{name:18s} cannot be made: {e}", flush=True)
            continue
        for hint in hints:
            ort_result = None
            for precision in precisions:
                results = {}
                rounds = {"runnel": [], "openvino": []}
                for _ in range(a.repeat):  # alternating processes: runnel, OpenVINO, ...
                    if "runnel" in runtimes:
                        r = measure_runnel(a, path, inputs, hint, precision)
                        if "error" not in r:
                            r["floor_kib"] = runnel_floor
                            r["above_kib"] = max(r["peak_kib"] - runnel_floor, 0)
                        rounds["runnel"].append(r)
                    if "openvino" in runtimes:
                        rounds["openvino"].append(
                            measure_child(a, "openvino", path, inputs, hint, precision))
                for runtime, got in rounds.items():
                    if got:
                        results[runtime] = median_round(got, hint)
                if "onnxruntime" in runtimes:
                    if ort_result is None:  # no precision hint: the same run for both
                        ort_result = measure_child(a, "onnxruntime", path, inputs, hint,
                                                   "default")
                    results["onnxruntime"] = ort_result
                print_line(name, hint, precision, a.device, results)
                paired = None
                if a.repeat > 1 and rounds["runnel"] and rounds["openvino"]:
                    each = [ratio(r, o, hint) for r, o in zip(rounds["runnel"], rounds["openvino"])]
                    known = [v for v in each if v is not None]
                    # Each round's two processes ran back to back: their ratio is free of the
                    # host's slow phases, which the median processes of each runtime are not.
                    paired = statistics.median(known) if known else None
                    print(f"{'':18s} {'':10s} {'':7s}   rounds (runnel / OpenVINO, one process "
                          f"each, in order): " + " ".join(fmt_ratio(v) for v in each) +
                          f"; median round {fmt_ratio(paired)}", flush=True)
                rows.append(dict(model=name, hint=hint, precision=precision, paired=paired, **{
                    k: results.get(k) for k in RUNTIMES}))
    print_summary(rows, a.device, light_names)
    floors = {"runnel": runnel_floor}
    for runtime in ("openvino", "onnxruntime"):
        seen = [r[runtime]["floor_kib"] for r in rows if r[runtime] and "floor_kib" in r[runtime]]
        if seen:
            floors[runtime] = statistics.median(seen)
    print("# floors (a process before it reads a model): " + ", ".join(
        f"{k} {v / 1024:.0f} MiB" for k, v in floors.items()) +
        " (runnel: tools/bench -h; the others: Python with numpy and the runtime imported)")
    print(load_line("at end"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": cpu_line(), "device": a.device, "duration_s": a.duration,
                       "floors_kib": floors, "results": rows}, f, indent=1)
        print(f"# results written to {a.json}")
    if a.markdown:
        write_markdown(a.markdown, rows, a.device)
        print(f"# table written to {a.markdown}")


if __name__ == "__main__":
    main()
