"""Maps: skl2onnx's default classifier output is ZipMap's sequence of maps,
which comes out of runnel as ONNX Runtime returns it, a list of dicts."""
import numpy as np
import onnxruntime as ort
import pytest

from conftest import compile_or_skip


def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _int(field, v):
    return _varint(field << 3) + _varint(v)


def _msg(field, body):
    if isinstance(body, str):
        body = body.encode()
    return _varint(field << 3 | 2) + _varint(len(body)) + body


def zipmap_model(labels):
    """X f32 [2, 3] -> ZipMap -> Z: sequence(map(string or int64, float)),
    written field by field (onnx.proto's numbers; the test venv has no onnx)."""
    strings = isinstance(labels[0], str)
    x_type = _msg(1, _int(1, 1) + _msg(2, _msg(1, _int(1, 2)) + _msg(1, _int(1, 3))))
    key = 8 if strings else 7
    z_type = _msg(4, _msg(1, _msg(5, _int(1, key) + _msg(2, _msg(1, _int(1, 1))))))
    if strings:
        attr = _msg(1, "classlabels_strings") + b"".join(_msg(9, s) for s in labels) + _int(20, 8)
    else:
        attr = _msg(1, "classlabels_int64s") + b"".join(_int(8, i) for i in labels) + _int(20, 7)
    node = (_msg(1, "X") + _msg(2, "Z") + _msg(3, "zipmap") + _msg(4, "ZipMap") + _msg(5, attr)
            + _msg(7, "ai.onnx.ml"))
    graph = (_msg(1, node) + _msg(2, "classifier") + _msg(11, _msg(1, "X") + _msg(2, x_type))
             + _msg(12, _msg(1, "Z") + _msg(2, z_type)))
    return (_int(1, 8) + _msg(7, graph) + _msg(8, _msg(1, "") + _int(2, 17))
            + _msg(8, _msg(1, "ai.onnx.ml") + _int(2, 1)))


@pytest.mark.parametrize("labels", [["cat", "dog", "eel"], [0, 1, 2]])
def test_zipmap_is_a_list_of_dicts_as_onnxruntime_returns(core, device, tmp_path, labels):
    path = tmp_path / "zipmap.onnx"
    path.write_bytes(zipmap_model(labels))
    x = np.array([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]], np.float32)
    got = compile_or_skip(core, str(path), device)({"X": x})["Z"]
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"X": x})[0]
    assert isinstance(got, list) and len(got) == len(want) == 2
    for g, w in zip(got, want):
        assert isinstance(g, dict)
        assert sorted(g) == sorted(w)
        assert all(type(k) is type(labels[0]) for k in g)
        for k in w:
            assert g[k] == pytest.approx(w[k], rel=1e-6)
