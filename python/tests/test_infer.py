"""Inference: outputs against ONNX Runtime on the light models, zero-copy in
both directions, results, profiling, the errors of bad inputs."""
import glob
import os
import threading
import time

import numpy as np
import onnxruntime as ort
import pytest

import runnel
from conftest import F32, ADD, LIGHT, RELU, need

LIGHT_MODELS = sorted(glob.glob(os.path.join(LIGHT, "*.onnx")))


def test_light_models_exist():
    assert len(LIGHT_MODELS) == 9, f"expected the 9 light models in {LIGHT} (scripts/setup)"


@pytest.mark.parametrize("path", LIGHT_MODELS, ids=os.path.basename)
def test_light_model_equals_onnxruntime(core, device, path):
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    rng = np.random.default_rng(0)
    for i in sess.get_inputs():
        feeds[i.name] = rng.standard_normal(i.shape).astype(np.float32)
    expected = sess.run(None, feeds)
    compiled = core.compile_model(path, device, F32)
    results = compiled.create_infer_request().infer(feeds)
    assert list(results) == [o.name for o in sess.get_outputs()]
    for ours, theirs in zip(results.values(), expected):
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-5)


def test_inputs_by_name_index_port_list(relu):
    r = relu.create_infer_request()
    x = np.linspace(-1, 1, 60, dtype=np.float32).reshape(3, 4, 5)
    want = np.maximum(x, 0)
    for inputs in ({"x": x}, {0: x}, {relu.input(0): x}, [x], x):
        res = r.infer(inputs)
        np.testing.assert_array_equal(res["y"], want)
        np.testing.assert_array_equal(res[0], want)
        np.testing.assert_array_equal(res[relu.output(0)], want)
    assert res.to_tuple()[0] is res["y"]
    # Lists are converted to the port's element type.
    np.testing.assert_array_equal(r.infer({"x": x.tolist()})[0], want)


def test_input_array_is_read_in_place(relu):
    r = relu.create_infer_request()
    x = np.zeros((3, 4, 5), np.float32)
    r.infer({"x": x})
    x[1, 2, 3] = 7.0  # written through numpy after binding, seen by runnel
    assert r.infer({"x": x})[0][1, 2, 3] == 7.0
    t = runnel.Tensor(x)
    assert t.data is x and t.shares_memory and t.is_dense
    r.set_tensor("x", t)
    x[0, 0, 0] = 5.0
    r.infer()
    assert r.get_output_tensor(0).data[0, 0, 0] == 5.0
    assert r.get_tensor("x") is t


def test_request_buffer_written_through_numpy(relu):
    r = relu.create_infer_request()
    t = r.get_input_tensor(0)
    assert t.shape == (3, 4, 5) and t.element_type == runnel.Type.f32
    t.data[:] = 2.5  # a view of runnel's own input buffer
    out = r.infer()["y"]
    assert np.all(out == 2.5)
    assert np.all(r.get_input_tensor(0).data == 2.5)


def test_results_are_views_of_the_request(relu):
    r = relu.create_infer_request()
    x = np.ones((3, 4, 5), np.float32)
    y = r.infer({"x": x})["y"]
    assert np.shares_memory(y, r.get_output_tensor(0).data)
    r.infer({"x": -x * 0 + 4})
    assert np.all(y == 4.0)  # the next run overwrites a view: copy to keep


def test_output_into_user_array(relu):
    r = relu.create_infer_request()
    out = np.full((3, 4, 5), -1, np.float32)
    r.set_tensor("y", out)
    x = np.linspace(-1, 1, 60, dtype=np.float32).reshape(3, 4, 5)
    res = r.infer({"x": x})
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    assert np.shares_memory(res["y"], out)


def test_strided_view_is_a_roi_tensor(relu):
    base = np.arange(6 * 4 * 10, dtype=np.float32).reshape(6, 4, 10) - 100
    roi = base[::2, :, 1:6]  # 3x4x5, not contiguous
    t = runnel.Tensor(roi)
    assert t.shares_memory and not t.is_dense
    assert t.strides == roi.strides and np.shares_memory(t.data, base)
    r = relu.create_infer_request()
    np.testing.assert_array_equal(r.infer({"x": t})[0], np.maximum(roi, 0))
    base[0, 0, 1] = 1000  # the ROI is read at run time, from the base array
    assert r.infer()[0][0, 0, 0] == 1000
    # Strides runnel cannot describe (negative) are copied, and say so.
    flipped = runnel.Tensor(roi[::-1])
    assert not flipped.shares_memory
    np.testing.assert_array_equal(r.infer({"x": flipped})[0], np.maximum(roi[::-1], 0))


def test_owned_tensor(relu):
    t = runnel.Tensor(runnel.Type.f32, [3, 4, 5])
    assert t.shape == (3, 4, 5) and t.byte_size == 240 and t.size == 60
    assert np.all(t.data == 0)
    t.data[...] = -1
    t.data[0, 0, :] = 3
    r = relu.create_infer_request()
    out = r.infer({"x": t})[0]
    assert out[0, 0, 4] == 3 and out[2, 3, 4] == 0


def test_two_inputs(core, device):
    compiled = core.compile_model(need(ADD), device, F32)
    a = np.ones((3, 4, 5), np.float32)
    b = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    np.testing.assert_array_equal(compiled({"x": a, "y": b})["sum"], a + b)


def test_wrong_element_type_is_named(relu):
    r = relu.create_infer_request()
    with pytest.raises(runnel.TypeMismatch) as e:
        r.infer({"x": np.zeros((3, 4, 5), np.float64)})
    assert "'x'" in str(e.value) and "f32" in str(e.value) and "f64" in str(e.value)
    assert isinstance(e.value, TypeError)


def test_wrong_shape_is_named(relu):
    r = relu.create_infer_request()
    with pytest.raises(runnel.ShapeMismatch) as e:
        r.infer({"x": np.zeros((3, 4, 6), np.float32)})
    assert "'x'" in str(e.value) and "6" in str(e.value)
    with pytest.raises(runnel.NotFound) as e:
        r.infer({"nope": np.zeros((3, 4, 5), np.float32)})
    assert "nope" in str(e.value)
    # The request still works after the refusals.
    assert r.infer({"x": np.ones((3, 4, 5), np.float32)})[0].sum() == 60


def test_profiling_info(core, device):
    compiled = core.compile_model(need(RELU), device, dict(F32, ENABLE_PROFILING=True))
    r = compiled.create_infer_request()
    r.infer({"x": np.ones((3, 4, 5), np.float32)})
    info = r.profiling_info
    assert len(info) >= 1
    assert any(p.node_type == "Relu" and p.status == "EXECUTED" for p in info)


def test_infer_releases_the_gil(slow_ref):
    # A Python thread keeps counting while inference runs in this one: with
    # the GIL held through the run it could not move.
    r = slow_ref.create_infer_request()
    r.get_input_tensor(0).data[...] = 0.5
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.02)
    before = counter[0]
    t0 = time.perf_counter()
    r.infer()
    elapsed = time.perf_counter() - t0
    during = counter[0] - before
    stop.set()
    t.join()
    assert elapsed > 0.01, "the slow model ran too fast to tell"
    assert during > 1000, f"the counting thread made {during} steps in {elapsed:.3f} s of infer"
