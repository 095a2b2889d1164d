"""runnel-server over gRPC and HTTP against tools/bench in process, on one
light CNN, at rising concurrency, in one bounded run (not a test).

For each --concurrency C (default 1,2,4,8), each for --seconds (default 3):

  - tools/bench in process: async, -nireq C, hint throughput (the peer);
  - runnel-server (batching off, hint throughput) driven by tritonclient.grpc:
    C threads, each a blocking infer after the other on one client (raw
    tensor contents);
  - the same by tritonclient.http with binary tensor data (C in flight on
    its connection pool);
  - by Debian's hey (a Go client, lighter than Python's: the server's
    HTTP side with less of the client's CPU in the price), C workers;
  - and by bench/server/grpc_load (a lean C client on gRPC's C core and
    protobuf-c: C calls in flight from one thread, a ModelInferRequest
    built from the model's metadata with raw_input_contents, every answer
    decoded and checked for status, outputs, shapes and sizes): gRPC's
    counterpart of hey, with the client's CPU a small part of a 2-core
    machine's;

printing rows/s, p50 and p99 per protocol, ratio= server / tools/bench at
the same C, and grpc/http; and CPU time per request: the server process's
utime + stime (/proc/PID/stat, all its threads) over each timed window
divided by the answers in it, against tools/bench's (its CPU over the run
less that of a run of up to 16 iterations, over the difference in iterations: the
compile cancels out), cpu-ratio = tools/bench's / the server's; front= the
part of the server's CPU per request spent outside the model's threads
(rn-s*: stream workers and their teams), that is in gRPC's or libmicrohttpd's
threads, the runtime's callback thread (which encodes and writes the
answer) and the main thread. CPU time per
request does not depend on what else the machine runs as much as rows/s
does (contention still costs cache misses), so it is the number to read on
a shared machine.

Pinning (--pin SERVER:CLIENT, taskset CPU lists; default auto = 0:1 on a
machine of 2 CPUs or more, `none` to share every CPU): runnel-server and
tools/bench run on the SERVER CPUs, with the model compiled for that many
threads in both (INFERENCE_NUM_THREADS; the CPU plugin otherwise counts the
machine's CPUs), and the clients (this process's threads, and hey) on the
CLIENT CPUs, so that the client's CPU is no part of the server's price, as
in-process has no client. The server's front end (gRPC's and
libmicrohttpd's threads, decoding, encoding, the kernel's socket work on
its side) shares the SERVER CPUs with the model: it is what the ratio
prices. Prints the CPU, its ISA, the load average before and after, and the
pinning.

  bench/server/protocols [--model squeezenet|resnet50|PATH.onnx] [--device CPU]
                         [--seconds 3] [--concurrency 1,2,4,8] [--pin auto|S:C|none]
                         [--no-hey] [--grpc-load PATH] [--rounds N]
"""

import argparse
import json
import os
import re
import resource
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
from bench_server import (batch_agnostic, closed_loop, host_line,  # noqa: E402
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


def hey(url, model, inputs, concurrency, seconds, work, cpus=None):
    """Debian's hey (a Go client, lighter than Python's) posting binary v2
    requests for `seconds` with `concurrency` workers (on `cpus`, taskset's
    list, when given): (requests/s, p50 ms, p99 ms, nan under 100 answers,
    answers), or a string saying why there is none."""
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
    pin = ["taskset", "-c", cpus] if cpus else []
    out = subprocess.run([*pin, "hey", "-z", f"{seconds:g}s", "-c", str(concurrency), "-m", "POST",
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
            float(p99.group(1)) * 1e3 if p99 else float("nan"), int(ok.group(1)))


def cpu_ticks(pid):
    """utime + stime of a process (all its threads) in clock ticks."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def front_ticks(pid):
    """utime + stime, in clock ticks, of the process's threads that are not
    the model's (named rn-s<stream>w<worker> or rn-s<stream>t<thread>)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            text = open(f"/proc/{pid}/task/{task}/stat").read()
        except OSError:
            continue  # ended meanwhile
        name = text[text.index("(") + 1:text.rindex(")")]
        if re.fullmatch(r"rn-s\d+[wt]\d+", name):
            continue
        fields = text.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total


def grpc_load(binary, url, model, concurrency, seconds, cpus=None):
    """bench/server/grpc_load keeping `concurrency` ModelInfer calls of
    `model` in flight for `seconds` (on `cpus` when given), every answer
    checked: its JSON report, or a string saying why there is none."""
    if not binary or not os.path.exists(binary):
        return "not built (bazel build -c opt //bench/server:grpc_load)"
    pin = ["taskset", "-c", cpus] if cpus else []
    out = subprocess.run([*pin, binary, url, model, str(concurrency), f"{seconds:g}"],
                         capture_output=True, text=True, timeout=seconds + 60)
    try:
        report = json.loads(out.stdout)
    except ValueError:
        return "no report: " + " ".join((out.stdout + out.stderr).split())[-300:]
    if report["errors"]:
        return f"{report['errors']} errors, the first {report.get('first_status')}: " \
               f"{report.get('first_error')}"
    return report


TICK = os.sysconf("SC_CLK_TCK")


def timed(server_pid, run):
    """Runs `run` (-> (rate, latencies, requests)) and adds the server's CPU
    seconds per request over it, the part of it outside the model's threads
    (front_ticks), and the client's (this process: its threads are the
    Python clients)."""
    t0, f0, c0 = cpu_ticks(server_pid), front_ticks(server_pid), time.process_time()
    rate, lat, n = run()
    server = (cpu_ticks(server_pid) - t0) / TICK
    front = (front_ticks(server_pid) - f0) / TICK
    client = time.process_time() - c0
    return rate, lat, server / max(n, 1), client / max(n, 1), front / max(n, 1)


def children_cpu():
    """CPU seconds (user + system) of the children reaped so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bench_peer_cpu(args, path, work, extra, label, prefix):
    """tools/bench in process, timed for --seconds: (rows/s, latency, CPU
    seconds per request). Its CPU per request leaves the compile out: a
    second run of 16 iterations is subtracted (CPU and count)."""
    def one(budget, tag):
        report = f"{work}/bench-{label}-{tag}.json"
        before = children_cpu()
        subprocess.run([*prefix, args.bench, "-m", path, "-d", args.device, "-hint", "throughput",
                   *budget, "-json", report, *extra],
                       check=True, capture_output=True, timeout=600)
        r = json.load(open(report))["results"]
        return r, children_cpu() - before
    full, cpu_full = one(["-t", f"{max(int(args.seconds), 1)}"], "t")
    short, cpu_short = one(["-niter", str(max(1, min(16, full["count"] // 4)))], "n")
    extra = full["count"] - short["count"]
    per = (cpu_full - cpu_short) / extra if extra > 0 else float("nan")  # too few to tell
    return full["count"] * 1e3 / full["duration_ms"], full["latency"], per


def parse_pin(text):
    """--pin SERVER:CLIENT (CPU lists for taskset -c), or none."""
    if text == "none":
        return None
    if text == "auto":
        if (os.cpu_count() or 1) < 2:
            return None
        return "0", "1"
    server, client = text.split(":")
    return server, client


def cpu_list(text):
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--bench", required=True)
    ap.add_argument("--onnx-data", required=True)
    ap.add_argument("--model", default="squeezenet")
    ap.add_argument("--device", default="CPU")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--concurrency", default="1,2,4,8")
    ap.add_argument("--pin", default="auto",
                    help="SERVER_CPUS:CLIENT_CPUS for taskset -c (auto: 0:1), or none")
    ap.add_argument("--no-hey", action="store_true", help="skip Debian's hey")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat the sweep (tools/bench and every client at each C) this many "
                         "times and print the median ratios: on a shared machine")
    ap.add_argument("--grpc-load", default="",
                    help="bench/server/grpc_load's binary (the light gRPC client); none: skipped")
    args = ap.parse_args()
    args.max_batch, args.delay_us = 1, 0  # serve() reads them only with batching on
    pin = parse_pin(args.pin)
    prefix, props, extra = (), {}, []
    if pin is not None:
        n = len(cpu_list(pin[0]))
        prefix = ("taskset", "-c", pin[0])
        # The model is compiled for the server's cores in both, whatever
        # the machine has (the CPU plugin counts the online CPUs).
        props = {"INFERENCE_NUM_THREADS": str(n)}
        extra = ["-nthreads", str(n)]
        os.sched_setaffinity(0, cpu_list(pin[1]))

    work = tempfile.mkdtemp(prefix="rn_bench_protocols_")
    print(host_line(), flush=True)
    print("pinning: " + (f"runnel-server and tools/bench on CPU {pin[0]} (INFERENCE_NUM_THREADS "
                         f"{props['INFERENCE_NUM_THREADS']}), the clients on CPU {pin[1]}"
                         if pin else "none (server, tools/bench and clients share every CPU)"),
          flush=True)
    try:
        if args.model == "squeezenet":
            path = f"{args.onnx_data}/light/light_squeezenet.onnx"
        elif args.model == "resnet50":
            path = f"{work}/resnet50.onnx"
            batch_agnostic(f"{args.onnx_data}/light/light_resnet50.onnx", path)
        else:
            path = args.model
        proc, url, grpc_url = serve(args, work, path, False, grpc=True, prefix=prefix,
                                    properties=props)
        try:
            inputs = make_inputs(httpclient.InferenceServerClient(url=url), "m")
            feed = npy_flags(inputs, 1, work, "one")
            grpc_closed_loop(grpc_url, "m", inputs, 2, 1)  # warm-up, both protocols
            closed_loop(url, "m", inputs, 2, 1)
            print(f"== {args.model} ({os.path.basename(path)}) on {args.device}, "
                  f"{args.seconds:g} s per point; cpu= CPU ms per request of the server "
                  f"process (utime+stime, /proc) or of tools/bench (less its compile); "
                  f"ratio= rows/s over tools/bench's; cpu-ratio= tools/bench's CPU per "
                  f"request over the server's (>= 1: as cheap)", flush=True)
            ratios = {}  # (c, name) -> ratios of each round
            sweep = [int(x) for x in args.concurrency.split(",")]
            for rnd, c in [(r, c) for r in range(args.rounds) for c in sweep]:
                def keep(name, value):
                    ratios.setdefault((c, name), []).append(value)
                peer, peer_lat, peer_cpu = bench_peer_cpu(args, path, work,
                                                          ["-nireq", str(c), *feed, *extra],
                                                          f"peer-{c}", prefix)
                g, g_lat, g_cpu, g_client, g_front = timed(proc.pid, lambda: with_count(
                    grpc_closed_loop(grpc_url, "m", inputs, c, args.seconds)))
                h, h_lat, h_cpu, h_client, h_front = timed(proc.pid, lambda: with_count(
                    closed_loop(url, "m", inputs, c, args.seconds)))
                gp = np.percentile(g_lat, [50, 99])
                hp = np.percentile(h_lat, [50, 99])
                keep("gRPC (tritonclient)", g / peer)
                keep("HTTP (tritonclient)", h / peer)
                keep("grpc/http (tritonclient)", g / h)
                keep("cpu-ratio gRPC (tritonclient)", peer_cpu / g_cpu)
                keep("cpu-ratio HTTP (tritonclient)", peer_cpu / h_cpu)
                line = (f"{'round ' + str(rnd + 1) + ' ' if args.rounds > 1 else ''}c={c}: tools/bench {peer:.1f} rows/s (p50 {peer_lat['median_ms']:.1f}, "
                        f"p99 {peer_lat['p99_ms']:.1f} ms) cpu {peer_cpu * 1e3:.2f} | "
                        f"gRPC {g:.1f} rows/s (p50 {gp[0]:.1f}, p99 {gp[1]:.1f} ms) "
                        f"ratio={g / peer:.2f} cpu {g_cpu * 1e3:.2f} (front {g_front * 1e3:.2f}) "
                        f"cpu-ratio={peer_cpu / g_cpu:.2f} | HTTP {h:.1f} rows/s (p50 "
                        f"{hp[0]:.1f}, p99 {hp[1]:.1f} ms) ratio={h / peer:.2f} cpu "
                        f"{h_cpu * 1e3:.2f} (front {h_front * 1e3:.2f}) "
                        f"cpu-ratio={peer_cpu / h_cpu:.2f} | grpc/http rows/s={g / h:.2f} "
                        f"cpu={h_cpu / g_cpu:.2f} | client cpu gRPC {g_client * 1e3:.2f}, "
                        f"HTTP {h_client * 1e3:.2f}")
                if not args.no_hey:
                    t0 = cpu_ticks(proc.pid)
                    hy = hey(url, "m", inputs, c, args.seconds, work, pin[1] if pin else None)
                    if isinstance(hy, str):
                        line += f" | hey: {hy}"
                    else:
                        hy_cpu = (cpu_ticks(proc.pid) - t0) / TICK / max(hy[3], 1)
                        keep("hey (HTTP)", hy[0] / peer)
                        keep("cpu-ratio hey", peer_cpu / hy_cpu)
                        line += (f" | hey (HTTP) {hy[0]:.1f} rows/s (p50 {hy[1]:.1f}, p99 "
                                 f"{hy[2]:.1f} ms) ratio={hy[0] / peer:.2f} cpu "
                                 f"{hy_cpu * 1e3:.2f} cpu-ratio={peer_cpu / hy_cpu:.2f}")
                if args.grpc_load != "none":
                    t0, f0 = cpu_ticks(proc.pid), front_ticks(proc.pid)
                    gl = grpc_load(args.grpc_load, grpc_url, "m", c, args.seconds,
                                   pin[1] if pin else None)
                    if isinstance(gl, str):
                        line += f" | grpc_load: {gl}"
                    else:
                        n = max(gl["answers"], 1)
                        gl_cpu = (cpu_ticks(proc.pid) - t0) / TICK / n
                        gl_front = (front_ticks(proc.pid) - f0) / TICK / n
                        keep("grpc_load (gRPC)", gl["rate"] / peer)
                        keep("cpu-ratio grpc_load", peer_cpu / gl_cpu)
                        if not args.no_hey and not isinstance(hy, str):
                            keep("grpc_load/hey", gl["rate"] / hy[0])
                        line += (f" | grpc_load (gRPC, C client) {gl['rate']:.1f} rows/s (p50 "
                                 f"{gl['p50_ms']:.1f}, p99 {gl['p99_ms']:.1f} ms) ratio="
                                 f"{gl['rate'] / peer:.2f} cpu {gl_cpu * 1e3:.2f} (front "
                                 f"{gl_front * 1e3:.2f}) cpu-ratio={peer_cpu / gl_cpu:.2f} "
                                 f"client cpu {gl['cpu_ms']:.2f}, {gl['answers']} answers "
                                 f"checked")
                        if not args.no_hey and not isinstance(hy, str):
                            line += f" | grpc_load/hey rows/s={gl['rate'] / hy[0]:.2f}"
                print(line, flush=True)
            if args.rounds > 1:
                print(f"== median (min-max) over {args.rounds} rounds of the rows/s ratios "
                      f"(server / tools/bench of the same round and C; grpc/http, grpc_load/hey: "
                      f"of the same round and C) and of the cpu-ratios", flush=True)
                for c in sweep:
                    cells = [f"{name} {np.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
                             for (cc, name), v in ratios.items() if cc == c]
                    print(f"c={c}: " + " | ".join(cells), flush=True)
        except Exception:
            print(open(f"{work}/server-0.log").read()[-3000:])
            raise
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        print(host_line(), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def with_count(result):
    rate, latencies = result
    return rate, latencies, len(latencies)


if __name__ == "__main__":
    main()
