"""runnel: an inference runtime in C, from Python, in OpenVINO's API shape.

    import numpy as np, runnel
    core = runnel.Core()
    compiled = core.compile_model("model.onnx", "REF")
    results = compiled.create_infer_request().infer({0: np.zeros((1, 3), np.float32)})

See docs/python.md. Every C call releases the GIL; errors are RunnelError
subclasses carrying rn_last_error()'s message.
"""
from ._base import (Busy, Cancelled, DeviceError, InferNotStarted, InternalError,
                    InvalidArgument, IOFailure, NotFound, OutOfMemory, ParseError, ResultNotReady,
                    RunnelError, ShapeMismatch, Status, Type, TypeMismatch, Unimplemented,
                    Unsupported)
from ._capi import lib as _lib
from ._runtime import (AsyncInferQueue, CompiledModel, Core, InferRequest, Model, Port,
                       ProfilingInfo, Results)
from ._tensor import Tensor

__version__ = f"{_lib.RN_VERSION_MAJOR}.{_lib.RN_VERSION_MINOR}.{_lib.RN_VERSION_PATCH}"

__all__ = [
    "AsyncInferQueue", "Busy", "Cancelled", "CompiledModel", "Core", "DeviceError",
    "IOFailure", "InferNotStarted", "InferRequest", "InternalError", "InvalidArgument",
    "Model", "NotFound", "OutOfMemory", "ParseError", "Port", "ProfilingInfo",
    "ResultNotReady", "Results", "RunnelError", "ShapeMismatch", "Status", "Tensor", "Type",
    "TypeMismatch", "Unimplemented", "Unsupported",
]
