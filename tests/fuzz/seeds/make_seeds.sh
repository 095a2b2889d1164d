#!/usr/bin/env bash
# Regenerates the checked-in seeds of tests/fuzz/seeds/ (run from the
# repository root after a change of the blob format or to add seeds):
#   npy_read:    arrays written by NumPy (Debian's python3-numpy), one per
#                dtype the reader takes, of ranks 0 to 4, both header versions;
#   blob_import: blobs exported by //tools:compile from libonnx-testdata models;
#   ir_read:     IR (.xml + .bin) written by openvino.save_model for the ops
#                tests/ir/check_ops.py checks (one seed per op family), packed as
#                fuzz_ir_read.c reads them (u32 LE length of the XML, the XML,
#                the .bin); and (ovc_*) the smallest ONNX node tests of the IR
#                conversion corpus that together cover every layer type ovc
#                wrote (tests/ir/corpus.py fuzz-seeds); needs tests/ir/run's venv
#                (.cache/venv-ir) and corpus (.cache/ir-corpus);
#   server_infer: KServe v2 infer request bodies as tests/server sends them
#                (JSON of every datatype, flat and nested data, the binary
#                data extension, requested outputs, parameters), each after a
#                u32 LE Inference-Header-Content-Length (0xffffffff: none);
#   grpc_infer:  KServe v2 ModelInferRequest messages serialized by tritonclient.grpc
#                (below; needs scripts/test-server's venv, .cache/venv-server).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
seeds=tests/fuzz/seeds

rm -f "$seeds"/npy_read/*.npy
/usr/bin/python3 - "$seeds/npy_read" <<'PY'
import sys, numpy as np, numpy.lib.format as fmt
out = sys.argv[1]
shapes = [(), (3,), (2, 3), (1, 2, 2), (1, 1, 2, 3)]
for i, dt in enumerate(["<f4", "<f8", "<f2", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "|b1"]):
    shape = shapes[i % len(shapes)]
    a = (np.arange(int(np.prod(shape))) % 3).astype(dt).reshape(shape)
    np.save(f"{out}/{dt[1:]}_r{len(shape)}.npy", a)
# Header version 2.0 and a Fortran-order array (refused by the reader).
with open(f"{out}/f4_v2.npy", "wb") as f:
    fmt.write_array(f, np.ones((2, 2), "<f4"), version=(2, 0))
np.save(f"{out}/f4_fortran.npy", np.asfortranarray(np.ones((2, 3), "<f4")))
PY

bazel build //tools:compile
compile="$(bazel info bazel-bin)/tools/compile"
deb=/usr/share/libonnx-testdata/data
rm -f "$seeds"/blob_import/*.blob
for model in node/test_add node/test_conv_with_strides_padding node/test_gemm_default_matrix_bias \
    node/test_if node/test_loop11 node/test_relu simple/test_sequence_model1; do
    "$compile" -m "$deb/$model/model.onnx" -d REF -o "$seeds/blob_import/$(basename "$model").blob" \
        >/dev/null
done
rm -rf "$seeds"/ir_read
mkdir -p "$seeds"/ir_read
keep="$(mktemp -d)"
# Only the IR files check_ops.py writes are wanted, not its comparison: its
# runnel command is `true`, so every case "fails" after writing its IR.
.cache/venv-ir/bin/python tests/ir/check_ops.py --run true --keep "$keep" >/dev/null || true
/usr/bin/python3 - "$keep" "$seeds/ir_read" <<'PY'
import glob, os, struct, sys
src, out = sys.argv[1:]
# One seed per op family (the case name up to its first digit or '_'), small ones first.
seen = set()
for xml in sorted(glob.glob(f"{src}/**/*.xml", recursive=True), key=os.path.getsize):
    name = os.path.splitext(os.path.basename(xml))[0]
    family = name.rstrip("0123456789").split("_")[0]
    if family in seen:
        continue
    seen.add(family)
    x = open(xml, "rb").read()
    b = open(xml[:-4] + ".bin", "rb").read() if os.path.exists(xml[:-4] + ".bin") else b""
    if len(x) + len(b) > 65536:
        continue
    open(f"{out}/{name}.ir", "wb").write(struct.pack("<I", len(x)) + x + b)
PY
rm -rf "$keep"
# And from the IR conversion corpus (tests/ir/run builds it): the smallest converted ONNX
# node tests that together cover every layer type and version ovc wrote.
corpus=$(ls -d .cache/ir-corpus/openvino-* 2>/dev/null | tail -n 1)
if [ -n "$corpus" ]; then
    .cache/venv-ir/bin/python tests/ir/corpus.py fuzz-seeds --cache "$corpus" \
        --out "$seeds/ir_read" --max-bytes 65536
else
    echo "make_seeds.sh: no .cache/ir-corpus (run tests/ir/run first): no ovc seeds" >&2
fi

rm -rf "$seeds"/server_infer
mkdir -p "$seeds"/server_infer
/usr/bin/python3 - "$seeds/server_infer" <<'PY'
import json, struct, sys
out = sys.argv[1]
def seed(name, header, binary=b""):
    h = json.dumps(header, separators=(",", ":")).encode()
    size = len(h) if binary else 0xFFFFFFFF
    open(f"{out}/{name}.req", "wb").write(struct.pack("<I", size) + h + binary)
def inp(name, dt, shape, data=None, **params):
    d = {"name": name, "datatype": dt, "shape": shape}
    if data is not None:
        d["data"] = data
    if params:
        d["parameters"] = params
    return d
seed("fp32_flat", {"inputs": [inp("x", "FP32", [2, 3], [1, 2, 3, 4, 5, 6])]})
seed("fp32_nested_id", {"id": "7", "inputs": [inp("x", "FP32", [2, 3], [[1, 2, 3], [4, 5, 6]])],
                        "outputs": [{"name": "y"}]})
seed("every_datatype", {"inputs": [
    inp("b", "BOOL", [2], [True, False]), inp("u8", "UINT8", [1], [255]),
    inp("i8", "INT8", [1], [-128]), inp("u16", "UINT16", [1], [65535]),
    inp("i16", "INT16", [1], [-3]), inp("u32", "UINT32", [1], [4294967295]),
    inp("i32", "INT32", [1], [-7]), inp("u64", "UINT64", [1], [9007199254740993]),
    inp("i64", "INT64", [1], [-9007199254740993]), inp("h", "FP16", [1], [1.5]),
    inp("d", "FP64", [1], [0.1]), inp("bf", "BF16", [1], [-2]),
    inp("s", "BYTES", [1, 2], [["h\u00e9", ""]])]})
seed("scalar_and_empty", {"inputs": [inp("x", "FP32", [], [3.5]), inp("e", "INT64", [0, 4], [])]})
seed("parameters", {"inputs": [inp("x", "FP32", [1], [1])],
                    "parameters": {"binary_data_output": True, "timeout": 1000000},
                    "outputs": [{"name": "y", "parameters": {"binary_data": False}}]})
seed("binary", {"inputs": [inp("x", "FP32", [2], binary_data_size=8),
                           inp("s", "BYTES", [2], binary_data_size=11)],
                "outputs": [{"name": "y", "parameters": {"binary_data": True}}, {"name": "z"}]},
     struct.pack("<ff", 1.25, -3.0) + b"\x02\0\0\0ab\x01\0\0\0c")
seed("binary_mixed", {"inputs": [inp("a", "INT32", [3], [1, 2, 3]),
                                 inp("b", "FP16", [2], binary_data_size=4),
                                 inp("c", "UINT8", [4], binary_data_size=4)]},
     struct.pack("<HH", 0x3C00, 0xC000) + bytes([1, 2, 3, 4]))
seed("bad_shape", {"inputs": [inp("x", "FP32", [2, 2], [1, 2, 3])]})
seed("bad_datatype", {"inputs": [inp("x", "FLOAT", [1], [1])]})
PY
ls -l "$seeds"/npy_read "$seeds"/blob_import "$seeds"/ir_read "$seeds"/server_infer

# grpc_infer: ModelInferRequest messages serialized by tritonclient.grpc's own
# protobufs (tritonclient[grpc] from PyPI, scripts/test-server's venv
# .cache/venv-server) as its client builds them: raw contents of every
# datatype, typed contents, requested outputs, sequence and timeout
# parameters; and ones the decoder refuses (a shape that does not match,
# typed beside raw contents).
rm -rf "$seeds"/grpc_infer
mkdir -p "$seeds"/grpc_infer
.cache/venv-server/bin/python - "$seeds/grpc_infer" <<'PY'
import sys
import numpy as np
import tritonclient.grpc as g
from tritonclient.grpc import _utils, service_pb2
out = sys.argv[1]
def req(inputs, outputs=None, **kw):
    args = dict(model_version="", request_id="", sequence_id=0, sequence_start=False,
                sequence_end=False, priority=0, timeout=None, parameters=None)
    args.update(kw)
    return _utils._get_inference_request("m", inputs, args.pop("model_version"),
                                         args.pop("request_id"), outputs, **args)
def inp(name, value, dt=None):
    t = g.InferInput(name, list(value.shape), dt or g.np_to_triton_dtype(value.dtype))
    t.set_data_from_numpy(value)
    return t
def save(name, message):
    open(f"{out}/{name}.pb", "wb").write(message.SerializeToString())
a = np.arange(6, dtype=np.float32).reshape(2, 3)
save("fp32_raw", req([inp("x", a)]))
save("two_inputs_outputs_id", req([inp("x", a), inp("y", a + 1)], [g.InferRequestedOutput("sum")],
                                  model_version="2", request_id="7"))
every = [inp("b", np.array([True, False])), inp("u8", np.array([255], np.uint8)),
         inp("i8", np.array([-128], np.int8)), inp("u16", np.array([65535], np.uint16)),
         inp("i16", np.array([-3], np.int16)), inp("u32", np.array([4294967295], np.uint32)),
         inp("i32", np.array([-7], np.int32)), inp("u64", np.array([2**63 - 1], np.uint64)),
         inp("i64", np.array([-2**62], np.int64)), inp("h", np.array([1.5], np.float16)),
         inp("d", np.array([0.1], np.float64)),
         inp("s", np.array([["h\u00e9".encode(), b""]], dtype=object), "BYTES")]
save("every_datatype_raw", req(every))
save("sequence_timeout", req([inp("x", a)], sequence_id=42, sequence_start=True, timeout=1000))
save("sequence_string_end", req([inp("x", a)], sequence_id="s1", sequence_end=True))
save("scalar_and_empty", req([inp("x", np.array(3.5, np.float32)),
                              inp("e", np.zeros((0, 4), np.int64))]))
# Typed contents (what other clients send): every list once.
m = service_pb2.ModelInferRequest(model_name="m")
for name, dt, field, values in [("f", "FP32", "fp32_contents", [1.0, -2.5]),
                                ("d", "FP64", "fp64_contents", [0.25]),
                                ("i", "INT32", "int_contents", [1, -2]),
                                ("l", "INT64", "int64_contents", [-5]),
                                ("u", "UINT32", "uint_contents", [7]),
                                ("ul", "UINT64", "uint64_contents", [9]),
                                ("b", "BOOL", "bool_contents", [True]),
                                ("s", "BYTES", "bytes_contents", [b"ab", b""])]:
    t = m.inputs.add(name=name, datatype=dt, shape=[len(values)])
    getattr(t.contents, field).extend(values)
save("typed_contents", m)
bad = req([inp("x", a)])
bad.inputs[0].shape[:] = [4, 4]
save("bad_shape", bad)
bad = req([inp("x", a)])
bad.inputs[0].contents.fp32_contents.extend([1.0])
save("typed_beside_raw", bad)
PY
