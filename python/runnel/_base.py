"""Status codes, exceptions and element types, read from the C library's own
tables (rn_status_name, rn_element_type_name) so that they cannot drift from
include/runnel/status.h and tensor.h."""
from __future__ import annotations

import enum
from typing import Dict, Optional, Type as PyType

import numpy as np

from ._capi import ffi, lib


def _c_str(p) -> str:
    return "" if p == ffi.NULL else ffi.string(p).decode("utf-8", "replace")


# rn_status: 0 and small negative numbers; the table ends where names become "UNKNOWN".
Status = enum.IntEnum(  # type: ignore[misc]
    "Status",
    [(_c_str(lib.rn_status_name(-v)), -v) for v in range(0, 64)
     if _c_str(lib.rn_status_name(-v)) != "UNKNOWN"],
    module=__name__,
)
Status.__doc__ = "rn_status: OK is 0, errors are negative (runnel/status.h)."

# rn_element_type: ONNX's TensorProto.DataType numbers, OpenVINO's short names.
Type = enum.IntEnum(  # type: ignore[misc]
    "Type",
    [(_c_str(lib.rn_element_type_name(v)), v) for v in range(1, 64)
     if lib.rn_element_type_is_valid(v)],
    module=__name__,
)
Type.__doc__ = "Element types (runnel/tensor.h): Type.f32, Type.i64, Type.boolean, ..."

# numpy's dtype for each element type numpy has; bf16 and the f8 types are
# seen from numpy as their bits (uint16, uint8), strings are not handled.
_NUMPY_NAMES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
    "u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16,
    "u32": np.uint32, "i32": np.int32, "u64": np.uint64, "i64": np.int64,
    "boolean": np.bool_, "bf16": np.uint16,
    "f8e4m3fn": np.uint8, "f8e4m3fnuz": np.uint8, "f8e5m2": np.uint8, "f8e5m2fnuz": np.uint8,
}
DTYPE_OF: Dict[int, np.dtype] = {
    int(t): np.dtype(_NUMPY_NAMES[t.name]) for t in Type if t.name in _NUMPY_NAMES
}
# numpy dtype -> the element type a plain array of it is (bf16 and f8 only on request).
TYPE_OF: Dict[np.dtype, Type] = {
    np.dtype(_NUMPY_NAMES[n]): Type[n]
    for n in ("f32", "f64", "f16", "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64",
              "boolean") if n in Type.__members__
}


class RunnelError(RuntimeError):
    """A runnel call failed. `status` is the Status, `message` the detail
    from rn_last_error() (which file, node, key or shape is at fault)."""

    status: Status = Status.INTERNAL

    def __init__(self, message: str, status: Optional[Status] = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    def __reduce__(self):
        return (type(self), (self.message, self.status))


class InvalidArgument(RunnelError, ValueError):
    """INVALID_ARG: a bad argument, property key or value."""


class NotFound(RunnelError, LookupError):
    """NOT_FOUND: no such device, property, input or output."""


class Unimplemented(RunnelError, NotImplementedError):
    """NOT_IMPLEMENTED."""


class Unsupported(RunnelError):
    """UNSUPPORTED: the device does not support it (an op, a type)."""


class ParseError(RunnelError):
    """PARSE_ERROR: a malformed model file or blob."""


class IOFailure(RunnelError):
    """IO_ERROR: a file could not be read or written."""


class OutOfMemory(RunnelError, MemoryError):
    """OUT_OF_MEMORY."""


class ShapeMismatch(RunnelError, ValueError):
    """SHAPE_MISMATCH: a tensor's shape does not fit the port."""


class TypeMismatch(RunnelError, TypeError):
    """TYPE_MISMATCH: a tensor's element type does not fit the port."""


class Busy(RunnelError):
    """REQUEST_BUSY: the request has a run in flight."""


class ResultNotReady(RunnelError):
    """RESULT_NOT_READY."""


class Cancelled(RunnelError):
    """CANCELLED: the run was cancelled."""


class InferNotStarted(RunnelError):
    """INFER_NOT_STARTED."""


class DeviceError(RunnelError):
    """DEVICE_ERROR: the device failed."""


class InternalError(RunnelError):
    """INTERNAL: a bug in runnel."""


_ERROR_OF_NAME: Dict[str, PyType[RunnelError]] = {
    "INVALID_ARG": InvalidArgument, "NOT_FOUND": NotFound, "NOT_IMPLEMENTED": Unimplemented,
    "UNSUPPORTED": Unsupported, "PARSE_ERROR": ParseError, "IO_ERROR": IOFailure,
    "OUT_OF_MEMORY": OutOfMemory, "SHAPE_MISMATCH": ShapeMismatch,
    "TYPE_MISMATCH": TypeMismatch, "REQUEST_BUSY": Busy, "RESULT_NOT_READY": ResultNotReady,
    "CANCELLED": Cancelled, "INFER_NOT_STARTED": InferNotStarted, "DEVICE_ERROR": DeviceError,
    "INTERNAL": InternalError,
}
for _cls in _ERROR_OF_NAME.values():
    _cls.status = Status.INTERNAL
for _name, _cls in _ERROR_OF_NAME.items():
    if _name in Status.__members__:
        _cls.status = Status[_name]


def error(status: int, message: Optional[str] = None) -> RunnelError:
    """The exception for a failed status; the message is this thread's
    rn_last_error() unless given (or the status's generic message)."""
    if message is None:
        message = _c_str(lib.rn_last_error())
    if not message:
        message = _c_str(lib.rn_status_message(status))
    try:
        st = Status(status)
    except ValueError:
        return RunnelError(f"{message} (status {status})")
    return _ERROR_OF_NAME.get(st.name, RunnelError)(message, st)


def check(status: int) -> None:
    """Raises the exception of a failed status; nothing on RN_OK."""
    if status:
        raise error(status)
