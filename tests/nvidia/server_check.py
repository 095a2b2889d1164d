"""runnel-server with dynamic batching on a device, checked by a client of
its HTTP API (KServe v2 JSON, urllib only): the NVIDIA harness runs it on the
GPU machine against a model exported there with a dynamic batch
(scripts/nvidia-harness, run_server_check; docs/nvidia.md).

    python3 tests/nvidia/server_check.py --port-file F --model NAME \
        --input NAME_input_0.pb --reference NAME_output_0.pb \
        [--requests 48] [--concurrency 16] [--rtol 1e-3] [--ready-secs 300]
        [--server-pid PID]

Waits for the model to be ready, sends `requests` requests of batch 1 from
`concurrency` threads at once (row i of the reference input for request i,
cycling over its rows), compares each answer with the reference's row
(|got - ref| <= rtol * rms(ref) + rtol * |ref|, as nvidia_check), and reads
the model's statistics: the server batched when it ran fewer times than it
answered. Prints a PASS/FAIL line per check; exits 1 when one failed."""
import argparse
import json
import math
import os
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
from onnx import TensorProto, numpy_helper


failed = 0


def result(ok, name, text):
    global failed
    print(f"{'PASS' if ok else 'FAIL'} {name}: {text}", flush=True)
    failed += not ok
    return ok


def read_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t).astype(np.float32)


def http(base, path, body=None, timeout=120):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data,
                                 headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.read()


def alive(pid):
    """Whether the server (pid, 0: not watched) still runs."""
    if not pid:
        return True
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_ready(base, model, secs, pid):
    t0 = time.time()
    last = "no answer"
    while time.time() - t0 < secs:
        if not alive(pid):
            return False, "the server exited (its log says why)"
        try:
            status, _ = http(base, f"/v2/models/{model}/ready", timeout=5)
            if status == 200:
                return True, time.time() - t0
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}: {e.read()[:300]!r}"
        except Exception as e:  # noqa: BLE001 - not up yet
            last = str(e)
        time.sleep(0.5)
    return False, last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--ready-secs", type=float, default=300)
    ap.add_argument("--server-pid", type=int, default=0)
    a = ap.parse_args()
    name = f"server_{a.model}"
    t0 = time.time()
    port = None
    while time.time() - t0 < 60 and port is None and alive(a.server_pid):
        try:
            with open(a.port_file) as f:
                port = int(f.read().strip())
        except (OSError, ValueError):
            time.sleep(0.2)
    if port is None:
        result(False, name, f"no port in {a.port_file}: the server did not start or exited "
               "(its log says why)")
        return 1
    base = f"http://127.0.0.1:{port}"
    ready, how = wait_ready(base, a.model, a.ready_secs, a.server_pid)
    if not result(ready, name + "_ready",
                  f"model ready after {how:.1f} s" if ready else f"not ready: {how}"):
        return 1
    try:
        _, meta = http(base, f"/v2/models/{a.model}")
        meta = json.loads(meta)
        input_name = meta["inputs"][0]["name"]
    except Exception as e:  # noqa: BLE001 - reported
        result(False, name, f"model metadata: {e}")
        return 1
    x = read_pb(a.input)
    want = read_pb(a.reference)
    rows = x.shape[0]
    rms = float(np.sqrt(np.mean(want.astype(np.float64) ** 2)))
    atol = a.rtol * rms
    answers = [None] * a.requests
    errors = []
    lock = threading.Lock()
    next_i = [0]

    def worker():
        while True:
            with lock:
                i = next_i[0]
                next_i[0] += 1
            if i >= a.requests:
                return
            row = x[i % rows:i % rows + 1]
            body = {"inputs": [{"name": input_name, "shape": list(row.shape),
                                "datatype": "FP32", "data": row.ravel().tolist()}]}
            try:
                _, out = http(base, f"/v2/models/{a.model}/infer", body)
                o = json.loads(out)["outputs"][0]
                answers[i] = (o["shape"], np.asarray(o["data"], dtype=np.float32))
            except urllib.error.HTTPError as e:
                with lock:
                    errors.append(f"request {i}: HTTP {e.code}: {e.read()[:300]!r}")
            except Exception as e:  # noqa: BLE001 - reported
                with lock:
                    errors.append(f"request {i}: {e}")

    t1 = time.time()
    threads = [threading.Thread(target=worker) for _ in range(a.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.time() - t1
    worst, worst_i, same, shape_bad = 0.0, -1, 0, []
    row_shape = list(want.shape[1:])
    for i, ans in enumerate(answers):
        if ans is None:
            continue
        shape, got = ans
        if shape != [1] + row_shape:
            shape_bad.append(f"request {i}: shape {shape}, want {[1] + row_shape}")
            continue
        ref = want[i % rows].ravel()
        e = float(np.max(np.abs(got - ref) / (atol + a.rtol * np.abs(ref))))
        if not e <= worst:
            worst, worst_i = (math.inf if math.isnan(e) else e), i
        if want.ndim == 2:
            same += int(np.argmax(got) == np.argmax(ref))
    answered = sum(ans is not None for ans in answers)
    ok = not errors and not shape_bad and answered == a.requests and worst <= 1.0
    if want.ndim == 2:
        ok = ok and same == answered
    detail = "; ".join((errors + shape_bad)[:5])
    result(ok, name + "_results",
           f"{answered}/{a.requests} requests of batch 1 from {a.concurrency} threads in "
           f"{secs:.2f} s, worst |diff| / ({a.rtol:g} rms + {a.rtol:g} |ref|) = {worst:.3f} "
           f"(request {worst_i}, rms {rms:.3g})"
           + (f", top-1 {same}/{answered}" if want.ndim == 2 else "")
           + (f"; {detail}" if detail else ""))
    try:
        _, stats = http(base, f"/v2/models/{a.model}/stats")
        s = json.loads(stats)["model_stats"][0]
        inf, ex = int(s["inference_count"]), int(s["execution_count"])
        result(ex < inf and inf >= a.requests, name + "_batched",
               f"{inf} inferences in {ex} runs (the server batched them: fewer runs than "
               f"inferences)")
    except Exception as e:  # noqa: BLE001 - reported
        result(False, name + "_batched", f"statistics: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
