"""The IR conversion corpus: every ONNX test case that OpenVINO's converter accepts, as IR.

    python corpus.py build --cache DIR [--jobs N] CASE_FOLDER...
    python corpus.py run --runner PATH/TO/tests/conformance/onnx --cache DIR --xfail FILE
                         [--device REF] [--device CPU]
    python corpus.py fuzz-seeds --cache DIR --out DIR [--max-bytes N]

A case is a folder with model.onnx and test_data_set_0/input_K.pb (the onnx wheel's node
tests, tests/wild's exporter models). `build` converts each with the pinned openvino wheel's
own converter (openvino.convert_model + save_model), twice: with f32 weights and with
weights compressed to f16 (ovc's default; kept only where it changes the file). For each IR
it writes a case folder the conformance runner reads: the IR as model.onnx (runnel picks the
reader by the file's content; the weights are model.bin beside it), the case's inputs in the
IR's Parameter order, and as expected outputs OpenVINO's own (CPU plugin, f32 inference
precision) on the same IR, in the IR's Result order (test_data_set_0). It also runs ONNX
Runtime on the source with the same inputs and records whether OpenVINO agrees with it: a
case where they disagree is kept out of the comparison (the IR does not mean what the ONNX
model meant, so no answer of runnel's can agree with both) and listed in DIR/summary.json.
For the f32 IR, ONNX Runtime's outputs are a second data set (test_data_set_1) where their
types and shapes are OpenVINO's: runnel must agree with both. Nothing here computes an
expected output: they come from OpenVINO and ONNX Runtime.

The build is cached: DIR is keyed by the openvino version and this file's MD5 (tests/ir/run
picks it), and a
case already built from the same model.onnx (by MD5) is not converted again.

`run` runs the conformance runner over every kept case on each device and compares the
verdicts with the expected-failure list (FILE: lines "variant/case DEVICES reason", DEVICES
"REF", "CPU" or "*"). A case that fails and is not listed is a failure; a listed case that
passes is a failure too (the list must shrink when runnel gets better); a listed case the
corpus lacks is noted. Ends with one line "N passed, N failed".
"""
import argparse
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import numpy_helper

VARIANTS = ("f32", "f16")


def ir_ports(xml_path):
    """The names of the IR's Parameters and Results, each in layer-id order (runnel's order
    of a model's inputs and outputs): lists of name sets."""
    root = ET.parse(xml_path).getroot()
    layers = {int(l.get("id")): l for l in root.find("layers")}
    producer = {}
    for e in root.find("edges"):
        producer[(int(e.get("to-layer")), int(e.get("to-port")))] = (
            int(e.get("from-layer")), int(e.get("from-port")))

    def port_names(layer, port_id):
        for p in layer.find("output"):
            if int(p.get("id")) == port_id:
                return set(filter(None, (p.get("names") or "").split(",")))
        return set()

    params, results = [], []
    for lid in sorted(layers):
        l = layers[lid]
        if l.get("type") == "Parameter":
            params.append(port_names(l, int(l.find("output")[0].get("id"))))
        elif l.get("type") == "Result":
            src = producer[(lid, int(l.find("input")[0].get("id")))]
            results.append(port_names(layers[src[0]], src[1]))
    return params, results


def read_pb(path, vi):
    """A TensorProto input (sequences, maps and optionals are not IR inputs)."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def compare(a, b, rtol, atol):
    """None when b matches a, else why not (NaN equals NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {list(b.shape)}, expected {list(a.shape)}"
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        x, y = a.astype(np.float64), b.astype(np.float64)
        finite = np.isfinite(x) & np.isfinite(y)
        with np.errstate(invalid="ignore"):
            close = finite & (np.abs(x - y) <= atol + rtol * np.abs(x))
        bad = ~(close | (np.isnan(x) & np.isnan(y)) | (x == y))
        if bad.any():
            i = int(np.argmax(bad.reshape(-1)))
            return f"element {i} is {y.reshape(-1)[i]:.7g}, expected {x.reshape(-1)[i]:.7g}"
        return None
    if a.dtype != b.dtype and not (a.dtype.kind in "iub" and b.dtype.kind in "iub"):
        return f"type {b.dtype}, expected {a.dtype}"
    return None if np.array_equal(a.astype(b.dtype), b) else "values differ"


def write_ort_set(folder, ordered, feeds, results, expected, ort_out):
    """test_data_set_1: the inputs again and ONNX Runtime's outputs in the IR's Result
    order. Returns "written", or why not."""
    outs = []
    for names, want in zip(results, expected):
        hit = [n for n in ort_out if n in names]
        if not hit:
            return "no ONNX output for a Result"
        got = np.asarray(ort_out[hit[0]])
        if got.dtype != np.asarray(want).dtype or got.shape != np.asarray(want).shape:
            return f"ONNX Runtime's {got.dtype}{list(got.shape)} is not OpenVINO's type and shape"
        outs.append(got)
    d = os.path.join(folder, "test_data_set_1")
    os.makedirs(d, exist_ok=True)
    for k, n in enumerate(ordered):
        with open(os.path.join(d, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
    for k, v in enumerate(outs):
        with open(os.path.join(d, f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.array(v, order="C"), f"output_{k}")
                    .SerializeToString())
    return "written"


class Worker:
    """One process's OpenVINO Core and ONNX Runtime, reused across cases."""

    def __init__(self):
        import openvino
        self.ov = openvino
        self.core = openvino.Core()

    def ov_run(self, xml, feeds, n_results):
        cm = self.core.compile_model(xml, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        res = cm(feeds)
        outs = []
        for port in cm.outputs:
            if port.get_element_type() == self.ov.Type.bf16:
                raise ValueError("a bf16 output (numpy has no bf16)")
            outs.append((set(port.get_names()), np.array(res[port])))
        return outs

    def ort_run(self, model, feeds):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        opts.intra_op_num_threads = 1
        s = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        names = [o.name for o in s.get_outputs()]
        return dict(zip(names, s.run(None, feeds)))

    def build(self, src, dst_root):
        """Builds one case; returns its summary entry."""
        name = os.path.basename(src.rstrip("/"))
        entry = {"case": name}
        model = os.path.join(src, "model.onnx")
        data = os.path.join(src, "test_data_set_0")
        m = onnx.load(model, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        graph_inputs = [vi for vi in m.graph.input if vi.name not in inits]
        feeds = {}
        for k, vi in enumerate(graph_inputs):
            p = os.path.join(data, f"input_{k}.pb")
            if not os.path.exists(p):
                entry["status"] = "no_inputs"
                return entry
            try:
                feeds[vi.name] = np.array(read_pb(p, vi))  # a writeable copy for OpenVINO
            except Exception as e:  # a sequence or optional input
                entry["status"] = "input_not_tensor"
                entry["why"] = str(e).splitlines()[0][:200]
                return entry
        try:
            ov_model = self.ov.convert_model(model)
        except Exception as e:
            entry["status"] = "ov_refuses"
            entry["why"] = str(e).strip().splitlines()[-1][:300] if str(e).strip() else "?"
            return entry
        try:
            ort_out = self.ort_run(model, feeds)
        except Exception as e:
            ort_out = None
            entry["ort"] = "fails: " + str(e).strip().splitlines()[0][:200]
        entry["variants"] = {}
        prev_xml = None
        for variant in VARIANTS:
            ventry = entry["variants"][variant] = {}
            folder = os.path.join(dst_root, variant, name)
            tmp = folder + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(os.path.join(tmp, "test_data_set_0"))
            xml = os.path.join(tmp, "model.xml")
            try:
                self.ov.save_model(ov_model, xml, compress_to_fp16=(variant == "f16"))
            except Exception as e:
                ventry["status"] = "ov_cannot_save"
                ventry["why"] = str(e).strip().splitlines()[-1][:300]
                shutil.rmtree(tmp)
                continue
            with open(xml, "rb") as f:
                text = f.read()
            if variant == "f16" and text == prev_xml:
                ventry["status"] = "same_as_f32"
                shutil.rmtree(tmp)
                continue
            prev_xml = text
            params, results = ir_ports(xml)
            ordered = []
            for names in params:
                hit = [n for n in feeds if n in names]
                if len(hit) != 1:
                    break
                ordered.append(hit[0])
            if len(ordered) != len(params):
                ventry["status"] = "inputs_unmatched"
                shutil.rmtree(tmp)
                continue
            try:
                ov_out = self.ov_run(xml, {n: feeds[n] for n in ordered}, len(results))
            except Exception as e:
                ventry["status"] = "ov_cannot_run"
                ventry["why"] = str(e).strip().splitlines()[-1][:300] if str(e).strip() else "?"
                shutil.rmtree(tmp)
                continue
            # OpenVINO's outputs in the IR's Result order.
            expected = []
            for names in results:
                hit = [v for (ns, v) in ov_out if ns & names]
                expected.append(hit[0] if hit else None)
            if any(e is None for e in expected) or len(expected) != len(ov_out):
                ventry["status"] = "outputs_unmatched"
                shutil.rmtree(tmp)
                continue
            # OpenVINO against ONNX Runtime on the source model.
            if ort_out is not None:
                why = None
                for names, want in zip(results, expected):
                    hit = [n for n in ort_out if n in names]
                    if not hit:
                        why = f"no ONNX output named {sorted(names)}"
                        break
                    ref = np.asarray(ort_out[hit[0]])
                    atol = 1e-4
                    if variant == "f16":
                        # f16 weights: an absolute 2e-2 on outputs of order 1, scaled
                        # down with smaller ones (a Softmax of 1000 classes is 1e-3:
                        # OpenVINO 2026.4 on AVX-512 zeroes the last 8 of them).
                        peak = float(np.nanmax(np.abs(ref))) if ref.size and \
                            ref.dtype.kind in "fc" and np.isfinite(ref).any() else 1.0
                        atol = 2e-2 * min(1.0, peak if np.isfinite(peak) else 1.0)
                    d = compare(ref, want, 1e-3, atol)
                    if d is not None:
                        why = f"output '{hit[0]}': OpenVINO's {d} (ONNX Runtime's)"
                        break
                if why is not None:
                    ventry["status"] = "ov_disagrees_with_ort"
                    ventry["why"] = why
                    shutil.rmtree(tmp)
                    continue
            for k, n in enumerate(ordered):
                t = numpy_helper.from_array(feeds[n], n)
                with open(os.path.join(tmp, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
            for k, v in enumerate(expected):
                t = numpy_helper.from_array(np.array(v, order="C"), f"output_{k}")
                with open(os.path.join(tmp, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
                    f.write(t.SerializeToString())
            # f32: ONNX Runtime's outputs on the source as a second data set (same inputs),
            # so that runnel is held to both (where their types match OpenVINO's).
            if variant == "f32" and ort_out is not None:
                ventry["ort_set"] = write_ort_set(tmp, ordered, feeds, results, expected, ort_out)
            # The conformance runner reads model.onnx: runnel picks the IR reader by the
            # file's content, and the weights by the stem (model.bin).
            os.rename(xml, os.path.join(tmp, "model.onnx"))
            shutil.rmtree(folder, ignore_errors=True)
            os.rename(tmp, folder)
            ventry["status"] = "kept"
            ventry["ort"] = "agrees" if ort_out is not None else "not run"
        return entry


_worker = None


def _build_one(args):
    global _worker
    src, dst = args
    if _worker is None:
        _worker = Worker()
    done = os.path.join(dst, "done", os.path.basename(src.rstrip("/")) + ".json")
    with open(os.path.join(src, "model.onnx"), "rb") as f:
        digest = hashlib.md5(f.read()).hexdigest()
    if os.path.exists(done):
        with open(done) as f:
            entry = json.load(f)
        if entry.get("source_md5") == digest:
            return entry
    try:
        entry = _worker.build(src, dst)
    except Exception as e:  # a bug here must not stop the other cases
        entry = {"case": os.path.basename(src), "status": "builder_error", "why": repr(e)[:300]}
    entry["source_md5"] = digest
    with open(done + ".tmp", "w") as f:
        json.dump(entry, f)
    os.replace(done + ".tmp", done)
    return entry


def find_cases(folders):
    cases = []
    for f in folders:
        if os.path.exists(os.path.join(f, "model.onnx")):
            cases.append(f)
            continue
        for name in sorted(os.listdir(f)):
            sub = os.path.join(f, name)
            if os.path.exists(os.path.join(sub, "model.onnx")) and \
                    os.path.isdir(os.path.join(sub, "test_data_set_0")):
                cases.append(sub)
    return cases


def cmd_build(a):
    os.makedirs(os.path.join(a.cache, "done"), exist_ok=True)
    for v in VARIANTS:
        os.makedirs(os.path.join(a.cache, v), exist_ok=True)
    cases = find_cases(a.folders)
    t0 = time.time()
    jobs = [(c, a.cache) for c in cases]
    if a.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(a.jobs) as pool:
            entries = pool.map(_build_one, jobs, chunksize=8)
    else:
        entries = [_build_one(j) for j in jobs]
    counts = {}
    for e in entries:
        keys = [e.get("status")] if "status" in e else \
            [f"{v}:{ve['status']}" for v, ve in e["variants"].items()]
        for k in keys:
            counts[k] = counts.get(k, 0) + 1
    with open(os.path.join(a.cache, "summary.json"), "w") as f:
        json.dump({"cases": entries, "counts": counts}, f, indent=1)
    print(f"corpus: {len(cases)} cases in {time.time() - t0:.0f} s: " +
          ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return 0


def read_xfail(path):
    """{"variant/case": (set of devices or {"*"}, reason)}"""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, devices, reason = (line.split(None, 2) + ["", ""])[:3]
            out[key] = (set(devices.split(",")), reason)
    return out


def cmd_run(a):
    xfail = read_xfail(a.xfail)
    passed = failed = 0
    seen = set()
    for variant in VARIANTS:
        folder = os.path.join(a.cache, variant)
        cases = sorted(n for n in os.listdir(folder) if not n.endswith(".tmp"))
        if not cases:
            continue
        for device in a.device:
            with tempfile.TemporaryDirectory() as tmp:
                passing = os.path.join(tmp, "passing")
                props = ["--property", "INFERENCE_PRECISION_HINT=f32"] if device == "CPU" else []
                t0 = time.time()
                p = subprocess.run([a.runner, "--device", device, *props, "--timeout",
                                    str(a.timeout), "--rtol", "1e-3", "--atol", "1e-5",
                                    "--write-passing", passing, folder],
                                   capture_output=True, text=True)
                reasons = {}
                for line in p.stdout.splitlines():
                    m = re.match(r"^(FAIL|UNSUPPORTED) +(\S+) \[[^\]]*\] (.*)$", line)
                    if m:
                        reasons[m.group(2)] = f"{m.group(1)} {m.group(3)}"
                ok = set()
                if os.path.exists(passing):
                    with open(passing) as f:
                        ok = {l.strip() for l in f if l.strip()}
            n_ok = n_xf = 0
            for c in cases:
                key = f"{variant}/{c}"
                seen.add(key)
                listed = key in xfail and (device in xfail[key][0] or "*" in xfail[key][0])
                if c in ok and not listed:
                    passed += 1
                    n_ok += 1
                elif c in ok:
                    failed += 1
                    print(f"XPASS {key} on {device}: passes, take it out of {a.xfail}")
                elif listed:
                    passed += 1
                    n_xf += 1
                else:
                    failed += 1
                    print(f"FAIL {key} on {device}: {reasons.get(c, 'no verdict from the runner')}")
            also = " (and with ONNX Runtime)" if variant == "f32" else ""
            print(f"-- {variant} on {device}: {len(cases)} cases, {n_ok} agree with OpenVINO{also}, "
                  f"{n_xf} expected failures ({time.time() - t0:.0f} s)", flush=True)
    # A listed case this corpus lacks (OpenVINO left it out here, or a source folder is
    # absent) is said, not counted: only a listed case that passes shows the list is stale.
    stale = sorted(k for k in xfail if k not in seen)
    if stale:
        print(f"note: {len(stale)} cases of {a.xfail} are not in this corpus "
              f"(first: {stale[0]})")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def cmd_fuzz_seeds(a):
    """Seeds for the ir_read fuzz target from the corpus: the smallest cases that together
    cover every (layer type, version) the corpus holds, each packed as fuzz_ir_read.c reads
    it (u32 LE length of the XML, the XML, the .bin) and at most --max-bytes long."""
    import struct
    cands = []
    for variant in VARIANTS:
        folder = os.path.join(a.cache, variant)
        for c in sorted(os.listdir(folder)):
            x = os.path.join(folder, c, "model.onnx")
            if not os.path.exists(x):
                continue
            xml = open(x, "rb").read()
            b = os.path.join(folder, c, "model.bin")
            bin_ = open(b, "rb").read() if os.path.exists(b) else b""
            blob = struct.pack("<I", len(xml)) + xml + bin_
            if len(blob) > a.max_bytes:
                continue
            kinds = set(re.findall(rb'type="(\w+)" version="(\w+)"', xml))
            cands.append((len(blob), f"ovc_{variant}_{c}", blob, kinds))
    cands.sort(key=lambda t: (t[0], t[1]))
    covered = set()
    os.makedirs(a.out, exist_ok=True)
    n = 0
    for size, name, blob, kinds in cands:
        if kinds <= covered:
            continue
        covered |= kinds
        with open(os.path.join(a.out, name + ".ir"), "wb") as f:
            f.write(blob)
        n += 1
    print(f"{n} seeds covering {len(covered)} layer types written to {a.out}")
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--cache", required=True)
    b.add_argument("--jobs", type=int, default=1)
    b.add_argument("folders", nargs="+")
    r = sub.add_parser("run")
    r.add_argument("--runner", required=True)
    r.add_argument("--cache", required=True)
    r.add_argument("--xfail", required=True)
    r.add_argument("--device", action="append", default=[])
    r.add_argument("--timeout", type=int, default=60)
    f = sub.add_parser("fuzz-seeds")
    f.add_argument("--cache", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--max-bytes", type=int, default=16384)
    a = p.parse_args()
    if a.cmd == "run" and not a.device:
        a.device = ["REF"]
    return {"build": cmd_build, "run": cmd_run, "fuzz-seeds": cmd_fuzz_seeds}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
