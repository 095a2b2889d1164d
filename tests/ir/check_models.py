"""The OpenVINO IR reader end to end: each ONNX model is converted to IR by OpenVINO's
own converter (ovc, from the openvino wheel), both files are run by runnel's tools/run on
the same random inputs, and the outputs must agree. The IR comes from a real converter,
the reference from runnel's independent ONNX reader; nothing here computes an expected
output.

    python check_models.py --run PATH/TO/tools/run --cache DIR [--device REF] MODEL.onnx...

A model converted with weights compressed to f16 (ovc's default) is named NAME@fp16 and
compared with a looser tolerance (its weights are rounded). Conversions are cached in DIR
(keyed by the model's size and the openvino version), so reruns skip ovc. Prints one line
per model and ends with "N passed, N failed".
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import openvino


PROBE_OPS = {"Conv", "Relu", "LRN", "MaxPool", "AveragePool", "Concat", "Add", "Gemm", "MatMul",
             "BatchNormalization", "Mul", "Sum", "Softmax", "Reshape", "Transpose"}


def probe(model, cache, count=8):
    """The model with `count` intermediate tensors, spread evenly through the graph, added
    as outputs: the light models end in a softmax that their weights saturate, so the
    final output alone would hide a wrong layer."""
    out = os.path.join(cache, os.path.splitext(os.path.basename(model))[0] + "_probe.onnx")
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(model):
        return out
    m = onnx.load(model)
    have = {o.name for o in m.graph.output}
    picks = [n.output[0] for n in m.graph.node if n.op_type in PROBE_OPS and n.output[0] not in have]
    step = max(1, len(picks) // count)
    for name in picks[step - 1::step][:count]:
        m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    os.makedirs(cache, exist_ok=True)
    onnx.save(m, out + ".tmp")
    os.replace(out + ".tmp", out)
    return out


def convert(model, cache, fp16):
    stem = os.path.splitext(os.path.basename(model))[0] + ("_fp16" if fp16 else "")
    xml = os.path.join(cache, stem + ".xml")
    stamp = os.path.join(cache, stem + ".stamp")
    key = f"{os.path.getsize(model)} {openvino.__version__}"
    if os.path.exists(xml) and os.path.exists(stamp) and open(stamp).read() == key:
        return xml
    os.makedirs(cache, exist_ok=True)
    ovc = os.path.join(os.path.dirname(sys.executable), "ovc")
    subprocess.run([ovc, model, "--output_model", xml, f"--compress_to_fp16={fp16}"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(stamp, "w") as f:
        f.write(key)
    return xml


def make_inputs(model, folder, rng):
    """Random inputs for the model's graph inputs, written as .npy: floats from a normal
    distribution, int64 token ids below 100, an attention mask of ones ending in zeros,
    token types 0/1 (the BERT-layout encoder's inputs)."""
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    args = []
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT:
            data = rng.standard_normal(shape).astype(np.float32)
        elif "mask" in vi.name:
            data = np.ones(shape, np.int64)
            data[..., -3:] = 0
        elif "type" in vi.name:
            data = rng.integers(0, 2, shape).astype(np.int64)
        else:
            data = rng.integers(0, 100, shape).astype(np.int64)
        path = os.path.join(folder, vi.name.replace("/", "_") + ".npy")
        np.save(path, data)
        args += ["-i", f"{vi.name}={path}"]
    return args


def run(tool, model, device, inputs, out):
    os.makedirs(out, exist_ok=True)
    p = subprocess.run([tool, "-m", model, "-d", device, "-o", out] + inputs,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"tools/run {os.path.basename(model)}: {p.stderr.strip()}")
    return {f[:-4]: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}


def compare(ref, got, rtol, atol):
    """Outputs match by name (ovc keeps ONNX's output names). Returns (ok, what)."""
    if sorted(ref) != sorted(got):
        return False, f"outputs differ: ONNX {sorted(ref)}, IR {sorted(got)}"
    worst = []
    for name, a in ref.items():
        b = got[name]
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, f"{name}: ONNX {a.dtype}{list(a.shape)}, IR {b.dtype}{list(b.shape)}"
        if np.issubdtype(a.dtype, np.floating):
            err = np.abs(a.astype(np.float64) - b)
            bound = atol + rtol * np.abs(a)
            if not np.all(err <= bound) or not np.isfinite(b).all():
                return False, f"{name}: max abs diff {err.max():.3g} (allowed {atol} + {rtol}*|x|)"
            rel = err / (np.abs(a.astype(np.float64)) + atol / rtol)
            worst.append((float(rel.max()), float(a.astype(np.float64).std())))
        elif not np.array_equal(a, b):
            return False, f"{name}: values differ"
    diff = max(w[0] for w in worst) if worst else 0.0
    spread = [w[1] for w in worst] or [0.0]
    return True, (f"{len(ref)} outputs, max relative diff {diff:.2g}, "
                  f"output std {min(spread):.2g} to {max(spread):.2g}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--run", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--device", default="REF")
    p.add_argument("models", nargs="+")
    a = p.parse_args()
    rng = np.random.default_rng(16)
    passed = failed = 0
    for spec in a.models:
        fp16 = spec.endswith("@fp16")
        model = spec[:-5] if fp16 else spec
        name = os.path.basename(model) + (" (weights compressed to f16)" if fp16 else "")
        # f16 weights round each weight by up to 2^-11 relative: outputs move more.
        rtol, atol = (2e-2, 2e-3) if fp16 else (1e-4, 1e-5)
        try:
            if os.path.basename(model).startswith("light_"):
                model = probe(model, a.cache)
            xml = convert(model, a.cache, fp16)
            with tempfile.TemporaryDirectory() as tmp:
                inputs = make_inputs(model, tmp, rng)
                ref = run(a.run, model, a.device, inputs, os.path.join(tmp, "onnx"))
                got = run(a.run, xml, a.device, inputs, os.path.join(tmp, "ir"))
                ok, verdict = compare(ref, got, rtol, atol)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            verdict, ok = str(e), False
        print(f"{'PASS' if ok else 'FAIL'} {name}: {verdict}", flush=True)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
