"""runnel-server over gRPC, checked with tritonclient.grpc (and, for requests
that client will not make, the protobuf classes and stub it ships), and the
statistics and repository extensions over both protocols.

Part of the end-to-end suite: e2e.py builds the context (the running server
with --grpc-port, the repository, the counters the metrics case checks) and
runs these cases with its own.
"""

import json
import queue
import threading
import time

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException


def expect_grpc_error(call, code, needle):
    """Runs call(); it must fail with gRPC status `code` and a message holding needle."""
    try:
        call()
    except InferenceServerException as e:
        assert e.status() == f"StatusCode.{code}", (e.status(), e.message())
        assert needle in e.message(), f"{e.message()!r} lacks {needle!r}"
        return
    except grpc.RpcError as e:
        assert e.code().name == code, (e.code(), e.details())
        assert needle in e.details(), f"{e.details()!r} lacks {needle!r}"
        return
    raise AssertionError(f"accepted; wanted {code} with {needle!r}")


def inputs_of(values):
    tin = []
    for name, value in values.items():
        dt = "BYTES" if value.dtype == object else grpcclient.np_to_triton_dtype(value.dtype)
        t = grpcclient.InferInput(name, list(value.shape), dt)
        t.set_data_from_numpy(value)
        tin.append(t)
    return tin


def cases(ctx):
    """The gRPC cases; ctx has server, repo, work, rng, run (tools/run), count,
    counted, tools_run, request (HTTP) and start_server (another server)."""
    server, rng = ctx.server, ctx.rng
    client = grpcclient.InferenceServerClient(server.grpc_url)
    channel = grpc.insecure_channel(server.grpc_url)
    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)

    def grpc_infer(model, values, outputs=None, version="", c=None):
        tout = [grpcclient.InferRequestedOutput(o) for o in outputs or []]
        try:
            r = (c or client).infer(model, inputs_of(values), outputs=tout or None,
                                    model_version=version)
        except InferenceServerException:
            ctx.count(model, False)
            raise
        ctx.count(model, True)
        return r

    def grpc_health_metadata_and_config():
        assert client.is_server_live()
        assert client.is_server_ready()
        meta = client.get_server_metadata(as_json=True)
        assert meta["name"] == "runnel-server", meta
        assert {"binary_tensor_data", "statistics", "model_repository",
                "model_configuration"} <= set(meta["extensions"]), meta
        m = client.get_model_metadata("add", as_json=True)
        assert m["name"] == "add" and m["versions"] == ["1"] and m["platform"] == "onnx", m
        assert m["inputs"][0] == {"name": "x", "datatype": "FP32", "shape": ["3", "4", "5"]}, m
        assert [o["name"] for o in m["outputs"]] == ["sum"], m
        assert client.get_model_metadata("multi", as_json=True)["versions"] == ["1", "2"]
        assert client.is_model_ready("add")
        assert client.is_model_ready("multi", "2")
        expect_grpc_error(lambda: client.is_model_ready("nope"), "NOT_FOUND", "no model 'nope'")
        expect_grpc_error(lambda: client.get_model_metadata("multi", "9"), "NOT_FOUND",
                          "no version 9")
        c = client.get_model_config("batched", as_json=True)["config"]
        assert c["name"] == "batched" and c["max_batch_size"] == 8, c
        assert c["input"][0] == {"name": "x", "data_type": "TYPE_FP32", "dims": ["4"]}, c
        assert "dynamic_batching" in c, c
        http = json.loads(ctx.request(server, "GET", "/v2/models/batched/config")[2])
        assert http["max_batch_size"] == 8 and http["input"][0]["dims"] == [4], http
        assert http["input"][0]["data_type"] == "TYPE_FP32", http

    def grpc_outputs_equal_tools_run():
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
        for model, values in cases.items():
            want = ctx.tools_run(ctx.run, f"{ctx.repo}/{model}/1/model.onnx", values, ctx.work)
            assert want, f"{model}: tools/run wrote no output"
            r = grpc_infer(model, values)
            for name, value in want.items():
                got = r.as_numpy(name)
                assert got is not None, f"{model}: no output {name}"
                assert got.dtype == value.dtype and got.shape == value.shape, \
                    (model, name, got.dtype, got.shape, value.dtype, value.shape)
                assert np.array_equal(got, value), f"{model}/{name} differs over gRPC"
        x = np.array([b"abc", "d\u00e9".encode()], dtype=object)
        y = np.array([b"12", b""], dtype=object)
        r = grpc_infer("concat", {"x": x, "y": y}, outputs=["result"])
        assert list(r.as_numpy("result")) == [b"abc12", "d\u00e9".encode()], r.as_numpy("result")
        r = grpc_infer("multi", {"x": np.ones((3, 4, 5), np.float32),
                                 "y": np.ones((3, 4, 5), np.float32)}, version="1")
        assert r.get_response().model_version == "1" and np.all(r.as_numpy("sum") == 2)
        # A gzip-compressed request (gRPC core inflates it before the codec sees it).
        x = rng.standard_normal((3, 4, 5), np.float32)
        r = client.infer("add", inputs_of({"x": x, "y": x}), compression_algorithm="gzip")
        ctx.count("add", True)
        assert np.array_equal(r.as_numpy("sum"), x + x)
        # A pipeline answers through the gRPC encoder too: z = (a + b) + b.
        a = rng.standard_normal((3, 4, 5), np.float32)
        b = rng.standard_normal((3, 4, 5), np.float32)
        r = grpc_infer("pipe", {"a": a, "b": b})
        assert r.get_response().model_name == "pipe"
        assert np.array_equal(r.as_numpy("z"), (a + b) + b)
        expect_grpc_error(lambda: grpc_infer("pipe_bad", {"a": a, "b": b}), "INVALID_ARGUMENT",
                          "pipeline 'pipe_bad' step 2 (model 'dyn_step'): input 'x': shape [3,4,5]")

    def grpc_typed_contents_and_bad_requests():
        # Typed contents (fp32_contents), which tritonclient never sends: the stub does.
        req = service_pb2.ModelInferRequest(model_name="add", id="typed")
        for name, value in (("x", 1.5), ("y", 0.25)):
            t = req.inputs.add(name=name, datatype="FP32", shape=[3, 4, 5])
            t.contents.fp32_contents.extend([value] * 60)
        r = stub.ModelInfer(req)
        ctx.count("add", True)
        assert r.id == "typed" and r.outputs[0].name == "sum", r
        got = np.frombuffer(r.raw_output_contents[0], np.float32)
        assert got.shape == (60,) and np.all(got == 1.75), got
        x = np.ones((3, 4, 5), np.float32)
        expect_grpc_error(lambda: client.infer("nope", inputs_of({"x": x, "y": x})),
                          "NOT_FOUND", "no model 'nope' is loaded")
        expect_grpc_error(lambda: grpc_infer("add", {"x": np.ones((3, 4, 4), np.float32),
                                                      "y": x}),
                          "INVALID_ARGUMENT", "input 'x': shape [3,4,4], the model takes [3,4,5]")
        expect_grpc_error(lambda: grpc_infer("add", {"x": x.astype(np.float64), "y": x}),
                          "INVALID_ARGUMENT", "input 'x': datatype FP64, the model takes FP32")
        expect_grpc_error(lambda: grpc_infer("add", {"y": x}), "INVALID_ARGUMENT",
                          "input 'x' is missing")
        # Raw contents of the wrong size (tritonclient checks sizes itself: the stub).
        req = service_pb2.ModelInferRequest(model_name="add")
        req.inputs.add(name="x", datatype="FP32", shape=[3, 4, 5])
        req.inputs.add(name="y", datatype="FP32", shape=[3, 4, 5])
        req.raw_input_contents.extend([x.tobytes()[:236], x.tobytes()])
        expect_grpc_error(lambda: stub.ModelInfer(req), "INVALID_ARGUMENT",
                          "raw_input_contents has 236 bytes but shape [3,4,5] of FP32 needs 240")
        req = service_pb2.ModelInferRequest(model_name="add")
        t = req.inputs.add(name="x", datatype="INT32", shape=[2])
        t.contents.fp32_contents.extend([1, 2])
        expect_grpc_error(lambda: stub.ModelInfer(req), "INVALID_ARGUMENT",
                          "datatype INT32 takes int_contents, but the contents fill fp32_contents")
        # Larger than --max-body-bytes (4 MiB here): gRPC refuses it.
        big = np.zeros((1, 3, 1024, 512), np.float32)  # 6 MiB
        expect_grpc_error(lambda: client.infer("squeezenet", inputs_of({"data_0": big})),
                          "RESOURCE_EXHAUSTED", "")
        # A method the server does not serve.
        expect_grpc_error(lambda: stub.SystemSharedMemoryStatus(
            service_pb2.SystemSharedMemoryStatusRequest()), "UNIMPLEMENTED",
            "does not serve /inference.GRPCInferenceService/SystemSharedMemoryStatus")
        assert client.is_server_ready()

    def grpc_async_and_stream_infer():
        pending, done = [], queue.Queue()
        for i in range(24):
            k = 1 + i % 3
            x = rng.standard_normal((k, 4), np.float32)
            y = rng.standard_normal((k, 4), np.float32)
            pending.append((x + y, k))
            client.async_infer("batched", inputs_of({"x": x, "y": y}),
                               callback=lambda result, error, i=i: done.put((i, result, error)),
                               request_id=str(i))
        for _ in range(24):
            i, r, e = done.get(timeout=60)
            assert e is None, e
            ctx.count("batched", True)
            assert r.get_response().id == str(i)
            assert np.array_equal(r.as_numpy("sum"), pending[i][0]), i
        # A stream: 16 requests in flight at once, one for a model that is not loaded.
        answers = queue.Queue()
        c = grpcclient.InferenceServerClient(server.grpc_url)
        c.start_stream(callback=lambda result, error: answers.put((result, error)))
        want = {}
        for i in range(16):
            x = rng.standard_normal((1 + i % 2, 4), np.float32)
            want[str(i)] = x + x
            c.async_stream_infer("batched", inputs_of({"x": x, "y": x}), request_id=str(i))
        c.async_stream_infer("nope", inputs_of({"x": x, "y": x}), request_id="bad")
        got, errors = {}, []
        for _ in range(17):
            r, e = answers.get(timeout=60)
            if e is not None:
                errors.append(str(e))
            else:
                got[r.get_response().id] = r.as_numpy("sum")
                ctx.count("batched", True)
        c.stop_stream()
        c.close()
        assert errors and "no model 'nope' is loaded" in errors[0], errors
        assert sorted(got) == sorted(want), (sorted(got), sorted(want))
        for k, v in want.items():
            assert np.array_equal(got[k], v), k

    def statistics_over_both_protocols():
        time.sleep(0.2)  # the last answers' counters settle after the client has them
        ok, bad = ctx.counted["add"]
        http = json.loads(ctx.request(server, "GET", "/v2/models/add/stats")[2])
        s = http["model_stats"][0]
        assert s["name"] == "add" and s["version"] == "1", s
        infer = s["inference_stats"]
        assert infer["success"]["count"] == ok and infer["fail"]["count"] == bad, (ok, bad, s)
        assert s["inference_count"] == ok and s["execution_count"] == ok, s
        assert infer["queue"]["count"] == ok and infer["compute_infer"]["count"] == ok, s
        assert infer["compute_infer"]["ns"] > 0 and infer["success"]["ns"] > 0, s
        assert abs(s["last_inference"] / 1000 - time.time()) < 600, s
        g = client.get_inference_statistics("add", as_json=True)["model_stats"][0]
        # ints come back as strings in protobuf's JSON; the same request counts as over HTTP
        assert int(g["inference_stats"]["success"]["count"]) == ok, g
        assert int(g["inference_stats"]["fail"]["count"]) == bad, g
        everything = json.loads(ctx.request(server, "GET", "/v2/models/stats")[2])
        names = {m["name"] for m in everything["model_stats"]}
        assert {"add", "batched", "squeezenet", "pipe"} <= names, names
        batched = client.get_inference_statistics("batched", as_json=True)["model_stats"][0]
        rows, execs = int(batched["inference_count"]), int(batched["execution_count"])
        assert int(batched["inference_stats"]["success"]["count"]) == ctx.counted["batched"][0]
        # rows: the HTTP case's 96, the async 48 and the stream's 24 here; a run per batch
        assert rows == 96 + 48 + 24 and execs <= ctx.counted["batched"][0], batched
        status, _, data = ctx.request(server, "GET", "/v2/models/nope/stats")
        assert status == 404 and "no model 'nope'" in json.loads(data)["error"], data
        expect_grpc_error(lambda: client.get_inference_statistics("nope"), "NOT_FOUND",
                          "no model 'nope'")

    def repository_extension_over_both_protocols():
        # The suite's server polls: explicit load and unload are refused with the reason.
        expect_grpc_error(lambda: client.load_model("add"), "FAILED_PRECONDITION",
                          "need --model-control-mode explicit")
        status, _, data = ctx.request(server, "POST", "/v2/repository/models/add/unload", b"{}")
        assert status == 400 and "explicit" in json.loads(data)["error"], data
        other = ctx.start_server("--model-control-mode", "explicit", "--load-model", "add")
        try:
            g = grpcclient.InferenceServerClient(other.grpc_url)
            index = {m["name"]: m for m in
                     g.get_model_repository_index(as_json=True).get("models", [])}
            assert index["add"]["state"] == "READY", index
            assert index["squeezenet"]["state"] == "UNAVAILABLE", index
            assert index["squeezenet"]["reason"] == "unloaded", index
            expect_grpc_error(lambda: g.is_model_ready("squeezenet"), "NOT_FOUND", "squeezenet")
            g.load_model("squeezenet")
            assert g.is_model_ready("squeezenet")
            r = g.infer("squeezenet",
                        inputs_of({"data_0": rng.random((1, 3, 224, 224), np.float32)}))
            assert r.as_numpy("softmaxout_1").shape == (1, 1000, 1, 1)
            expect_grpc_error(lambda: g.load_model("nope"), "NOT_FOUND",
                              "no model 'nope' in the repository")
            expect_grpc_error(lambda: g.load_model("add", config='{"max_batch_size": 2}'),
                              "INVALID_ARGUMENT", "parameter 'config' is not supported")
            # tritonclient.http's forms of the same.
            import tritonclient.http as httpclient
            h = httpclient.InferenceServerClient(other.url)
            names = [m["name"] for m in h.get_model_repository_index()
                     if m["state"] == "READY"]
            assert names == ["add", "squeezenet"], names
            h.unload_model("squeezenet")
            assert not h.is_model_ready("squeezenet")
            ready = json.loads(ctx.request(other, "POST", "/v2/repository/index",
                                           b'{"ready": true}')[2])
            assert [m["name"] for m in ready] == ["add"], ready
            h.load_model("squeezenet")
            assert h.is_model_ready("squeezenet")
            g.unload_model("squeezenet")
            assert not h.is_model_ready("squeezenet")
            h.close()
            g.close()
        finally:
            assert other.stop() == 0, other.output()[-2000:]

    def stateful_sequences_interleaved_equal_each_alone():
        steps = 6
        xs = {s: [rng.standard_normal((1, 4), np.float32) for _ in range(steps)]
              for s in range(4)}

        def infer_alone(c, sid, s, make_inputs=inputs_of):
            out = []
            for i, x in enumerate(xs[s]):
                r = c.infer("accum", make_inputs({"x": x}), sequence_id=sid,
                            sequence_start=i == 0, sequence_end=i == steps - 1)
                out.append(r.as_numpy("sum"))
            return out
        alone = {s: infer_alone(client, 1000 + s, s) for s in xs}
        for s in xs:  # the model's own arithmetic, in float32 like it
            acc = np.zeros((1, 4), np.float32)
            for i in range(steps):
                acc = xs[s][i] + acc
                assert np.array_equal(alone[s][i], acc), (s, i)
        # All four interleaved in one stream, every request in flight at once.
        answers = queue.Queue()
        c = grpcclient.InferenceServerClient(server.grpc_url)
        c.start_stream(callback=lambda result, error: answers.put((result, error)))
        for i in range(steps):
            for s in xs:
                c.async_stream_infer("accum", inputs_of({"x": xs[s][i]}), request_id=f"{s}.{i}",
                                     sequence_id=2000 + s, sequence_start=i == 0,
                                     sequence_end=i == steps - 1)
        got = {}
        for _ in range(steps * len(xs)):
            r, e = answers.get(timeout=120)
            assert e is None, e
            got[r.get_response().id] = r.as_numpy("sum")
        c.stop_stream()
        c.close()
        for s in xs:
            for i in range(steps):
                assert np.array_equal(got[f"{s}.{i}"], alone[s][i]), (s, i)
        # Over HTTP too (tritonclient.http's sequence parameters).
        import tritonclient.http as httpclient
        h = httpclient.InferenceServerClient(server.url)

        def http_inputs(values):
            t = httpclient.InferInput("x", [1, 4], "FP32")
            t.set_data_from_numpy(values["x"])
            return [t]
        over_http = infer_alone(h, 3000, 0, http_inputs)
        assert [np.array_equal(a, b) for a, b in zip(over_http, alone[0])] == [True] * steps
        # Bad uses, named; an idle sequence is reclaimed (max_idle_us 1 s).
        x = xs[0][0]
        expect_grpc_error(lambda: client.infer("accum", inputs_of({"x": x}), sequence_id=4000),
                          "INVALID_ARGUMENT", "sequence 4000 of model 'accum' is not active")
        expect_grpc_error(lambda: client.infer("accum", inputs_of({"x": x})), "INVALID_ARGUMENT",
                          "is stateful: a request needs parameters.sequence_id")
        expect_grpc_error(lambda: client.infer("add", inputs_of({"x": np.ones((3, 4, 5),
                                                                          np.float32),
                                                                 "y": np.ones((3, 4, 5),
                                                                          np.float32)}),
                                               sequence_id=5, sequence_start=True),
                          "INVALID_ARGUMENT", "model 'add' is not stateful")
        ctx.count("add", False)
        client.infer("accum", inputs_of({"x": x}), sequence_id=4001, sequence_start=True)
        time.sleep(1.5)
        expect_grpc_error(lambda: client.infer("accum", inputs_of({"x": x}), sequence_id=4001),
                          "INVALID_ARGUMENT", "sequence 4001 of model 'accum' is not active")
        h.close()

    def grpc_and_http_under_concurrent_load():
        # 4 gRPC and 2 HTTP clients at once on the batching model: every answer exact.
        import tritonclient.http as httpclient
        failures, done = [], [0]
        lock = threading.Lock()

        def worker(kind, seed):
            r = np.random.default_rng(seed)
            c = (grpcclient.InferenceServerClient(server.grpc_url) if kind == "grpc"
                 else httpclient.InferenceServerClient(server.url))
            for i in range(30):
                k = 1 + i % 3
                x = r.standard_normal((k, 4), np.float32)
                y = r.standard_normal((k, 4), np.float32)
                if kind == "grpc":
                    tin = inputs_of({"x": x, "y": y})
                else:
                    tin = [httpclient.InferInput("x", [k, 4], "FP32"),
                           httpclient.InferInput("y", [k, 4], "FP32")]
                    tin[0].set_data_from_numpy(x)
                    tin[1].set_data_from_numpy(y)
                try:
                    got = c.infer("batched", tin).as_numpy("sum")
                    ok = np.array_equal(got, x + y)
                except Exception as e:  # noqa: BLE001
                    ok = repr(e)
                with lock:
                    if ok is True:
                        done[0] += 1
                    else:
                        failures.append((kind, i, ok))
            c.close()
        threads = [threading.Thread(target=worker, args=("grpc" if t < 4 else "http", t))
                   for t in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not failures and done[0] == 180, (done[0], failures[:3])
        # Overload over gRPC: squeezenet's queue holds 4; 40 at once get UNAVAILABLE or answers.
        x = rng.random((1, 3, 224, 224), np.float32)
        results = queue.Queue()
        for _ in range(40):
            client.async_infer("squeezenet", inputs_of({"data_0": x}),
                               callback=lambda result, error: results.put((result, error)))
        codes = {}
        for _ in range(40):
            r, e = results.get(timeout=600)
            code = "OK" if e is None else e.status()
            codes[code] = codes.get(code, 0) + 1
            if e is not None:
                assert "the queue is full" in e.message(), e.message()
        assert set(codes) <= {"OK", "StatusCode.UNAVAILABLE"} and codes.get("OK", 0) > 0, codes
        hwm = server.vm_hwm_kib()
        print(f"  gRPC overload: {codes}; VmHWM {hwm} KiB")
        assert hwm < 1536 * 1024, f"peak RSS {hwm} KiB"
        assert grpc_infer("squeezenet", {"data_0": x}).as_numpy("softmaxout_1").shape == \
            (1, 1000, 1, 1)

    def close():
        client.close()
        channel.close()

    return [grpc_health_metadata_and_config, grpc_outputs_equal_tools_run,
            grpc_typed_contents_and_bad_requests, grpc_async_and_stream_infer,
            stateful_sequences_interleaved_equal_each_alone, statistics_over_both_protocols,
            repository_extension_over_both_protocols, grpc_and_http_under_concurrent_load], close


def server_ready(server):
    """ServerReady's answer over gRPC."""
    c = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        return c.is_server_ready()
    finally:
        c.close()


def squeezenet_async(c, x, n):
    """Starts n async infers of squeezenet on x with client c; their (result,
    error) pairs arrive on the returned queue."""
    results = queue.Queue()
    for _ in range(n):
        t = grpcclient.InferInput("data_0", [1, 3, 224, 224], "FP32")
        t.set_data_from_numpy(x)
        c.async_infer("squeezenet", [t],
                      callback=lambda result, error: results.put((result, error)))
    return results


def drain_with_grpc_calls(server, x):
    """Starts 2 gRPC infers on squeezenet and returns a function that waits for
    them and returns their outcomes (for the SIGTERM case)."""
    c = grpcclient.InferenceServerClient(server.grpc_url)
    results = squeezenet_async(c, x, 2)
    lock = threading.Lock()

    def wait():
        out = []
        for _ in range(2):
            r, e = results.get(timeout=120)
            with lock:
                out.append("ok" if e is None and r.as_numpy("softmaxout_1") is not None
                           else str(e))
        c.close()
        return out
    return wait
