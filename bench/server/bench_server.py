"""runnel-server throughput and latency against tools/bench in the same run
(not a test).

For each model (default: the onnx wheel's light ResNet-50 and a BERT-base
layout encoder from bench/models/make_encoder.py) on --device (default: CPU
when plugins/cpu is built, else REF), all with PERFORMANCE_HINT=THROUGHPUT:

  1. tools/bench's in-process async throughput (the peer, batch 1), and
     tools/bench on a batch of --max-batch rows compiled two ways: a static
     batch dim, and the dynamic batch dim that dynamic batching compiles
     (data of --max-batch rows): is one batch-N compiled variant faster?
  2. runnel-server, batching off and on (max_batch_size --max-batch,
     max_queue_delay_us --delay-us, preferred_batch_size [--max-batch]):
     tritonclient.http, binary tensor data, closed loop at each
     --concurrency: rows/s, p50/p99 latency and ratio = server / tools/bench;
     with batching, the mean rows per run from /metrics.
  3. Open loop at 50% and 90% of each mode's best closed-loop throughput:
     requests sent on a fixed schedule whatever the answers; p50/p99 from
     the scheduled send to the answer.

Clients and server share the machine, so the client's CPU time is part of
the price.

  bench/server/run [--models resnet50,encoder] [--device CPU] [--seconds 5]
                   [--concurrency 8,32] [--max-batch 8] [--delay-us 2000]
                   [--encoder-layers 12]

The light ResNet-50's flatten is made batch-agnostic (batch_agnostic) so
that its batch dim can vary; the encoder is exported with batch 1.
"""

import argparse
import json
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np
import tritonclient.http as httpclient

TYPES = {"FP32": np.float32, "INT64": np.int64, "INT32": np.int32, "UINT8": np.uint8}


def batch_agnostic(src, dst):
    """The light ResNet-50 flattens with a Reshape to the constant [1, 2048],
    which ties it to batch 1; writes a copy with [-1, 2048] there, as an
    export with a dynamic batch axis has it. Nothing else changes."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(src)
    consts = {i.name: i for i in m.graph.initializer}
    for node in m.graph.node:
        if node.op_type == "Reshape" and node.input[1] in consts:
            shape = numpy_helper.to_array(consts[node.input[1]]).copy()
            if shape.size >= 2 and shape[0] == 1 and -1 not in shape:
                shape[0] = -1
                consts[node.input[1]].CopyFrom(numpy_helper.from_array(shape, node.input[1]))
    onnx.save(m, dst)


def host_line():
    model, flags = "unknown", set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name") and model == "unknown":
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = set(line.split(":", 1)[1].split())
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in flags]
    load = open("/proc/loadavg").read().split()[0]
    return (f"host: {model}, {os.cpu_count()} cpus, {platform.machine()} "
            f"{'+'.join(isa) or 'baseline'}, load average {load}")


def make_inputs(client, model):
    """One row for every input: random floats, and integers all 1 (a valid
    token id, token type and attention mask for the encoder)."""
    meta = client.get_model_metadata(model)
    rng = np.random.default_rng(0)
    inputs = {}
    for i in meta["inputs"]:
        shape, dtype = [max(d, 1) for d in i["shape"]], TYPES[i["datatype"]]
        inputs[i["name"]] = (rng.random(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                             else np.ones(shape, dtype))
    return inputs


def npy_flags(inputs, rows, work, tag):
    """tools/bench -i flags feeding `inputs` repeated to `rows` rows."""
    flags = []
    for k, v in inputs.items():
        path = f"{work}/{tag}-{k.replace('/', '_')}.npy"
        np.save(path, np.repeat(v, rows, axis=0))
        flags += ["-i", f"{k}={path}"]
    return flags


def infer_inputs(inputs):
    tin = []
    for name, value in inputs.items():
        t = httpclient.InferInput(name, list(value.shape), httpclient.np_to_triton_dtype(value.dtype))
        t.set_data_from_numpy(value, binary_data=True)
        tin.append(t)
    return tin


def closed_loop(url, model, inputs, concurrency, seconds):
    """Keeps `concurrency` calls in flight for `seconds`: (requests/s, latencies in ms)."""
    client = httpclient.InferenceServerClient(url=url, concurrency=concurrency)
    tin = infer_inputs(inputs)
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


def open_loop(url, model, inputs, rate, seconds, senders=48):
    """Sends at `rate` requests/s on a fixed schedule for `seconds`, whatever
    the answers: (requests sent, latencies in ms from the scheduled send to
    each answer, failures). Each send is made by one of `senders`
    threads with its own client (gevent's clients live in one thread); with
    more answers outstanding than senders a send would start late, which
    the latency (from the schedule) still counts."""
    due_times = queue.Queue()
    latencies, failures, lock = [], [0], threading.Lock()
    tin = infer_inputs(inputs)

    def sender():
        client = httpclient.InferenceServerClient(url=url)
        while True:
            due = due_times.get()
            if due is None:
                client.close()
                return
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            try:
                client.infer(model, tin)
                with lock:
                    latencies.append((time.perf_counter() - due) * 1e3)
            except Exception:  # noqa: BLE001 - a 503 counts as a failure
                with lock:
                    failures[0] += 1
    threads = [threading.Thread(target=sender) for _ in range(senders)]
    for t in threads:
        t.start()
    start = time.perf_counter() + 0.2
    n = max(int(rate * seconds), 1)
    for i in range(n):
        due = start + i / rate
        wait = due - 0.05 - time.perf_counter()  # hand it over just before it is due
        if wait > 0:
            time.sleep(wait)
        due_times.put(due)
    for _ in threads:
        due_times.put(None)
    for t in threads:
        t.join()
    return n, latencies, failures[0]


def bench_peer(args, model, work, extra=(), label="peer"):
    report = f"{work}/bench-{label}.json"
    subprocess.run([args.bench, "-m", model, "-d", args.device, "-hint", "throughput",
                    "-t", str(int(args.seconds)), "-json", report, *extra],
                   check=True, capture_output=True)
    r = json.load(open(report))["results"]
    return r["count"] * 1e3 / r["duration_ms"], r["latency"]


def metric(url, name, model):
    text = urllib.request.urlopen(f"http://{url}/metrics").read().decode()
    m = re.search(rf'{name}{{model="{model}",version="1"}} (\d+)', text)
    return int(m.group(1)) if m else 0


def serve(args, work, model_path, batching, grpc=False, prefix=(), properties=None):
    """Starts runnel-server on model_path as model "m": (process, HTTP url),
    and with grpc also its gRPC url: (process, HTTP url, gRPC url). `prefix`
    goes before the command (taskset -c CPUS); `properties` are added to the
    model's (INFERENCE_NUM_THREADS)."""
    repo = f"{work}/repo-{int(batching)}"
    os.makedirs(f"{repo}/m/1", exist_ok=True)
    shutil.copy(model_path, f"{repo}/m/1/model.onnx")
    config = {"device": args.device, "max_queue_size": 1024,
              "properties": {"PERFORMANCE_HINT": "THROUGHPUT", **(properties or {})}}
    if batching:
        config.update(max_batch_size=args.max_batch, max_queue_delay_us=args.delay_us,
                      preferred_batch_size=[args.max_batch])
    with open(f"{repo}/m/config.json", "w") as f:
        json.dump(config, f)
    port_file = f"{work}/port-{int(batching)}"
    if os.path.exists(port_file):
        os.remove(port_file)  # a server before this one wrote its port there
    grpc_file = f"{work}/grpc-port-{int(batching)}"
    grpc_flags = ["--grpc-port", "0", "--grpc-port-file", grpc_file] if grpc else []
    proc = subprocess.Popen([*prefix, args.server, "--model-repository", repo,
                             "--http-address", "127.0.0.1", "--http-port", "0",
                             "--port-file", port_file, "--drain-secs", "0", *grpc_flags],
                            stderr=open(f"{work}/server-{int(batching)}.log", "w"))
    while not os.path.exists(port_file) or not open(port_file).read().strip():
        if proc.poll() is not None:
            raise RuntimeError("runnel-server did not start: "
                               + open(f"{work}/server-{int(batching)}.log").read()[-2000:])
        time.sleep(0.05)
    url = f"127.0.0.1:{int(open(port_file).read())}"
    if not grpc:
        return proc, url
    return proc, url, f"127.0.0.1:{int(open(grpc_file).read())}"


def bench_model(args, name, model_path, work):
    print(f"== {name} ({os.path.basename(model_path)}) on {args.device}", flush=True)
    proc, url = serve(args, work, model_path, False)
    inputs = make_inputs(httpclient.InferenceServerClient(url=url), "m")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    peer_fps, peer_lat = bench_peer(args, model_path, work, npy_flags(inputs, 1, work, "one"))
    print(f"tools/bench (in process, async, hint throughput, batch 1): {peer_fps:.2f} rows/s, "
          f"p50 {peer_lat['median_ms']:.1f} ms, p99 {peer_lat['p99_ms']:.1f} ms", flush=True)

    # One batch-N compiled variant: a static batch dim against the dynamic one.
    n = args.max_batch
    rows_n = npy_flags(inputs, n, work, "batch")
    static = ",".join(f"{k}[{','.join(str(d) for d in (n,) + v.shape[1:])}]"
                      for k, v in inputs.items())
    dynamic = ",".join(f"{k}[-1,{','.join(str(d) for d in v.shape[1:])}]" for k, v in inputs.items())
    fps_static, _ = bench_peer(args, model_path, work, ["-shape", static, *rows_n], "static")
    fps_dynamic, _ = bench_peer(args, model_path, work, ["-shape", dynamic, *rows_n], "dynamic")
    print(f"tools/bench batch {n}: static batch dim {fps_static * n:.2f} rows/s, dynamic batch "
          f"dim {fps_dynamic * n:.2f} rows/s, ratio=dynamic/static "
          f"{fps_dynamic / fps_static:.2f}", flush=True)

    for batching in (False, True):
        mode = (f"batching on (max {n}, delay {args.delay_us} us)" if batching
                else "batching off")
        proc, url = serve(args, work, model_path, batching)
        try:
            closed_loop(url, "m", inputs, 2, 1)  # warm-up
            best = 0
            for c in [int(x) for x in args.concurrency.split(",")]:
                runs0, rows0 = metric(url, "nv_inference_exec_count", "m"), \
                    metric(url, "nv_inference_count", "m")
                fps, lat = closed_loop(url, "m", inputs, c, args.seconds)
                runs = metric(url, "nv_inference_exec_count", "m") - runs0
                rows = metric(url, "nv_inference_count", "m") - rows0
                best = max(best, fps)
                p50, p99 = np.percentile(lat, [50, 99])
                print(f"server {mode}, tritonclient binary concurrency={c}: {fps:.2f} rows/s, "
                      f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, {rows / max(runs, 1):.1f} rows/run, "
                      f"ratio={fps / peer_fps:.2f}", flush=True)
            for load in (0.5, 0.9):
                sent, lat, failed = open_loop(url, "m", inputs, best * load, args.seconds)
                p50, p99 = np.percentile(lat, [50, 99]) if lat else (float("nan"),) * 2
                print(f"server {mode}, open loop at {int(load * 100)}% ({best * load:.2f} req/s, "
                      f"{sent} sent): {len(lat)} answered, {failed} failed, p50 {p50:.1f} ms, "
                      f"p99 {p99:.1f} ms", flush=True)
        except Exception:
            print(open(f"{work}/server-{int(batching)}.log").read()[-3000:])
            raise
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--models", default="resnet50,encoder",
                    help="resnet50, encoder, or paths of .onnx files")
    ap.add_argument("--onnx-data", required=True)
    ap.add_argument("--device", default="CPU")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--concurrency", default="8,32")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--delay-us", type=int, default=2000)
    ap.add_argument("--encoder-layers", type=int, default=12,
                    help="BERT-base has 12; fewer keep the layout at a fraction of the time")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rn_bench_server_")
    print(host_line(), flush=True)
    try:
        for name in args.models.split(","):
            if name == "resnet50":
                path = f"{work}/resnet50.onnx"
                batch_agnostic(f"{args.onnx_data}/light/light_resnet50.onnx", path)
            elif name == "encoder":
                path = f"{work}/encoder.onnx"
                subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "models",
                                                        "make_encoder.py"), path,
                                "--layers", str(args.encoder_layers)],
                               check=True, capture_output=True)
            else:
                path = name
            bench_model(args, name, path, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
