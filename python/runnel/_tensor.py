"""Tensors: numpy arrays wrapped without copying, and numpy views onto
runnel's own buffers whose lifetime is tied to their owner."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from ._base import DTYPE_OF, TYPE_OF, InvalidArgument, Type, check
from ._capi import ffi, lib

ElementType = Union[Type, int, str, np.dtype, type]


def element_type(value: ElementType) -> Type:
    """Type from a Type, its number, its name ("f32") or a numpy dtype."""
    if isinstance(value, Type):
        return value
    if isinstance(value, str) and value in Type.__members__:
        return Type[value]
    if isinstance(value, int) and not isinstance(value, bool):
        return Type(value)
    try:
        return TYPE_OF[np.dtype(value)]
    except (TypeError, KeyError):
        raise InvalidArgument(f"element type {value!r}: not one runnel knows "
                              f"({', '.join(Type.__members__)})") from None


class _Buffer:
    """Exposes a runnel buffer to numpy (__array_interface__) and keeps its
    owner alive: numpy keeps this object as the array's base."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, address: int, shape: Tuple[int, ...], dtype: np.dtype,
                 strides: Optional[Tuple[int, ...]], owner: Any) -> None:
        self.__array_interface__ = {
            "data": (address, False), "shape": shape, "typestr": dtype.str,
            "strides": strides, "version": 3,
        }
        self.owner = owner


def view(address: int, shape: Tuple[int, ...], etype: int, owner: Any,
         strides: Optional[Tuple[int, ...]] = None) -> np.ndarray:
    """A numpy array over runnel's memory at `address`, keeping `owner` alive."""
    dtype = DTYPE_OF.get(etype)
    if dtype is None:
        raise InvalidArgument(f"element type {Type(etype).name}: no numpy equivalent "
                              "(string, sequence and optional values are not supported "
                              "by the Python package)")
    if address == 0:  # an empty tensor: numpy wants a valid pointer
        return np.empty(shape, dtype)
    return np.asarray(_Buffer(address, shape, dtype, strides, owner))


def _items(t) -> list:
    """The elements of a 1-D tensor (a map's keys or values) as Python values."""
    n = int(lib.rn_tensor_dims(t)[0]) if lib.rn_tensor_rank(t) == 1 else 0
    if lib.rn_tensor_element_type(t) == Type.string:
        return [ffi.string(lib.rn_tensor_get_string(t, i)).decode() for i in range(n)]
    address = _address(lib.rn_tensor_data(t))
    return view(address, (n,), lib.rn_tensor_element_type(t), None).tolist()


def python_value(t) -> Any:
    """A map as a dict, a sequence of maps as a list of dicts (what ONNX
    Runtime returns for ZipMap's output), keys and values copied into Python
    objects (str or int keys, float values)."""
    if lib.rn_tensor_kind(t) == 3:  # RN_VALUE_MAP
        keys, values = ffi.new("rn_tensor **"), ffi.new("rn_tensor **")
        check(lib.rn_tensor_map_keys(t, keys))
        check(lib.rn_tensor_map_values(t, values))
        return dict(zip(_items(keys[0]), _items(values[0])))
    item = ffi.new("rn_tensor **")
    out = []
    for i in range(lib.rn_tensor_sequence_length(t)):
        check(lib.rn_tensor_sequence_item(t, i, item))
        out.append(python_value(item[0]))
    return out


def _address(p) -> int:
    return int(ffi.cast("uintptr_t", p))


class Tensor:
    """An element type, a shape and memory.

    - ``Tensor(array)`` wraps a numpy array without copying: a C-contiguous
      array with rn_tensor_wrap, another strided view (a region of interest)
      with rn_tensor_wrap_strided. The tensor keeps the array alive; writes
      through either are seen by the other. Only arrays whose strides runnel
      cannot describe (negative or broadcast strides) are copied
      (``shares_memory`` is then False).
    - ``Tensor(Type.f32, shape)`` allocates a zero-filled tensor owned by runnel.
    - Tensors returned by a request (get_tensor, get_output_tensor) are views
      of its buffers and keep the request alive.

    ``data`` is a numpy array over the tensor's memory (for wrapped arrays,
    the array itself).
    """

    __slots__ = ("_ptr", "_array", "_owner", "_etype", "shares_memory", "__weakref__")

    def __init__(self, array: Any = None, shape: Optional[Sequence[int]] = None, *,
                 type: Optional[ElementType] = None) -> None:
        out = ffi.new("rn_tensor **")
        self._owner = None
        self.shares_memory = True
        if isinstance(array, (Type, str)) or (array is not None and isinstance(array, int)
                                              and not isinstance(array, bool)):
            # Tensor(Type.f32, [1, 3]): owned by runnel.
            etype = element_type(array)
            dims = list(shape or ())
            check(lib.rn_tensor_create(etype, dims, len(dims), out))
            self._ptr = ffi.gc(out[0], lib.rn_tensor_free)
            self._array = None
            self._etype = int(etype)
            return
        if not isinstance(array, np.ndarray):
            array = np.asarray(array, dtype=None if type is None else
                               DTYPE_OF.get(int(element_type(type))))
        etype = element_type(type) if type is not None else element_type(array.dtype)
        if type is not None and DTYPE_OF.get(int(etype), array.dtype).itemsize != array.itemsize:
            raise InvalidArgument(f"element type {etype.name} does not fit an array of "
                                  f"{array.dtype}")
        if shape is not None and tuple(shape) != array.shape:
            array = array.reshape(shape)
        self._etype = int(etype)
        self._wrap(array, out)
        self._ptr = ffi.gc(out[0], lib.rn_tensor_free)

    def _wrap(self, array: np.ndarray, out) -> None:
        dims = array.shape
        if array.flags.c_contiguous:
            data = ffi.from_buffer(array, require_writable=False) if array.size else ffi.NULL
            check(lib.rn_tensor_wrap(self._etype, dims, len(dims), data, array.nbytes, out))
            self._array = array
            return
        strides = array.strides
        if all(s >= array.itemsize or (s >= 0 and d <= 1) for s, d in zip(strides, dims)):
            # A region of a larger buffer: runnel reads it into a dense buffer at run time.
            address = array.__array_interface__["data"][0]
            check(lib.rn_tensor_wrap_strided(self._etype, dims, len(dims), strides,
                                             ffi.cast("void *", address), out))
            self._array = array
            return
        dense = np.ascontiguousarray(array)
        self.shares_memory = False
        data = ffi.from_buffer(dense, require_writable=False) if dense.size else ffi.NULL
        check(lib.rn_tensor_wrap(self._etype, dims, len(dims), data, dense.nbytes, out))
        self._array = dense

    @classmethod
    def _borrow(cls, ptr, owner: Any) -> "Tensor":
        """A view of a tensor owned by `owner` (a request), which it keeps alive."""
        t = cls.__new__(cls)
        t._ptr = ptr
        t._array = None
        t._owner = owner
        t._etype = int(lib.rn_tensor_element_type(ptr))
        t.shares_memory = True
        return t

    @property
    def element_type(self) -> Type:
        return Type(self._etype)

    def get_element_type(self) -> Type:
        return self.element_type

    def _dims(self, read) -> Tuple[int, ...]:
        return tuple(ffi.unpack(read(self._ptr), lib.rn_tensor_rank(self._ptr)))

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._dims(lib.rn_tensor_dims)

    def get_shape(self) -> Tuple[int, ...]:
        return self.shape

    @property
    def strides(self) -> Tuple[int, ...]:
        """Byte strides (dense row-major unless wrapping a strided view)."""
        return self._dims(lib.rn_tensor_strides)

    @property
    def is_dense(self) -> bool:
        return bool(lib.rn_tensor_is_dense(self._ptr))

    @property
    def size(self) -> int:
        return int(lib.rn_tensor_element_count(self._ptr))

    @property
    def byte_size(self) -> int:
        return int(lib.rn_tensor_byte_size(self._ptr))

    @property
    def data(self) -> np.ndarray:
        """The tensor's memory as a numpy array (no copy)."""
        if self._array is not None:
            return self._array
        address = _address(lib.rn_tensor_data(self._ptr))
        strides = None if lib.rn_tensor_is_dense(self._ptr) else self.strides
        return view(address, self.shape, self._etype, self, strides)

    def __array__(self, dtype=None, copy=None):
        a = self.data
        return a if dtype is None else a.astype(dtype)

    def __repr__(self) -> str:
        return f"<Tensor {self.element_type.name} {list(self.shape)}>"
