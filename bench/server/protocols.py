"""runnel-server over gRPC and HTTP against tools/bench in process, on one
light CNN, at rising concurrency, in one bounded run (not a test).

For each --concurrency C (default 1,2,4,8), each for --seconds (default 3):

  - tools/bench in process: async, -nireq C, hint throughput (the peer);
  - runnel-server (batching off, hint throughput) driven by tritonclient.grpc:
    C threads, each a blocking infer after the other on one client (raw
    tensor contents);
  - the same by tritonclient.http with binary tensor data (C in flight on
    its connection pool);
  - and by Debian's hey (a Go client, lighter than Python's: the server's
    HTTP side with less of the client's CPU in the price), C workers;

printing rows/s, p50 and p99 per protocol, ratio= server / tools/bench at
the same C, and grpc/http. Clients and server share the machine, so the
client's CPU time is part of the price (and none of tools/bench's). Prints
the CPU, its ISA and the load average before and after.

  bench/server/protocols [--model squeezenet|resnet50|PATH.onnx] [--device CPU]
                         [--seconds 3] [--concurrency 1,2,4,8]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import signal
import sys
import tempfile
import threading
import time

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_server import (batch_agnostic, bench_peer, closed_loop, host_line,  # noqa: E402
                          make_inputs, npy_flags, serve)


def grpc_closed_loop(url, model, inputs, concurrency, seconds):
    """C threads, each one blocking gRPC infer after the other for `seconds`:
    (requests/s, latencies in ms)."""
    client = grpcclient.InferenceServerClient(url)
    tin = []
    for name, value in inputs.items():
        t = grpcclient.InferInput(name, list(value.shape), grpcclient.np_to_triton_dtype(value.dtype))
        t.set_data_from_numpy(value)
        tin.append(t)
    latencies, lock = [], threading.Lock()
    end = time.time() + seconds

    def worker():
        mine = []
        while time.time() < end:
            t0 = time.perf_counter()
            client.infer(model, tin)
            mine.append((time.perf_counter() - t0) * 1e3)
        with lock:
            latencies.extend(mine)
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.time() - start
    client.close()
    return len(latencies) / elapsed, latencies


def hey(url, model, inputs, concurrency, seconds, work):
    """Debian's hey (a Go client, lighter than Python's) posting binary v2
    requests for `seconds` with `concurrency` workers: (requests/s, p50 ms,
    p99 ms, nan under 100 answers), or a string saying why there is none."""
    if shutil.which("hey") is None:
        return "not installed (Debian's hey)"
    parts, header = [], {"inputs": []}
    for name, value in inputs.items():
        header["inputs"].append({"name": name, "datatype": httpclient.np_to_triton_dtype(value.dtype),
                                 "shape": list(value.shape),
                                 "parameters": {"binary_data_size": value.nbytes}})
        parts.append(value.tobytes())
    head = json.dumps(header).encode()
    path = f"{work}/hey-body.bin"
    with open(path, "wb") as f:
        f.write(head + b"".join(parts))
    out = subprocess.run(["hey", "-z", f"{seconds:g}s", "-c", str(concurrency), "-m", "POST",
                          "-T", "application/octet-stream", "-H",
                          f"Inference-Header-Content-Length: {len(head)}", "-D", path,
                          f"http://{url}/v2/models/{model}/infer"],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"50%+ in ([\d.]+) secs", out)
    p99 = re.search(r"99%+ in ([\d.]+) secs", out)
    ok = re.search(r"\[200\]\s+(\d+) responses", out)
    if not (rate and p50 and ok):
        return "no answers it could read: " + " ".join(out.split())[-300:]
    # hey prints no 99% line (a "0% in 0.0000") under 100 answers.
    return (float(rate.group(1)), float(p50.group(1)) * 1e3,
            float(p99.group(1)) * 1e3 if p99 else float("nan"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--onnx-data", required=True)
    ap.add_argument("--model", default="squeezenet")
    ap.add_argument("--device", default="CPU")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--concurrency", default="1,2,4,8")
    args = ap.parse_args()
    args.max_batch, args.delay_us = 1, 0  # serve() reads them only with batching on

    work = tempfile.mkdtemp(prefix="rn_bench_protocols_")
    print(host_line(), flush=True)
    try:
        if args.model == "squeezenet":
            path = f"{args.onnx_data}/light/light_squeezenet.onnx"
        elif args.model == "resnet50":
            path = f"{work}/resnet50.onnx"
            batch_agnostic(f"{args.onnx_data}/light/light_resnet50.onnx", path)
        else:
            path = args.model
        proc, url, grpc_url = serve(args, work, path, False, grpc=True)
        try:
            inputs = make_inputs(httpclient.InferenceServerClient(url=url), "m")
            feed = npy_flags(inputs, 1, work, "one")
            grpc_closed_loop(grpc_url, "m", inputs, 2, 1)  # warm-up, both protocols
            closed_loop(url, "m", inputs, 2, 1)
            print(f"== {args.model} ({os.path.basename(path)}) on {args.device}, "
                  f"{args.seconds:g} s per point", flush=True)
            for c in [int(x) for x in args.concurrency.split(",")]:
                peer, peer_lat = bench_peer(args, path, work, ["-nireq", str(c), *feed],
                                            f"peer-{c}")
                g, g_lat = grpc_closed_loop(grpc_url, "m", inputs, c, args.seconds)
                h, h_lat = closed_loop(url, "m", inputs, c, args.seconds)
                gp = np.percentile(g_lat, [50, 99])
                hp = np.percentile(h_lat, [50, 99])
                hy = hey(url, "m", inputs, c, args.seconds, work)
                print(f"concurrency={c}: tools/bench {peer:.1f} rows/s (p50 "
                      f"{peer_lat['median_ms']:.1f} ms, p99 {peer_lat['p99_ms']:.1f} ms) | "
                      f"gRPC {g:.1f} rows/s (p50 {gp[0]:.1f}, p99 {gp[1]:.1f} ms) "
                      f"ratio={g / peer:.2f} | HTTP {h:.1f} rows/s (p50 {hp[0]:.1f}, "
                      f"p99 {hp[1]:.1f} ms) ratio={h / peer:.2f} | grpc/http={g / h:.2f}"
                      + (f" | hey (HTTP) {hy[0]:.1f} rows/s (p50 {hy[1]:.1f}, p99 {hy[2]:.1f} ms) "
                         f"ratio={hy[0] / peer:.2f}" if not isinstance(hy, str) else f" | hey: {hy}"),
                      flush=True)
        except Exception:
            print(open(f"{work}/server-0.log").read()[-3000:])
            raise
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        print(host_line(), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
