"""runnel-server throughput against tools/bench in the same run (not a test).

Serves one model on REF (or --device) with PERFORMANCE_HINT=THROUGHPUT,
measures tools/bench's in-process async throughput on the same model and
hint, then drives the server with tritonclient.http (binary tensor data,
closed loop, N calls in flight) for each concurrency, and prints per run the
throughput, p50/p99 latency and ratio = server / tools/bench. Clients and
server share the machine, so the client's CPU time is part of the price.

  bench/server/run [--model M.onnx] [--seconds 10] [--concurrency 8,32]
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import numpy as np
import tritonclient.http as httpclient


def host_line():
    model, flags = "unknown", set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model == "unknown":
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    return f"host: {model}, {os.cpu_count()} cpus, {platform.machine()} {'+'.join(isa) or 'baseline'}"


def closed_loop(url, model, inputs, concurrency, seconds):
    """Keeps `concurrency` calls in flight for `seconds`: (count, latencies in ms)."""
    client = httpclient.InferenceServerClient(url=url, concurrency=concurrency)
    tin = []
    for name, value in inputs.items():
        t = httpclient.InferInput(name, list(value.shape), httpclient.np_to_triton_dtype(value.dtype))
        t.set_data_from_numpy(value, binary_data=True)
        tin.append(t)
    latencies, lock = [], threading.Lock()
    end = time.time() + seconds

    def worker():
        while time.time() < end:
            t0 = time.perf_counter()
            client.async_infer(model, tin).get_result()
            with lock:
                latencies.append((time.perf_counter() - t0) * 1e3)
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - start
    client.close()
    return len(latencies) / elapsed, latencies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="REF")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--concurrency", default="8,32")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rn_bench_server_")
    os.makedirs(f"{work}/repo/m/1")
    shutil.copy(args.model, f"{work}/repo/m/1/model.onnx")
    with open(f"{work}/repo/m/config.json", "w") as f:
        json.dump({"device": args.device, "max_queue_size": 1024,
                   "properties": {"PERFORMANCE_HINT": "THROUGHPUT"}}, f)
    print(host_line())

    report = f"{work}/bench.json"
    subprocess.run([args.bench, "-m", args.model, "-d", args.device, "-hint", "throughput",
                    "-t", str(int(args.seconds)), "-json", report],
                   check=True, capture_output=True)
    peer = json.load(open(report))["results"]
    peer_fps = peer["throughput_fps"]
    print(f"tools/bench (in process, async, hint throughput): {peer_fps:.2f} FPS, "
          f"p50 {peer['latency']['median_ms']:.1f} ms, p99 {peer['latency']['p99_ms']:.1f} ms")

    proc = subprocess.Popen([args.server, "--model-repository", f"{work}/repo",
                             "--http-address", "127.0.0.1", "--http-port", "0",
                             "--port-file", f"{work}/port", "--drain-secs", "0"],
                            stderr=subprocess.DEVNULL)
    while not os.path.exists(f"{work}/port") or not open(f"{work}/port").read().strip():
        time.sleep(0.05)
    url = f"127.0.0.1:{int(open(f'{work}/port').read())}"
    meta = httpclient.InferenceServerClient(url=url).get_model_metadata("m")
    rng = np.random.default_rng(0)
    types = {"FP32": np.float32, "INT64": np.int64, "INT32": np.int32, "UINT8": np.uint8}
    inputs = {i["name"]: rng.random([max(d, 1) for d in i["shape"]]).astype(types[i["datatype"]])
              for i in meta["inputs"]}
    try:
        closed_loop(url, "m", inputs, 2, 1)  # warm-up
        for c in [int(x) for x in args.concurrency.split(",")]:
            fps, lat = closed_loop(url, "m", inputs, c, args.seconds)
            p50, p99 = np.percentile(lat, [50, 99])
            print(f"runnel-server tritonclient binary concurrency={c}: {fps:.2f} FPS, "
                  f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, ratio={fps / peer_fps:.2f}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
