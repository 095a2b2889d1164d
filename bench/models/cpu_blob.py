"""Compile, import and CACHE_DIR times of runnel's CPU device against OpenVINO's CPU plugin on
the same models, in one run (bench/LOG.md, "CPU blobs"):

  runnel:   tools/compile (read + compile, then export to a blob), tools/bench -m BLOB (import),
            tools/bench -cache_dir DIR twice (the second compile imports the cached blob)
  OpenVINO: read_model + compile_model, export_model / import_model, and compile_model with
            CACHE_DIR twice, each in a fresh child process (as runnel's tools are).

Every time is the best of --repeat runs (the machine is shared). Precision is the default of
each (bf16 where the CPU has it, else f32), the hint THROUGHPUT.
  bench/models/run --blob [--models vgg19,zfnet512,resnet50] [--repeat 3]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

LIGHT = ".cache/onnx-1.22.0/light/light_{}.onnx"


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def ms(pattern, text):
    m = re.search(pattern, text)
    if m is None:
        sys.exit(f"no '{pattern}' in:\n{text}")
    return float(m.group(1))


def runnel(tools, model, tmp, env=None):
    blob = os.path.join(tmp, "m.rnblob")
    out = run([f"{tools}/compile", "-m", model, "-d", "CPU", "-o", blob, "-hint", "THROUGHPUT"],
              env)
    r = {"compile_ms": ms(r"read\s+([\d.]+) ms", out) + ms(r"compile\s+([\d.]+) ms", out),
         "export_ms": ms(r"export\s+([\d.]+) ms", out),
         "blob_mib": int(re.search(r"export\s+[\d.]+ ms, (\d+) bytes", out).group(1)) / 2**20}
    out = run([f"{tools}/bench", "-m", blob, "-d", "CPU", "-niter", "1", "-hint", "THROUGHPUT"],
              env)
    r["import_ms"] = ms(r"Import model took ([\d.]+) ms", out)
    cache = os.path.join(tmp, "cache")
    for key in ("cache_first_ms", "cache_second_ms"):
        out = run([f"{tools}/bench", "-m", model, "-d", "CPU", "-niter", "1", "-hint",
                   "THROUGHPUT", "-cache_dir", cache], env)
        r[key] = ms(r"Read model took ([\d.]+) ms", out) + ms(r"Compile model took ([\d.]+) ms",
                                                               out)
    shutil.rmtree(cache, ignore_errors=True)
    return r


def openvino_child(model, mode, tmp):
    import openvino as ov
    core = ov.Core()
    config = {"PERFORMANCE_HINT": "THROUGHPUT"}
    if mode.startswith("cache"):
        core.set_property({"CACHE_DIR": os.path.join(tmp, "ovcache")})
    t0 = time.perf_counter()
    if mode == "import":
        import io
        with open(os.path.join(tmp, "m.ovblob"), "rb") as f:
            core.import_model(io.BytesIO(f.read()), "CPU", config)
    else:
        compiled = core.compile_model(core.read_model(model), "CPU", config)
    t = (time.perf_counter() - t0) * 1e3
    if mode == "compile":
        import io
        stream = io.BytesIO()
        compiled.export_model(stream)
        with open(os.path.join(tmp, "m.ovblob"), "wb") as f:
            f.write(stream.getvalue())
    return t


def openvino(model, tmp):
    r = {}
    for mode, key in (("compile", "compile_ms"), ("import", "import_ms"),
                      ("cache", "cache_first_ms"), ("cache", "cache_second_ms")):
        out = run([sys.executable, __file__, "--child", mode, "--model", model, "--tmp", tmp])
        r[key] = json.loads(out.strip().splitlines()[-1])
    shutil.rmtree(os.path.join(tmp, "ovcache"), ignore_errors=True)
    return r


def best(runs):
    return {k: min(r[k] for r in runs) for k in runs[0]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools")
    ap.add_argument("--models", default="vgg19,zfnet512,resnet50")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="a folder with tools/ and runtime/libruntime.so of another "
                    "build (before CPU blobs): its times in the same run")
    ap.add_argument("--child")
    ap.add_argument("--model")
    ap.add_argument("--tmp")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(openvino_child(a.model, a.child, a.tmp)))
        return
    import openvino as ov
    print(f"# CPU: {ov.Core().get_property('CPU', 'FULL_DEVICE_NAME')}; "
          f"OpenVINO {ov.get_version()}; best of {a.repeat}; ms")
    print("| model | runnel compile | export (blob MiB) | import | CACHE_DIR 1st | CACHE_DIR 2nd "
          "| OpenVINO compile | import | CACHE_DIR 1st | CACHE_DIR 2nd | runnel/OV compile "
          "| runnel/OV 2nd |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    base_rows = []
    for name in a.models.split(","):
        model = LIGHT.format(name)
        rn, ovr, base = [], [], []
        env = dict(os.environ, LD_LIBRARY_PATH=f"{a.baseline}/runtime") if a.baseline else None
        for _ in range(a.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                rn.append(runnel(a.tools, model, tmp))
                ovr.append(openvino(model, tmp))
                if a.baseline:
                    base.append(runnel(f"{a.baseline}/tools", model, tmp, env))
        r, o = best(rn), best(ovr)
        if base:
            b = best(base)
            base_rows.append(f"| {name} | {b['compile_ms']:.0f} | {b['export_ms']:.0f} "
                             f"({b['blob_mib']:.0f}) | {b['import_ms']:.0f} "
                             f"| {b['cache_second_ms']:.0f} "
                             f"| {b['cache_second_ms'] / o['cache_second_ms']:.2f} |")
        print(f"| {name} | {r['compile_ms']:.0f} | {r['export_ms']:.0f} ({r['blob_mib']:.0f}) "
              f"| {r['import_ms']:.0f} | {r['cache_first_ms']:.0f} | {r['cache_second_ms']:.0f} "
              f"| {o['compile_ms']:.0f} | {o['import_ms']:.0f} | {o['cache_first_ms']:.0f} "
              f"| {o['cache_second_ms']:.0f} | {r['compile_ms'] / o['compile_ms']:.2f} "
              f"| {r['cache_second_ms'] / o['cache_second_ms']:.2f} |", flush=True)
    if base_rows:
        print("\n# the baseline build (generic blobs: import reorders the weights), same run")
        print("| model | compile | export (blob MiB) | import | CACHE_DIR 2nd | runnel/OV 2nd |")
        print("|---|---|---|---|---|---|")
        print("\n".join(base_rows))


if __name__ == "__main__":
    main()
