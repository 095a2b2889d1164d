"""The kserve SDK's v2 REST client against runnel-server (e2e.py's kserve_sdk
case). Its own process: the kserve package registers KServe's gRPC protos
(package `inference`) in protobuf's descriptor pool, and tritonclient.grpc,
which the gRPC cases use, registers the same names, so the two cannot be
imported into one process.

    e2e_kserve.py HOST:PORT    exits 0 after 2 correct infers (JSON, binary);
                               exits 3 when the SDK does not import
"""

import asyncio
import sys

import numpy as np

try:
    from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig
except ImportError as e:
    print(f"the kserve SDK does not import in the venv: {e}")
    sys.exit(3)


async def go(url):
    rng = np.random.default_rng(7)
    c = InferenceRESTClient(RESTConfig(protocol="v2", timeout=60))
    base = f"http://{url}"
    assert await c.is_server_live(base)
    assert await c.is_server_ready(base)
    x = rng.standard_normal((3, 4, 5), np.float32)
    y = rng.standard_normal((3, 4, 5), np.float32)
    for binary in (False, True):
        i1 = InferInput("x", [3, 4, 5], "FP32")
        i1.set_data_from_numpy(x, binary_data=binary)
        i2 = InferInput("y", [3, 4, 5], "FP32")
        i2.set_data_from_numpy(y, binary_data=binary)
        r = await c.infer(base, InferRequest(model_name="add", infer_inputs=[i1, i2]),
                          model_name="add")
        got = r.outputs[0].as_numpy()
        assert np.array_equal(got.reshape(3, 4, 5), x + y), (binary, got)
        print(f"infer ok (binary={binary})", flush=True)
    await c.close()


if __name__ == "__main__":
    asyncio.run(go(sys.argv[1]))
