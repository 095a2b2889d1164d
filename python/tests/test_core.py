"""Core, Model and CompiledModel: devices, properties, reading, compiling,
reshaping, export/import, and the errors of bad input with their messages."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import runnel
from conftest import F32, ADD, RELU, SLOW, compile_or_skip, need


def test_available_devices_and_versions(core):
    devices = core.available_devices
    assert "REF" in devices
    for d in devices:
        v = core.get_versions(d)
        assert set(v) == {d} and v[d].count(".") == 2
    assert runnel.__version__ == core.get_versions("REF")["REF"]
    assert isinstance(core.failed_devices, dict)


def test_device_properties_round_trip(device):
    core = runnel.Core()
    assert core.get_property(device, "FULL_DEVICE_NAME")
    core.set_property(device, {"PERFORMANCE_HINT": "THROUGHPUT"})
    assert core.get_property(device, "PERFORMANCE_HINT") == "THROUGHPUT"
    core.set_property(device, {"ENABLE_PROFILING": True})
    assert core.get_property(device, "ENABLE_PROFILING") == "YES"


def test_unknown_property_names_the_key(core):
    with pytest.raises(runnel.RunnelError) as e:
        core.get_property("REF", "NO_SUCH_KEY")
    assert "NO_SUCH_KEY" in str(e.value) and e.value.message == str(e.value)
    with pytest.raises(runnel.InvalidArgument) as e:
        core.set_property("REF", {"PERFORMANCE_HINT": "FASTEST"})
    assert "PERFORMANCE_HINT" in str(e.value)
    assert e.value.status == runnel.Status.INVALID_ARG
    assert isinstance(e.value, ValueError)


def test_core_property_cache_dir(core, tmp_path):
    core.set_property({"CACHE_DIR": str(tmp_path)})
    assert core.get_property("", "CACHE_DIR") == str(tmp_path)
    core.set_property({"CACHE_DIR": ""})


def test_missing_model_file(core):
    with pytest.raises(runnel.IOFailure) as e:
        core.read_model("/nonexistent/model.onnx")
    assert "/nonexistent/model.onnx" in str(e.value)
    assert e.value.status == runnel.Status.IO_ERROR


def test_malformed_model_file(core, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not a protobuf of a model\xff\xff\xff")
    with pytest.raises(runnel.ParseError) as e:
        core.read_model(bad)
    assert "bad.onnx" in str(e.value)


def test_unknown_device_is_named(core):
    with pytest.raises(runnel.NotFound) as e:
        core.compile_model(need(RELU), "NO_SUCH_DEVICE")
    assert "NO_SUCH_DEVICE" in str(e.value)


def test_model_ports(core):
    model = core.read_model(need(ADD))
    assert [p.name for p in model.inputs] == ["x", "y"]
    assert [p.name for p in model.outputs] == ["sum"]
    x = model.input("x")
    assert x.get_any_name() == "x" and x.index == 0 and x.is_input
    assert x.element_type == runnel.Type.f32
    assert x.get_shape() == (3, 4, 5)
    assert model.input(1).name == "y"
    with pytest.raises(runnel.NotFound) as e:
        model.input("z")
    assert "'z'" in str(e.value) and "x, y" in str(e.value)


def test_reshape(core, device):
    model = core.read_model(need(RELU))
    model.reshape([2, 4, 5])
    assert model.input(0).shape == (2, 4, 5) and model.output(0).shape == (2, 4, 5)
    model.reshape({"x": [-1, 4, 5]})
    assert model.input(0).partial_shape == (-1, 4, 5)
    with pytest.raises(runnel.InvalidArgument):
        model.input(0).shape
    compiled = compile_or_skip(core, model, device, F32)
    x = np.linspace(-1, 1, 7 * 20, dtype=np.float32).reshape(7, 4, 5)
    np.testing.assert_array_equal(compiled(x)[0], np.maximum(x, 0))
    with pytest.raises(runnel.RunnelError) as e:
        model.reshape([2, 4])  # wrong rank: the model is unchanged
    assert "'x'" in str(e.value)
    assert model.input(0).partial_shape == (-1, 4, 5)


def test_compiled_model(relu, device):
    assert relu.device == device
    assert [p.name for p in relu.inputs] == ["x"] and relu.output().name == "y"
    assert int(relu.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")) >= 1
    relu.set_property({"ENABLE_PROFILING": "YES"})
    with pytest.raises(runnel.RunnelError) as e:
        relu.get_property("NO_SUCH_KEY")
    assert "NO_SUCH_KEY" in str(e.value)


def test_export_import(core, relu, device):
    blob = relu.export_model()
    assert isinstance(blob, bytes) and len(blob) > 0
    again = core.import_model(blob, device)
    x = np.linspace(-3, 3, 60, dtype=np.float32).reshape(3, 4, 5)
    np.testing.assert_array_equal(again(x)["y"], relu({"x": x})["y"])
    with pytest.raises(runnel.RunnelError) as e:
        core.import_model(b"not a blob at all", device)
    assert str(e.value)


def test_query_module_lists_devices(core):
    out = subprocess.run([sys.executable, "-m", "runnel.query"], capture_output=True, text=True,
                         check=True).stdout
    for d in core.available_devices:
        assert f"\n{d}\n" in out
    assert "FULL_DEVICE_NAME (RO)" in out and "PERFORMANCE_HINT (RW)" in out
    assert "Devices that failed to load" in out


# What a Core made with no environment variable lists: its devices, the failed
# ones with why, and AUTO's order with each device's DEVICE_TYPE.
DISCOVERY = """
import json, runnel
c = runnel.Core()
types = {}
for d in c.available_devices:
    try:
        types[d] = c.get_property(d, "DEVICE_TYPE")
    except runnel.RunnelError:
        pass
order = c.get_property("AUTO", "DEFAULT_DEVICE_PRIORITIES").split(",")
print(json.dumps([c.available_devices, c.failed_devices, types, order]))
"""


def discovered(python=sys.executable, cwd=None):
    """Runs DISCOVERY with no RUNNEL_PLUGINS (nor RUNNEL_INSTALLED_PLUGINS)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RUNNEL_PLUGINS", "RUNNEL_INSTALLED_PLUGINS")}
    p = subprocess.run([python, "-c", DISCOVERY], env=env, cwd=cwd, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def check_discovered(devices, failed, types, order):
    """GPU and NVIDIA are found by the package's plugins file: each a device or
    a failed device with its reason; AUTO ranks by DEVICE_TYPE (an OpenCL
    device of CPU type, PoCL's, below CPU)."""
    assert "GPU" in devices or "OpenCL" in failed.get("GPU", ""), (devices, failed)
    assert "NVIDIA" in devices or "NVIDIA" in failed.get("NVIDIA", ""), (devices, failed)
    for d, t in types.items():
        if d in ("CPU", "REF") or d not in order:
            continue
        if t == "cpu":
            assert order.index("CPU") < order.index(d) < order.index("REF"), (order, types)
        else:
            assert order.index(d) < order.index("CPU"), (order, types)


def test_gpu_and_nvidia_are_found_with_no_environment_variable():
    check_discovered(*discovered())
