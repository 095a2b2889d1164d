"""What the model benchmarks share: the machine line, a measured subprocess, a model's real
inputs and the light models' test input."""
import os
import platform
import signal
import subprocess
import sys
import tempfile

import numpy as np

# cpuinfo flags printed at the top of every benchmark: what decides the kernels and the
# default precision (bf16 with avx512_bf16 or AMX, int8 dot products with VNNI).
ISA_FLAGS = [("avx2", "avx2"), ("avx512f", "avx512f"), ("avx512_bf16", "avx512_bf16"),
             ("avx512_vnni", "avx512_vnni"), ("amx", "amx_tile")]


def cpu_line():
    """Two lines: '# machine: MODEL, N CPUs, KERNEL' and '# isa: avx2=yes ... amx=no'; a third,
    '# capped: ...', where ONEDNN_MAX_CPU_ISA caps the ISA oneDNN dispatches to."""
    model, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown CPU":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    isa = " ".join(f"{n}={'yes' if f in flags else 'no'}" for n, f in ISA_FLAGS)
    lines = (f"# machine: {model}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}\n"
             f"# isa: {isa}")
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
    if cap:
        # OpenVINO's CPU plugin honours the cap in its oneDNN primitives (at f32: its default
        # precision still reads bf16 from CPUID) but not in MLAS or some kernels of its own.
        lines += (f"\n# capped: ONEDNN_MAX_CPU_ISA={cap} (runnel's and OpenVINO's oneDNN primitives;"
                  " OpenVINO's MLAS products and some of its own kernels read CPUID and ignore it)")
    return lines


def load_line(when):
    with open("/proc/loadavg") as f:
        return f"# load average {when}: {' '.join(f.read().split()[:3])}"


# Runs argv[2:] in a process forked from this small launcher and writes "<exit status>
# <ru_maxrss KiB>" to argv[1]. Why not spawn the command directly: Linux counts a process's peak
# RSS from before its exec too (the forked image: the caller's whole resident set), so a
# command started by a large Python process would report at least that process's size. Forked
# from the launcher, it inherits only the launcher's few MiB.
LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as e:
        print(f"cannot run {sys.argv[2]}: {e}", flush=True)
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_measured(cmd, timeout=None):
    """Runs cmd to completion, its stdout and stderr together. Returns (exit code, output, peak
    RSS in KiB: the process's ru_maxrss from wait4, its VmHWM). Past timeout seconds the
    process is killed and the exit code is -9."""
    with tempfile.TemporaryFile("w+") as out, tempfile.NamedTemporaryFile("r") as result:
        proc = subprocess.Popen([sys.executable, "-S", "-c", LAUNCHER, result.name] + cmd,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            out.seek(0)
            return -signal.SIGKILL, out.read(), 0
        out.seek(0)
        fields = result.read().split()
        if len(fields) != 2:
            return proc.returncode or 1, out.read(), 0
        return int(fields[0]), out.read(), int(fields[1])


def rss_kib(field):
    """A field of /proc/self/status in KiB: VmRSS (now), VmHWM (the peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def graph_inputs(path):
    """The inputs a model must be fed: the graph's inputs that no initializer backs (older
    models list their weights as inputs too). Returns [(name, numpy dtype, shape)], unknown
    dims as 1."""
    # Imported here, not above: the measured OpenVINO and ONNX Runtime processes import this
    # module, and onnx would add to their peak memory.
    import onnx
    from onnx import helper
    model = onnx.load(path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    result = []
    for i in model.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 1 for d in t.shape.dim]
        result.append((i.name, helper.tensor_dtype_to_np_dtype(t.elem_type), shape))
    return result


def test_input(shape, dtype="float32"):
    """The onnx backend test's input for a light model: arange(n)/n in the input's shape."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.float64) / n).astype(dtype).reshape(shape)
