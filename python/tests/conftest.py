"""Shared fixtures: the repository's model files and the devices present."""
import os

import pytest

import runnel

ROOT = os.environ.get("RUNNEL_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, ".cache", "onnx-1.22.0")
# The onnx wheel's node test of Relu: one node, x f32[3,4,5] -> y (scripts/setup fetches it).
RELU = os.path.join(DATA, "node", "test_relu", "model.onnx")
ADD = os.path.join(DATA, "node", "test_add", "model.onnx")
LIGHT = os.path.join(DATA, "light")
# A model that runs for a while on any device, for in-flight cases.
SLOW = os.path.join(LIGHT, "light_resnet50.onnx")


# Compile-time properties for exact comparisons: devices that default to a
# lower precision (CPU runs bf16 where oneDNN can) are asked for f32, as the
# conformance runner does.
F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def need(path):
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: run scripts/setup (it fetches the onnx test data)")
    return path


@pytest.fixture(scope="session")
def core():
    return runnel.Core()


def _takes_device_list(core, device):
    try:
        core.get_property(device, "MULTI_DEVICE_PRIORITIES")
        return True
    except runnel.RunnelError:
        return False


def pytest_generate_tests(metafunc):
    # Every test that takes `device` runs on each device present (REF at least).
    if "device" in metafunc.fixturenames:
        core = runnel.Core()
        devices = core.available_devices
        assert "REF" in devices, f"REF is built in, yet the core lists {devices}"
        # HETERO and AUTO run models on the others (they answer
        # MULTI_DEVICE_PRIORITIES) and need a device list: tests/hetero and
        # tests/auto cover them.
        metafunc.parametrize("device", [d for d in devices if not _takes_device_list(core, d)])


def compile_or_skip(core, model, device, config=None):
    """Compiles on `device`; an accelerator (GPU, NVIDIA: found with no setup,
    docs/plugins.md) that refuses the model as unsupported at compile time
    (GPU: dynamic shapes, ZipMap's maps) skips the test saying why. REF and
    CPU run everything: their refusal fails."""
    try:
        return core.compile_model(model, device, config)
    except runnel.Unsupported as e:
        if device in ("REF", "CPU"):
            raise
        pytest.skip(f"{device} does not run this model: {e}")


@pytest.fixture
def relu(core, device):
    return core.compile_model(need(RELU), device, F32)


@pytest.fixture(scope="session")
def slow_ref(core):
    return core.compile_model(need(SLOW), "REF")
