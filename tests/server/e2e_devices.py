"""HETERO and AUTO chosen in a model's config.json, through runnel-server:
the model config answer names where each runs (EXECUTION_DEVICES), and the
outputs over HTTP and gRPC agree with tools/run's on REF.

Part of the end-to-end suite: e2e.py builds the context and runs the case
with its own; the case starts its own server on its own repository.
"""

import json
import os
import shutil

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

# HETERO places every node on its first device that supports it: REF first here, so all on
# REF (where the server's --device, CPU, would not have put them); AUTO picks among its list.
DEVICES = {"hetero": "HETERO:REF,CPU", "auto": "AUTO:CPU,REF"}


def cases(ctx):
    """The case; ctx as e2e.py's (work, onnx_data, rng, run, tools_run, Server, server)."""

    def hetero_and_auto_from_the_model_config():
        repo = os.path.join(ctx.work, "devices-repo")
        models = {"add": f"{ctx.onnx_data}/node/test_add/model.onnx",
                  "squeezenet": f"{ctx.onnx_data}/light/light_squeezenet.onnx"}
        for kind, device in DEVICES.items():
            for model, src in models.items():
                name = f"{model}_{kind}"
                os.makedirs(f"{repo}/{name}/1")
                shutil.copy(src, f"{repo}/{name}/1/model.onnx")
                with open(f"{repo}/{name}/config.json", "w") as f:
                    json.dump({"device": device}, f)
        srv = ctx.Server(ctx.server_binary, repo, "--drain-secs", "0", "--threads", "2",
                         "--device", "CPU")
        try:
            h = httpclient.InferenceServerClient(url=srv.url)
            g = grpcclient.InferenceServerClient(srv.grpc_url)
            inputs = {"add": {"x": ctx.rng.standard_normal((3, 4, 5), np.float32),
                              "y": ctx.rng.standard_normal((3, 4, 5), np.float32)},
                      "squeezenet": {"data_0": ctx.rng.random((1, 3, 224, 224), np.float32)}}
            want = {m: ctx.tools_run(ctx.run, models[m], inputs[m], ctx.work) for m in models}
            for kind in DEVICES:
                for model in models:
                    name = f"{model}_{kind}"
                    where = h.get_model_config(name)["parameters"]["execution_devices"]
                    devices = set(where["string_value"].split(","))
                    assert devices and devices <= {"CPU", "REF"}, (name, where)
                    if kind == "hetero":
                        assert devices == {"REF"}, (name, where)
                    print(f"  {name} ({DEVICES[kind]}): execution devices {sorted(devices)}")
                    for client, module in ((h, httpclient), (g, grpcclient)):
                        tin = []
                        for k, v in inputs[model].items():
                            t = module.InferInput(k, list(v.shape), "FP32")
                            t.set_data_from_numpy(v)
                            tin.append(t)
                        r = client.infer(name, tin)
                        for out, value in want[model].items():
                            got = r.as_numpy(out)
                            assert got is not None and got.shape == value.shape, (name, out)
                            # Add is exact on every device; SqueezeNet on CPU (oneDNN) sums in
                            # another order than REF.
                            assert np.allclose(got, value, rtol=1e-4, atol=1e-5), \
                                (name, out, float(np.abs(got - value).max()))
            h.close()
            g.close()
        finally:
            rc = srv.stop()
        assert rc == 0, f"exit {rc}"

    return [hetero_and_auto_from_the_model_config]
