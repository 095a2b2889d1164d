#!/usr/bin/env python3
"""bf16 accuracy per real model: runnel's CPU and OpenVINO's CPU, both at
INFERENCE_PRECISION_HINT bf16, each against ONNX Runtime's f32 outputs on
the same inputs.

  bf16_accuracy.py --cases DIR --run TOOLS_RUN --query TOOLS_QUERY [--filter SUBSTR]

DIR holds the cases of tests/wild/real_models.py (model.onnx and
test_data_set_K/{input,output}_K.pb, the outputs from ONNX Runtime f32).
runnel runs through tools/run (-d CPU -infer_precision bf16, inputs and
outputs as .npy); OpenVINO (the pinned wheel) reads the same model.onnx.
For every case, data set and output it prints the max absolute error, the
max relative error |got - want| / max(|want|, 1e-3 * max|want|) (the floor
keeps outputs near zero from dominating), for runnel f32, runnel bf16 and
OpenVINO bf16, and the ratio runnel bf16 / OpenVINO bf16 of both. Its
header names the CPU, its ISA, and whether each runtime runs bf16 natively
here: on a CPU without avx512_bf16 or AMX, bf16 is not native, runnel falls
back to f32 kernels where oneDNN has no bf16 ones, and OpenVINO may refuse
the hint or ignore it; what each did is printed, never hidden. A runtime
that fails a case prints its message in place of the numbers.

Exit status 0 when every case ran to the end (whatever the errors), 1 when
the inputs could not be read. It asserts nothing about the numbers: it is
the measurement that issue 24's "no larger than OpenVINO's bf16 error"
is judged by.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def cpu_info():
    name, flags = "unknown", set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name") and name == "unknown":
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return name, flags


def runnel_cpu_properties(query):
    out = subprocess.run([query, "-d", "CPU", "-json"], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    doc = json.loads(out.stdout)
    for dev in doc.get("devices", []):
        if dev.get("name") == "CPU":
            return {p["key"]: p.get("value") for p in dev.get("properties", [])}, None
    return None, "tools/query -d CPU -json lists no CPU device"


def errors(got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return None, None, f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.size == 0:
        return 0.0, 0.0, None
    d = np.abs(got - want)
    floor = max(1e-3 * float(np.abs(want).max()), 1e-12)
    rel = d / np.maximum(np.abs(want), floor)
    return float(np.nanmax(d)), float(np.nanmax(rel)), None


def load_set(case_dir, k, inputs, outputs):
    ds = os.path.join(case_dir, f"test_data_set_{k}")
    feeds = {n: numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"input_{i}.pb")))
             for i, n in enumerate(inputs)}
    want = [numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"output_{i}.pb")))
            for i in range(len(outputs))]
    return feeds, want


def run_runnel(tool, model, feeds, outputs, precision, tmp):
    args = [tool, "-m", model, "-d", "CPU", "-infer_precision", precision, "-o",
            os.path.join(tmp, "out")]
    for i, (n, v) in enumerate(feeds.items()):
        p = os.path.join(tmp, f"in_{i}.npy")
        np.save(p, v)
        args += ["-i", f"{n}={p}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    m = re.search(r"^precision (\S+)$", r.stdout, re.M)
    got = []
    for o in outputs:
        safe = o.replace("/", "_").replace(":", "_")
        got.append(np.load(os.path.join(tmp, "out", f"{safe}.npy")))
    return got, (m.group(1) if m else "?")


def type_name(t):
    return t.to_string() if hasattr(t, "to_string") else str(t)


def summary(message):
    """The line of OpenVINO's multi-line exception that says what failed."""
    lines = [x.strip() for x in message.splitlines() if x.strip()]
    for key in ("Conversion is failed for", "Unsupported", "not supported", "failed"):
        hit = [x for x in lines if key in x and not x.startswith("Exception from")]
        if hit:
            return hit[-1].lstrip("- ")[:300]
    return (lines[-1] if lines else "no message")[:300]


class OpenVINO:
    def __init__(self):
        try:
            import openvino as ov
            self.ov = ov
            self.core = ov.Core()
            self.error = None
        except Exception as e:  # noqa: BLE001 - say why, go on without it
            self.ov, self.core, self.error = None, None, f"openvino not importable: {e}"

    def describe(self):
        if self.core is None:
            return self.error
        caps = self.core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        return (f"OpenVINO {self.ov.get_version()}: {self.core.get_property('CPU', 'FULL_DEVICE_NAME')}"
                f", OPTIMIZATION_CAPABILITIES {' '.join(caps)}, default INFERENCE_PRECISION_HINT "
                f"{type_name(self.core.get_property('CPU', 'INFERENCE_PRECISION_HINT'))}")

    def run(self, model, feeds, outputs, precision):
        if self.core is None:
            return None, self.error
        try:
            cm = self.core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": precision})
            used = type_name(cm.get_property("INFERENCE_PRECISION_HINT"))
            res = cm.create_infer_request().infer(feeds)
            by_name = {}
            for port, v in res.items():
                for n in port.get_names():
                    by_name[n] = v
            return [np.asarray(by_name[o]) for o in outputs], used
        except Exception as e:  # noqa: BLE001 - a refusal is a result to print
            return None, f"refused: {summary(str(e))}"


def fmt(e):
    return "       -" if e is None else f"{e:8.2e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", required=True)
    ap.add_argument("--run", required=True, help="tools/run")
    ap.add_argument("--query", required=True, help="tools/query")
    ap.add_argument("--filter", default="wild_real_")
    a = ap.parse_args()

    name, flags = cpu_info()
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_tile")
           if f in flags]
    native = "avx512_bf16" in flags or "amx_bf16" in flags
    props, why = runnel_cpu_properties(a.query)
    ov = OpenVINO()
    print(f"CPU: {name}; ISA flags: {' '.join(isa) or 'none of avx2/avx512'}")
    print("bf16 is NATIVE on this CPU (avx512_bf16 or AMX)" if native else
          "bf16 is NOT native on this CPU (no avx512_bf16, no AMX): runnel's CPU runs the nodes "
          "oneDNN has no bf16 kernel for here in f32, and OpenVINO may refuse or ignore bf16")
    if props is None:
        print(f"runnel CPU: not available ({why})")
    else:
        print(f"runnel CPU: {props.get('FULL_DEVICE_NAME')}, CPU_ISA {props.get('CPU_ISA')}, "
              f"OPTIMIZATION_CAPABILITIES {props.get('OPTIMIZATION_CAPABILITIES')}, default "
              f"INFERENCE_PRECISION_HINT {props.get('INFERENCE_PRECISION_HINT')}")
    print(ov.describe())
    print("errors against ONNX Runtime f32: max abs / max rel (rel floor 1e-3 * max|want|); "
          "ratio = runnel bf16 / OpenVINO bf16")
    hdr = (f"{'case':40} {'set':>3} {'output':18} | {'runnel f32':>17} | {'runnel bf16':>17} | "
           f"{'OpenVINO bf16':>17} | {'ratio abs':>9} {'ratio rel':>9}")
    print(hdr)
    print("-" * len(hdr))
    cases = sorted(c for c in os.listdir(a.cases) if a.filter in c and
                   os.path.isfile(os.path.join(a.cases, c, "model.onnx")))
    if not cases:
        print(f"no cases matching '{a.filter}' in {a.cases}", file=sys.stderr)
        return 1
    used = {"runnel": set(), "openvino": set()}
    identical = {}  # runnel's bf16 outputs bit-identical to its f32 ones: count of data sets
    worst = []
    for case in cases:
        d = os.path.join(a.cases, case)
        model = os.path.join(d, "model.onnx")
        m = onnx.load(model, load_external_data=False)
        inits = {t.name for t in m.graph.initializer}
        inputs = [i.name for i in m.graph.input if i.name not in inits]
        outputs = [o.name for o in m.graph.output]
        k = 0
        while os.path.isdir(os.path.join(d, f"test_data_set_{k}")):
            feeds, want = load_set(d, k, inputs, outputs)
            with tempfile.TemporaryDirectory() as tmp:
                r32, p32 = run_runnel(a.run, model, feeds, outputs, "f32", tmp)
            with tempfile.TemporaryDirectory() as tmp:
                r16, p16 = run_runnel(a.run, model, feeds, outputs, "bf16", tmp)
            o16, po = ov.run(model, feeds, outputs, "bf16")
            if r16 is not None:
                used["runnel"].add(p16)
                same = r32 is not None and all(np.array_equal(x, y) for x, y in zip(r16, r32))
                identical[same] = identical.get(same, 0) + 1
            if o16 is not None:
                used["openvino"].add(po)
            for i, o in enumerate(outputs):
                cols = []
                for got, note in ((r32, p32), (r16, p16), (o16, po)):
                    if got is None:
                        cols.append((None, None, note))
                    else:
                        cols.append(errors(got[i], want[i]))
                text = []
                for ea, er, msg in cols:
                    text.append(f"{msg[:17]:>17}" if msg else f"{fmt(ea)} {fmt(er)}")
                (a16, r16e, _), (aov, rov, _) = cols[1], cols[2]
                ratio_a = (f"{a16 / aov:9.2f}" if a16 is not None and aov else
                           f"{'-':>9}")
                ratio_r = (f"{r16e / rov:9.2f}" if r16e is not None and rov else
                           f"{'-':>9}")
                print(f"{case:40} {k:>3} {o[:18]:18} | {text[0]} | {text[1]} | {text[2]} | "
                      f"{ratio_a} {ratio_r}", flush=True)
                for side, (ea, er, msg) in (("runnel bf16", cols[1]), ("OpenVINO bf16", cols[2])):
                    if msg:
                        worst.append(f"{case} set {k} {o}: {side}: {msg}")
            k += 1
    print()
    print(f"precision the compiled models reported: runnel {sorted(used['runnel'])}, OpenVINO "
          f"{sorted(used['openvino'])}")
    if identical.get(True):
        print(f"runnel bf16 outputs bit-identical to runnel f32 on {identical[True]} of "
              f"{sum(identical.values())} data sets: no node ran in bf16 there (oneDNN has no "
              "bf16 kernels for this ISA; the CPU device falls back to f32, docs/cpu.md)")
    if used["openvino"] and "bf16" not in used["openvino"]:
        print("OpenVINO compiled every model at "
              f"{'/'.join(sorted(used['openvino']))} although asked for bf16: it ignores the "
              "hint where bf16 is not native")
    for w in worst:
        print("failed:", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
