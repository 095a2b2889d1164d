"""End-to-end tests of runnel-server with clients nobody here wrote.

Run by scripts/test-server (which builds the server and tools/run, makes the
venv and passes their paths): starts runnel-server on loopback over a model
repository made of real ONNX models (the onnx wheel's node tests and light
SqueezeNet), then checks, with tritonclient.http (binary and JSON),
tritonclient.grpc (e2e_grpc.py), curl, hey, raw sockets and
prometheus_client's parser:

  - metadata, health and readiness; outputs equal tools/run's on the same
    inputs (FP32, UINT8, BOOL, FP16) and the ONNX semantics for BYTES;
  - bad input answered with the right code and a message naming the problem,
    the server serving on afterwards (malformed JSON, wrong shape/datatype,
    binary size mismatch, oversized body, unknown model/version, truncated
    connection);
  - overload: hey at many times the capacity gets 503s at once, successes
    go on, peak RSS stays bounded, and the server recovers;
  - metrics agree with what the clients counted;
  - dynamic batching: joined batches split back exactly; a batch waiting
    max_queue_delay_us, and a preferred size run at once;
  - pipelines (steps chained model to model): metadata, outputs, a failing
    step named;
  - repository polling adds and removes versions, and reloads a changed
    config.json, with no failed request;
  - gRPC (e2e_grpc.py): metadata, config, outputs equal tools/run's, typed
    contents, bad requests with the right status codes, async and streaming
    infer; the statistics and repository extensions over both protocols;
  - SIGTERM: readiness off at once, every accepted call answered (HTTP and
    gRPC), exit 0.

Prints one line per case, "PASS name" / "FAIL name: why" / "SKIP name: why",
then "N passed, N failed"; exits non-zero when a case failed.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np
import tritonclient.http as httpclient
import e2e_devices
import e2e_grpc
import e2e_install
import e2e_limits
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException

RESULTS = {"passed": 0, "failed": 0}


def case(fn):
    """Runs a test case, records and prints its outcome."""
    start = time.time()
    try:
        skip = fn()
        print(f"  {fn.__name__}: {time.time() - start:.1f} s", flush=True)
        if isinstance(skip, str):
            print(f"SKIP {fn.__name__}: {skip}", flush=True)
            return
        print(f"PASS {fn.__name__}", flush=True)
        RESULTS["passed"] += 1
    except Exception as e:  # noqa: BLE001 - every failure is reported
        print(f"FAIL {fn.__name__}: {e!r}", flush=True)
        traceback.print_exc()
        RESULTS["failed"] += 1


class Server:
    """A runnel-server process on a free loopback port."""

    def __init__(self, binary, repo, *flags, env=None):
        self.dir = tempfile.mkdtemp(prefix="rn_server_")
        port_file = os.path.join(self.dir, "port")
        grpc_port_file = os.path.join(self.dir, "grpc_port")
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.proc = subprocess.Popen(
            [binary, "--model-repository", repo, "--http-address", "127.0.0.1",
             "--http-port", "0", "--port-file", port_file, "--grpc-port", "0",
             "--grpc-port-file", grpc_port_file, *flags],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 120
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"runnel-server did not start: {self.output()}")
            time.sleep(0.05)
        self.port = int(open(port_file).read())
        self.url = f"127.0.0.1:{self.port}"
        self.grpc_port = int(open(grpc_port_file).read())
        self.grpc_url = f"127.0.0.1:{self.grpc_port}"

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def vm_hwm_kib(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return -1

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc


def request(server, method, path, body=None, headers=None):
    """One HTTP request on a fresh connection: (status, headers, body bytes)."""
    conn = http.client.HTTPConnection(server.url, timeout=60)
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, dict(r.getheaders()), data


def expect_error(server, path, body, status, needle, headers=None):
    code, _, data = request(server, "POST", path, body, headers)
    assert code == status, f"{path}: HTTP {code}, want {status}: {data[:300]!r}"
    message = json.loads(data)["error"]
    assert needle in message, f"{path}: error {message!r} lacks {needle!r}"


DYNAMIC_ADD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "data",
                           "dynamic_add.onnx")


def make_repo(root, onnx_data):
    node = os.path.join(onnx_data, "node")
    models = {
        "add": f"{node}/test_add/model.onnx",
        "add_uint8": f"{node}/test_add_uint8/model.onnx",
        "and2d": f"{node}/test_and2d/model.onnx",
        "cast16": f"{node}/test_cast_FLOAT16_to_FLOAT/model.onnx",
        "concat": f"{node}/test_string_concat/model.onnx",
        "squeezenet": f"{onnx_data}/light/light_squeezenet.onnx",
    }
    for name, path in models.items():
        os.makedirs(f"{root}/{name}/1")
        shutil.copy(path, f"{root}/{name}/1/model.onnx")
        with open(f"{root}/{name}/config.json", "w") as f:
            json.dump({"device": "REF"}, f)
    # Two versions, both served; and a small queue for the overload case.
    os.makedirs(f"{root}/multi/2")
    shutil.copytree(f"{root}/add/1", f"{root}/multi/1")
    shutil.copy(models["add"], f"{root}/multi/2/model.onnx")
    with open(f"{root}/multi/config.json", "w") as f:
        json.dump({"device": "REF", "version_policy": {"all": {}}}, f)
    os.makedirs(f"{root}/batched/1")
    shutil.copy(DYNAMIC_ADD, f"{root}/batched/1/model.onnx")
    with open(f"{root}/batched/config.json", "w") as f:
        json.dump({"device": "REF", "max_batch_size": 8,
                   "properties": {"PERFORMANCE_HINT": "LATENCY"}}, f)
    with open(f"{root}/squeezenet/config.json", "w") as f:
        json.dump({"device": "REF", "max_queue_size": 4}, f)
    # Batching that waits up to 300 ms for a batch, and runs a preferred 4 at once.
    plain = {"device": "REF", "properties": {"PERFORMANCE_HINT": "LATENCY"}}
    models = {"delayed": dict(plain, max_batch_size=8, max_queue_delay_us=300000,
                              preferred_batch_size=[4]),
              "add_step": {"device": "REF"}, "dyn_step": {"device": "REF"},
              "reload": {"device": "REF"}}
    for name, config in models.items():
        os.makedirs(f"{root}/{name}/1")
        shutil.copy(models_src(name, node), f"{root}/{name}/1/model.onnx")
        with open(f"{root}/{name}/config.json", "w") as f:
            json.dump(config, f)
    # A stateful model: dynamic_add as an accumulator (state y <- sum), so each
    # answer is the sum of its sequence's x so far.
    os.makedirs(f"{root}/accum/1")
    shutil.copy(DYNAMIC_ADD, f"{root}/accum/1/model.onnx")
    with open(f"{root}/accum/config.json", "w") as f:
        json.dump({"device": "REF", "max_batch_size": 8,
                   "sequence": {"state": [{"input": "y", "output": "sum"}],
                                "max_idle_us": 1000000}}, f)
    # Pipelines: z = (a + b) + b on add_step twice; and one whose step 2
    # cannot take step 1's output.
    steps = [{"model": "add_step", "inputs": {"x": "a", "y": "b"}, "outputs": {"sum": "t"}},
             {"model": "add_step", "inputs": {"x": "t", "y": "b"}, "outputs": {"sum": "z"}}]
    pipelines = {"pipe": steps,
                 "pipe_bad": [steps[0], dict(steps[1], model="dyn_step")]}
    for name, pipeline_steps in pipelines.items():
        os.makedirs(f"{root}/{name}")
        with open(f"{root}/{name}/config.json", "w") as f:
            json.dump({"pipeline": {"inputs": ["a", "b"], "outputs": ["z"],
                                    "steps": pipeline_steps}}, f)


def models_src(name, node):
    """The ONNX file behind the extra models: test_add ([3,4,5]) or dynamic_add ([N,4])."""
    return f"{node}/test_add/model.onnx" if name == "add_step" else DYNAMIC_ADD


def tools_run(run_binary, model, inputs, workdir):
    """tools/run's outputs on the same inputs (written as .npy files)."""
    out = os.path.join(workdir, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cmd = [run_binary, "-m", model, "-d", "REF", "-o", out]
    for name, value in inputs.items():
        path = os.path.join(workdir, f"{name}.npy")
        np.save(path, value)
        cmd += ["-i", f"{name}={path}"]
    subprocess.run(cmd, check=True, capture_output=True)
    return {f[:-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--onnx-data", required=True)
    ap.add_argument("--overload-requests", type=int, default=120,
                    help="requests hey sends in the overload case (fewer under sanitizers)")
    ap.add_argument("--sanitized", action="store_true",
                    help="the server runs under ASan/UBSan or TSan (slower: wider time bounds)")
    ap.add_argument("--installed", default="",
                    help="a prefix scripts/install installed runnel into (its case skips without)")
    ap.add_argument("--only", default="",
                    help="comma-separated case names: run only these (for a narrow check)")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rn_e2e_")
    repo = os.path.join(work, "repo")
    make_repo(repo, args.onnx_data)
    rng = np.random.default_rng(15)
    server = Server(args.server, repo, "--max-body-bytes", str(4 << 20),
                    "--repository-poll-secs", "1", "--drain-secs", "1", "--threads", "4")
    client = httpclient.InferenceServerClient(url=server.url, concurrency=8)
    counted = {}  # model -> [successes, failures] as the clients saw them

    def count(model, ok):
        counted.setdefault(model, [0, 0])[0 if ok else 1] += 1

    def triton_infer(model, inputs, binary, outputs=None, version=""):
        tin = []
        for name, value in inputs.items():
            dt = "BYTES" if value.dtype == object else httpclient.np_to_triton_dtype(value.dtype)
            t = httpclient.InferInput(name, list(value.shape), dt)
            t.set_data_from_numpy(value, binary_data=binary)
            tin.append(t)
        tout = [httpclient.InferRequestedOutput(o, binary_data=binary) for o in outputs or []]
        try:
            r = client.infer(model, tin, outputs=tout or None, model_version=version)
        except InferenceServerException:
            count(model, False)
            raise
        count(model, True)
        return r

    def health_and_metadata():
        assert client.is_server_live()
        assert client.is_server_ready()
        meta = client.get_server_metadata()
        assert meta["name"] == "runnel-server", meta
        assert "binary_tensor_data" in meta["extensions"], meta
        m = client.get_model_metadata("add")
        assert m["name"] == "add" and m["versions"] == ["1"], m
        assert [i["name"] for i in m["inputs"]] == ["x", "y"], m
        assert m["inputs"][0] == {"name": "x", "datatype": "FP32", "shape": [3, 4, 5]}, m
        assert m["outputs"][0]["name"] == "sum", m
        assert client.get_model_metadata("multi")["versions"] == ["1", "2"]
        assert client.is_model_ready("add")
        assert client.is_model_ready("multi", "2")
        assert not client.is_model_ready("multi", "9")
        assert not client.is_model_ready("nope")

    def numeric_outputs_equal_tools_run():
        cases = {
            "add": {"x": rng.standard_normal((3, 4, 5), np.float32),
                    "y": rng.standard_normal((3, 4, 5), np.float32)},
            "add_uint8": {"x": rng.integers(0, 100, (3, 4, 5), np.uint8),
                          "y": rng.integers(0, 100, (3, 4, 5), np.uint8)},
            "and2d": {"x": rng.integers(0, 2, (3, 4)).astype(bool),
                      "y": rng.integers(0, 2, (3, 4)).astype(bool)},
            "cast16": {"input": rng.standard_normal((3, 4), np.float32).astype(np.float16)},
            "squeezenet": {"data_0": rng.random((1, 3, 224, 224), np.float32)},
        }
        for model, inputs in cases.items():
            want = tools_run(args.run, f"{repo}/{model}/1/model.onnx", inputs, work)
            assert want, f"{model}: tools/run wrote no output"
            for binary in (True, False):
                r = triton_infer(model, inputs, binary)
                for name, value in want.items():
                    got = r.as_numpy(name)
                    assert got is not None, f"{model}: no output {name}"
                    assert got.dtype == value.dtype, f"{model}/{name}: {got.dtype} vs {value.dtype}"
                    assert got.shape == value.shape, f"{model}/{name}: {got.shape} vs {value.shape}"
                    assert np.array_equal(got, value), f"{model}/{name} (binary={binary}) differs"

    def bytes_and_requested_outputs():
        x = np.array([b"abc", "d\u00e9".encode()], dtype=object)
        y = np.array([b"12", b""], dtype=object)
        for binary in (True, False):
            r = triton_infer("concat", {"x": x, "y": y}, binary, outputs=["result"])
            got = [v if isinstance(v, bytes) else v.encode() for v in r.as_numpy("result")]
            assert got == [b"abc12", "d\u00e9".encode()], got
        r = triton_infer("multi", {"x": np.ones((3, 4, 5), np.float32),
                                   "y": np.ones((3, 4, 5), np.float32)}, True, version="1")
        assert r.get_response()["model_version"] == "1"
        assert np.all(r.as_numpy("sum") == 2)

    def dynamic_batching():
        m = client.get_model_metadata("batched")
        assert m["inputs"][0]["shape"] == [-1, 4], m
        c = httpclient.InferenceServerClient(url=server.url, concurrency=16)
        sent = []
        for i in range(48):
            k = 1 + i % 3
            x = rng.standard_normal((k, 4), np.float32)
            y = rng.standard_normal((k, 4), np.float32)
            a = httpclient.InferInput("x", [k, 4], "FP32")
            a.set_data_from_numpy(x)
            b = httpclient.InferInput("y", [k, 4], "FP32")
            b.set_data_from_numpy(y)
            sent.append((x + y, c.async_infer("batched", [a, b])))
        for want, pending in sent:
            got = pending.get_result().as_numpy("sum")
            count("batched", True)
            assert np.array_equal(got, want), (got, want)
        c.close()
        x = np.ones((9, 4), np.float32)
        try:
            triton_infer("batched", {"x": x, "y": x}, True)
            raise AssertionError("a batch of 9 on max_batch_size 8 was accepted")
        except InferenceServerException as e:
            assert e.status() == "400" and "not in 1..8" in e.message(), e

    def batching_delay_and_preferred_size():
        c = httpclient.InferenceServerClient(url=server.url, concurrency=8)

        def send(n):
            sent = []
            for _ in range(n):
                x = rng.standard_normal((1, 4), np.float32)
                a = httpclient.InferInput("x", [1, 4], "FP32")
                a.set_data_from_numpy(x)
                b = httpclient.InferInput("y", [1, 4], "FP32")
                b.set_data_from_numpy(x)
                sent.append((x + x, c.async_infer("delayed", [a, b])))
            for want, pending in sent:
                got = pending.get_result().as_numpy("sum")
                count("delayed", True)
                assert np.array_equal(got, want), (got, want)
        start = time.time()
        send(1)  # alone: waits out the delay for company
        alone = time.time() - start
        assert alone >= 0.3, f"a lone request was answered in {alone:.3f} s, before the delay"
        start = time.time()
        send(4)  # the preferred size: runs once the 4th arrives
        four = time.time() - start
        c.close()
        status, _, data = request(server, "GET", "/metrics")
        execs = re.search(r'nv_inference_exec_count\{model="delayed",version="1"\} (\d+)',
                          data.decode())
        assert execs and int(execs.group(1)) == 2, (execs and execs.group(0), four)
        print(f"  delayed: lone request {alone * 1000:.0f} ms, 4 requests in one run "
              f"{four * 1000:.0f} ms")

    def pipelines():
        m = client.get_model_metadata("pipe")
        assert m["platform"] == "ensemble", m
        assert m["inputs"] == [{"name": "a", "datatype": "FP32", "shape": [3, 4, 5]},
                               {"name": "b", "datatype": "FP32", "shape": [3, 4, 5]}], m
        assert [o["name"] for o in m["outputs"]] == ["z"], m
        assert client.is_model_ready("pipe")
        a = rng.standard_normal((3, 4, 5), np.float32)
        b = rng.standard_normal((3, 4, 5), np.float32)
        for binary in (True, False):
            r = triton_infer("pipe", {"a": a, "b": b}, binary)
            assert r.get_response()["model_name"] == "pipe"
            assert np.array_equal(r.as_numpy("z"), (a + b) + b), binary
        try:
            triton_infer("pipe_bad", {"a": a, "b": b}, True)
            raise AssertionError("pipe_bad answered")
        except InferenceServerException as e:
            assert e.status() == "400", e
            assert "pipeline 'pipe_bad' step 2 (model 'dyn_step'): input 'x': shape [3,4,5]" \
                in e.message(), e.message()

    def curl_json_infer():
        body = {"id": "curl-1", "inputs": [
            {"name": "x", "datatype": "FP32", "shape": [3, 4, 5], "data": [[[1.5] * 5] * 4] * 3},
            {"name": "y", "datatype": "FP32", "shape": [3, 4, 5], "data": [0.25] * 60}]}
        out = subprocess.run(
            ["curl", "-s", "-f", "-X", "POST", f"http://{server.url}/v2/models/add/infer",
             "-H", "Content-Type: application/json", "-d", json.dumps(body)],
            check=True, capture_output=True).stdout
        count("add", True)
        r = json.loads(out)
        assert r["id"] == "curl-1" and r["model_name"] == "add", r
        assert r["outputs"][0]["data"] == [1.75] * 60, r["outputs"][0]
        live = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                               f"http://{server.url}/v2/health/ready"],
                              capture_output=True, text=True).stdout
        assert live == "200", live

    def bad_input_is_refused_and_serving_goes_on():
        path = "/v2/models/add/infer"
        good = {"name": "y", "datatype": "FP32", "shape": [3, 4, 5], "data": [1] * 60}

        def body(x, **extra):
            return json.dumps({"inputs": [x, good], **extra})
        expect_error(server, path, b'{"inputs": [', 400, "malformed JSON")
        expect_error(server, path, body({"name": "x", "datatype": "FP32", "shape": [3, 4, 4],
                                         "data": [1] * 48}), 400,
                     "input 'x': shape [3,4,4], the model takes [3,4,5]")
        expect_error(server, path, body({"name": "x", "datatype": "INT32", "shape": [3, 4, 5],
                                         "data": [1] * 60}), 400,
                     "input 'x': datatype INT32, the model takes FP32")
        expect_error(server, path, body({"name": "x", "datatype": "FP32", "shape": [3, 4, 5],
                                         "data": [1] * 59}), 400, "needs 60 values")
        expect_error(server, path, json.dumps({"inputs": [good]}), 400, "input 'x' is missing")
        header = body({"name": "x", "datatype": "FP32", "shape": [3, 4, 5],
                       "parameters": {"binary_data_size": 240}}).encode()
        expect_error(server, path, header + b"\0" * 236, 400,
                     "binary_data_size is 240 but only 236 bytes",
                     {"Inference-Header-Content-Length": str(len(header))})
        expect_error(server, "/v2/models/nope/infer", body(good), 404, "no model 'nope'")
        expect_error(server, "/v2/models/add/versions/3/infer", body(good), 404, "no version 3")
        for _ in range(6):  # the 400s above: the model is known, so they count as its failures
            count("add", False)
        # A body over --max-body-bytes: curl sends "Expect: 100-continue" and gets 413 before
        # sending it.
        big = os.path.join(work, "big.bin")
        with open(big, "wb") as f:
            f.write(b"\0" * (5 << 20))
        out = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", "-X", "POST",
                              "--data-binary", f"@{big}", f"http://{server.url}{path}"],
                             capture_output=True, text=True).stdout
        text, code = out.rsplit("\n", 1)
        assert code == "413", out
        assert "larger than the server's limit" in json.loads(text)["error"], text
        # A connection that sends half its body and goes away.
        full = body({"name": "x", "datatype": "FP32", "shape": [3, 4, 5],
                     "data": [1] * 60}).encode()
        for cut in (10, len(full) // 2):
            s = socket.create_connection(("127.0.0.1", server.port))
            s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(full)}\r\n"
                      f"Content-Type: application/json\r\n\r\n".encode() + full[:cut])
            s.close()
        # Still serving, and right.
        r = triton_infer("add", {"x": np.full((3, 4, 5), 2, np.float32),
                                 "y": np.full((3, 4, 5), 3, np.float32)}, True)
        assert np.all(r.as_numpy("sum") == 5)
        assert client.is_server_ready()

    def overload_gets_503_and_recovers():
        if shutil.which("hey") is None:
            return "hey is not installed (Debian package hey; scripts/setup installs it)"
        x = rng.random((1, 3, 224, 224), np.float32)
        # Binary tensor data, so that the model, not JSON parsing, is the bottleneck.
        header = json.dumps({"inputs": [{"name": "data_0", "datatype": "FP32",
                                         "shape": [1, 3, 224, 224],
                                         "parameters": {"binary_data_size": x.nbytes}}]}).encode()
        body_path = os.path.join(work, "sq.bin")
        with open(body_path, "wb") as f:
            f.write(header + x.tobytes())
        before = server.vm_hwm_kib()
        n = max(args.overload_requests, 40)
        out = subprocess.run(["hey", "-n", str(n), "-c", "40", "-t", "0", "-m", "POST", "-T",
                              "application/octet-stream", "-H",
                              f"Inference-Header-Content-Length: {len(header)}", "-D", body_path,
                              f"http://{server.url}/v2/models/squeezenet/infer"],
                             check=True, capture_output=True, text=True, timeout=300).stdout
        codes = {int(c): int(n) for c, n in re.findall(r"\[(\d{3})\]\s+(\d+) responses", out)}
        assert codes.get(503, 0) > 0 and codes.get(200, 0) > 0, out
        # hey gives each of its 40 workers n // 40 requests.
        assert set(codes) <= {200, 503} and sum(codes.values()) == n // 40 * 40, out
        counted.setdefault("squeezenet", [0, 0])
        counted["squeezenet"][0] += codes[200]
        counted["squeezenet"][1] += codes[503]
        hwm = server.vm_hwm_kib()
        print(f"  overload: {codes} (hey: 40 connections, queue 4); VmHWM {before} -> {hwm} KiB")
        assert hwm < 1536 * 1024, f"peak RSS {hwm} KiB"
        r = triton_infer("squeezenet", {"data_0": x}, True)
        assert r.as_numpy("softmaxout_1").shape == (1, 1000, 1, 1)

    def metrics_agree_with_the_clients():
        status, headers, data = request(server, "GET", "/metrics")
        assert status == 200
        samples = {}
        for family in text_string_to_metric_families(data.decode()):
            for s in family.samples:
                samples[(s.name, s.labels.get("model"), s.labels.get("version"))] = s.value
        names = ["nv_inference_request_success", "nv_inference_request_failure",
                 "nv_inference_count", "nv_inference_exec_count",
                 "nv_inference_request_duration_us", "nv_inference_queue_duration_us",
                 "nv_inference_compute_input_duration_us",
                 "nv_inference_compute_infer_duration_us",
                 "nv_inference_compute_output_duration_us", "nv_inference_pending_request_count"]
        for name in names:
            # prometheus_client names a counter's sample <name>_total when the family ends so.
            assert any(k[0] in (name, name + "_total") for k in samples), f"{name} missing"

        def value(name, model, version="1"):
            for n in (name, name + "_total"):
                if (n, model, version) in samples:
                    return samples[(n, model, version)]
            raise AssertionError(f"{name}{{model={model}}} missing")
        for model, (ok, bad) in counted.items():
            if model == "multi":
                continue
            assert value("nv_inference_request_success", model) == ok, (model, ok, samples)
            assert value("nv_inference_request_failure", model) == bad, (model, bad)
            assert value("nv_inference_pending_request_count", model) == 0
        assert value("nv_inference_compute_infer_duration_us", "squeezenet") > 0
        # Batching: one execution per batch, one inference per row.
        rows = value("nv_inference_count", "batched")
        execs = value("nv_inference_exec_count", "batched")
        assert rows == 96 and 0 < execs <= 48, (rows, execs)
        print(f"  batched: {int(execs)} executions for 48 requests of 96 rows")

    def polling_adds_and_removes_versions_without_failures():
        stop = threading.Event()
        failures = []
        done = [0]

        def load():
            c = httpclient.InferenceServerClient(url=server.url)
            x = np.ones((3, 4, 5), np.float32)
            while not stop.is_set():
                a = httpclient.InferInput("x", [3, 4, 5], "FP32")
                a.set_data_from_numpy(x)
                b = httpclient.InferInput("y", [3, 4, 5], "FP32")
                b.set_data_from_numpy(x)
                try:
                    c.infer("multi", [a, b])
                    done[0] += 1
                except Exception as e:  # noqa: BLE001
                    failures.append(repr(e))
        t = threading.Thread(target=load)
        t.start()
        try:
            shutil.copytree(f"{repo}/multi/2", f"{repo}/multi/3")
            deadline = time.time() + 30
            while "3" not in client.get_model_metadata("multi")["versions"]:
                assert time.time() < deadline, "version 3 never appeared"
                time.sleep(0.2)
            shutil.rmtree(f"{repo}/multi/1")
            while "1" in client.get_model_metadata("multi")["versions"]:
                assert time.time() < deadline, "version 1 never left"
                time.sleep(0.2)
            time.sleep(0.5)
        finally:
            stop.set()
            t.join()
        assert client.get_model_metadata("multi")["versions"] == ["2", "3"]
        assert not failures, failures[:3]
        assert done[0] > 0

    def config_change_reloads_without_failures():
        stop = threading.Event()
        failures = []
        done = [0]

        def infer(c, rows):
            x = np.ones((rows, 4), np.float32)
            a = httpclient.InferInput("x", [rows, 4], "FP32")
            a.set_data_from_numpy(x)
            b = httpclient.InferInput("y", [rows, 4], "FP32")
            b.set_data_from_numpy(x)
            return c.infer("reload", [a, b])

        def load():
            c = httpclient.InferenceServerClient(url=server.url)
            while not stop.is_set():
                try:
                    assert np.all(infer(c, 2).as_numpy("sum") == 2)
                    done[0] += 1
                except Exception as e:  # noqa: BLE001
                    failures.append(repr(e))
        infer(client, 9)  # no batching yet: any dim 0
        t = threading.Thread(target=load)
        t.start()
        try:
            with open(f"{repo}/reload/config.json", "w") as f:
                json.dump({"device": "REF", "max_batch_size": 8}, f)
            deadline = time.time() + 30
            while True:
                assert time.time() < deadline, "the new config.json never took effect"
                try:
                    infer(client, 9)
                    time.sleep(0.2)
                except InferenceServerException as e:
                    assert e.status() == "400" and "not in 1..8" in e.message(), e
                    break
            time.sleep(0.3)
        finally:
            stop.set()
            t.join()
        assert not failures, failures[:3]
        assert done[0] > 0

    def kserve_sdk():
        # REST and gRPC, in its own process (e2e_kserve.py says why).
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e_kserve.py")
        out = subprocess.run([sys.executable, script, server.url, server.grpc_url],
                             capture_output=True, text=True, timeout=300)
        if out.returncode == 3:
            return out.stdout.strip()
        for _ in range(out.stdout.count("infer ok")):  # REST and gRPC
            count("add", True)
        assert out.returncode == 0, out.stdout + out.stderr[-2000:]
        assert out.stdout.count("infer ok") == 4, out.stdout

    def kserve_manifests_are_kserve_types():
        # deploy/kserve against the kserve SDK's models: a field KServe does not know fails.
        here = os.path.dirname(os.path.abspath(__file__))
        deploy = os.path.join(here, "..", "..", "deploy", "kserve")
        manifests = sorted(os.path.join(deploy, f) for f in os.listdir(deploy)
                           if f.endswith(".yaml"))
        typo = os.path.join(work, "typo.yaml")  # the negative control: storageURI for storageUri
        with open(manifests[0]) as f, open(typo, "w") as out:
            out.write(f.read().replace("storageUri", "storageURI"))
        script = os.path.join(here, "e2e_kserve.py")
        out = subprocess.run([sys.executable, script, "--manifests", *manifests, typo],
                             capture_output=True, text=True, timeout=300)
        if out.returncode == 3:
            return out.stdout.strip()
        assert out.returncode == 0, out.stdout + out.stderr[-2000:]
        lines = out.stdout.splitlines()
        assert [l.split()[0] for l in lines] == ["OK"] * len(manifests) + ["UNKNOWN"], \
            out.stdout
        assert "storageURI (not a field of V1beta1ModelSpec)" in lines[-1], out.stdout
        assert len(manifests) >= 3, manifests  # REST, gRPC InferenceServices and the runtime
        print("  " + "\n  ".join(lines))

    def sigterm_drains_and_exits_0():
        results = []
        lock = threading.Lock()
        c = httpclient.InferenceServerClient(url=server.url, concurrency=16)
        x = rng.random((1, 3, 224, 224), np.float32)
        pending = []
        # 3 HTTP + 2 gRPC requests in flight: what squeezenet's queue (4) and its one infer
        # request (OPTIMAL_NUMBER_OF_INFER_REQUESTS of one stream) admit at once.
        for _ in range(3):
            a = httpclient.InferInput("data_0", [1, 3, 224, 224], "FP32")
            a.set_data_from_numpy(x)
            pending.append(c.async_infer("squeezenet", [a]))
        grpc_wait = e2e_grpc.drain_with_grpc_calls(server, x)
        time.sleep(0.05)
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        status, _, _ = request(server, "GET", "/v2/health/ready")
        assert status == 503, f"ready after SIGTERM: {status}"
        assert not e2e_grpc.server_ready(server), "gRPC ServerReady after SIGTERM"
        for p in pending:
            try:
                p.get_result()
                with lock:
                    results.append(200)
            except InferenceServerException as e:
                results.append(e.status())
        assert results == [200] * 3, results
        grpc_results = grpc_wait()
        assert grpc_results == ["ok"] * 2, grpc_results
        rc = server.proc.wait(timeout=60)
        assert rc == 0, f"exit {rc}: {server.output()[-2000:]}"
        c.close()

    def start_server(*flags):
        return Server(args.server, repo, "--drain-secs", "0", "--threads", "2", *flags)

    ctx = argparse.Namespace(server=server, repo=repo, work=work, rng=rng, run=args.run,
                             count=count, counted=counted, tools_run=tools_run, request=request,
                             start_server=start_server, sanitized=args.sanitized,
                             installed=args.installed, onnx_data=args.onnx_data, Server=Server,
                             server_binary=args.server)
    grpc_cases, grpc_close = e2e_grpc.cases(ctx)
    only = set(filter(None, args.only.split(",")))
    try:
        for fn in (health_and_metadata, numeric_outputs_equal_tools_run,
                   bytes_and_requested_outputs, dynamic_batching,
                   batching_delay_and_preferred_size, pipelines, curl_json_infer,
                   bad_input_is_refused_and_serving_goes_on, overload_gets_503_and_recovers,
                   kserve_sdk, kserve_manifests_are_kserve_types,
                   metrics_agree_with_the_clients, *grpc_cases, *e2e_limits.cases(ctx),
                   *e2e_install.cases(ctx), *e2e_devices.cases(ctx),
                   polling_adds_and_removes_versions_without_failures,
                   config_change_reloads_without_failures,
                   sigterm_drains_and_exits_0):
            if not only or fn.__name__ in only:
                case(fn)
    finally:
        client.close()
        grpc_close()
        if server.proc.poll() is None:
            server.stop()
        log = server.output()
        if RESULTS["failed"]:
            print("---- runnel-server log (tail)\n" + log[-4000:])
        shutil.rmtree(work, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
