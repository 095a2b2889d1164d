"""The kserve SDK's v2 REST client against runnel-server (e2e.py's kserve_sdk
case). Its own process: the kserve package registers KServe's gRPC protos
(package `inference`) in protobuf's descriptor pool, and tritonclient.grpc,
which the gRPC cases use, registers the same names, so the two cannot be
imported into one process.

    e2e_kserve.py HOST:PORT [GRPC_HOST:PORT]
                               exits 0 after 2 correct infers over REST (JSON,
                               binary) and, with a gRPC address, 2 over gRPC
                               (typed contents and raw); exits 3 when the SDK
                               does not import
    e2e_kserve.py --manifests FILE...
                               checks each YAML document (a ServingRuntime or an
                               InferenceService) against KServe's own models:
                               prints every field KServe's types (and the
                               Kubernetes types they hold) do not have, one per
                               line as "UNKNOWN path"; "OK file kind" otherwise
"""

import asyncio
import re
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


async def go_grpc(url):
    """KServe's own gRPC client (its grpc_predict_v2 protos)."""
    from kserve import InferenceGRPCClient
    rng = np.random.default_rng(8)
    c = InferenceGRPCClient(url, timeout=60)
    assert await c.is_server_live()
    assert await c.is_server_ready()
    assert await c.is_model_ready("add")
    x = rng.standard_normal((3, 4, 5), np.float32)
    y = rng.standard_normal((3, 4, 5), np.float32)
    for raw in (False, True):  # typed fp32_contents, then raw_input_contents
        i1 = InferInput("x", [3, 4, 5], "FP32")
        i1.set_data_from_numpy(x, binary_data=raw)
        i2 = InferInput("y", [3, 4, 5], "FP32")
        i2.set_data_from_numpy(y, binary_data=raw)
        r = await c.infer(InferRequest(model_name="add", infer_inputs=[i1, i2],
                                       request_id=f"kserve-{raw}"))
        assert r.id == f"kserve-{raw}", r.id
        got = r.outputs[0].as_numpy()
        assert np.array_equal(got.reshape(3, 4, 5), x + y), (raw, got)
        print(f"grpc infer ok (raw={raw})", flush=True)
    await c.close()


def unknown_fields(value, type_name, path):
    """Paths of value's fields that KServe's type (or a Kubernetes one it holds) lacks."""
    import kserve.models
    import kubernetes.client.models as k8s
    m = re.fullmatch(r"(?:list|List)\[(.+)\]", type_name)
    if m:
        return [p for i, v in enumerate(value or [])
                for p in unknown_fields(v, m.group(1), f"{path}[{i}]")]
    m = re.fullmatch(r"(?:dict\(str, ?|Dict\[str, ?)(.+)[\)\]]", type_name)
    if m:
        return [p for k, v in (value or {}).items()
                for p in unknown_fields(v, m.group(1), f"{path}.{k}")]
    cls = getattr(kserve.models, type_name, None) or getattr(k8s, type_name, None)
    if cls is None:
        return []  # a primitive: str, int, bool, object
    if not isinstance(value, dict):
        return [f"{path} (a {type(value).__name__}; {type_name} is an object)"]
    by_json = {j: a for a, j in cls.attribute_map.items()}
    out = []
    for k, v in value.items():
        if k not in by_json:
            out.append(f"{path}.{k} (not a field of {type_name})")
        else:
            out += unknown_fields(v, cls.openapi_types[by_json[k]], f"{path}.{k}")
    return out


def check_manifests(files):
    import yaml
    kinds = {"ServingRuntime": "V1alpha1ServingRuntime",
             "InferenceService": "V1beta1InferenceService"}
    for f in files:
        for doc in yaml.safe_load_all(open(f)):
            if doc.get("kind") not in kinds:
                print(f"UNKNOWN {f}: kind {doc.get('kind')!r}")
                continue
            bad = unknown_fields(doc, kinds[doc["kind"]], "")
            for path in bad:
                print(f"UNKNOWN {f}: {path}")
            if not bad:
                print(f"OK {f} {doc['kind']}")


if __name__ == "__main__":
    if sys.argv[1] == "--manifests":
        check_manifests(sys.argv[2:])
    else:
        asyncio.run(go(sys.argv[1]))
        if len(sys.argv) > 2:
            asyncio.run(go_grpc(sys.argv[2]))
