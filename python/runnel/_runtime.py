"""Core, Model, CompiledModel, InferRequest and AsyncInferQueue over the C API.

Threads and the GIL: every C call releases the GIL while it runs (cffi's API
mode), so inference, waits and compiles let other Python threads go on.
Completion callbacks come from runnel's callback thread and take the GIL
there (cffi's extern "Python").

Lifetimes: C handles are freed when their Python object goes; the C side
keeps what it needs alive (a request keeps its compiled model, a compiled
model its core), so objects may go in any order. A request keeps the
tensors and arrays bound to it until the C request is freed, and a request
with a completion callback keeps itself alive while a run is in flight. At
interpreter exit every run in flight is waited for before the interpreter
is torn down; from then on completions no longer enter Python and new runs
are refused.
"""
from __future__ import annotations

import atexit
import datetime
import os
import queue
import threading
import weakref
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple, Union)

import numpy as np

from ._base import (InvalidArgument, NotFound, RunnelError, Status, Type, _c_str, check,
                    error)
from ._capi import ffi, lib
from ._tensor import Tensor, element_type, python_value, view

PathLike = Union[str, "os.PathLike[str]"]
PropertyValue = Union[str, int, float, bool]
Config = Mapping[str, PropertyValue]
Inputs = Union[None, np.ndarray, Tensor, Sequence[Any], Mapping[Any, Any]]
Callback = Callable[["InferRequest", Any, Status], None]

# ---- properties ----


def _property_text(value: PropertyValue) -> str:
    if isinstance(value, bool):
        return "YES" if value else "NO"
    if hasattr(value, "name") and not isinstance(value, (int, float, str)):
        return str(value.name)  # an enum member
    return str(value)


def _properties(config: Optional[Config]):
    """(rn_property array, count, keep-alive) for a dict of properties."""
    if not config:
        return ffi.NULL, 0, None
    arr = ffi.new("rn_property[]", len(config))
    keep = [arr]
    for i, (key, value) in enumerate(config.items()):
        k = ffi.new("char[]", str(key).encode())
        v = ffi.new("char[]", _property_text(value).encode())
        keep += (k, v)
        arr[i].key = k
        arr[i].value = v
    return arr, len(config), keep


def _read_property(read: Callable[[Any, int], int]) -> str:
    """Calls read(buf, size) with a growing buffer until the value fits."""
    size = 4096
    while True:
        buf = ffi.new("char[]", size)
        st = read(buf, size)
        if st == 0:
            return ffi.string(buf).decode("utf-8", "replace")
        if st != Status.INVALID_ARG or size >= (1 << 24):
            raise error(st)
        size *= 16


# ---- ports ----


class Port:
    """One input or output of a model: name, element type, partial shape
    (dims of -1 are dynamic; None when even the rank is unknown)."""

    __slots__ = ("name", "element_type", "partial_shape", "index", "is_input")

    def __init__(self, c_port, index: int, is_input: bool) -> None:
        self.name: str = _c_str(c_port.name)
        self.element_type: Type = Type(c_port.element_type) if c_port.element_type else None
        rank = c_port.shape.rank
        self.partial_shape: Optional[Tuple[int, ...]] = (
            None if rank < 0 else tuple(c_port.shape.dims[i] for i in range(rank)))
        self.index = index
        self.is_input = is_input

    @property
    def any_name(self) -> str:
        return self.name

    def get_any_name(self) -> str:
        return self.name

    def get_element_type(self) -> Type:
        return self.element_type

    def get_partial_shape(self) -> Optional[Tuple[int, ...]]:
        return self.partial_shape

    @property
    def shape(self) -> Tuple[int, ...]:
        """The static shape; InvalidArgument when a dim is dynamic."""
        if self.partial_shape is None or any(d < 0 for d in self.partial_shape):
            raise InvalidArgument(f"port '{self.name}': shape {self.partial_shape} is dynamic")
        return self.partial_shape

    def get_shape(self) -> Tuple[int, ...]:
        return self.shape

    def __repr__(self) -> str:
        kind = "input" if self.is_input else "output"
        et = self.element_type.name if self.element_type else "?"
        return f"<Port {kind} {self.index} '{self.name}' {et} {self.partial_shape}>"


def _ports(count_fn, port_fn, handle, is_input: bool) -> List[Port]:
    out = ffi.new("rn_port *")
    ports = []
    for i in range(count_fn(handle)):
        check(port_fn(handle, i, out))
        ports.append(Port(out, i, is_input))
    return ports


def _port_index(ports: List[Port], names: Dict[str, int], key: Any, what: str) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        if 0 <= key < len(ports):
            return key
        raise NotFound(f"{what} {key}: the model has {len(ports)} {what}s")
    if isinstance(key, Port):
        key = key.name
    try:
        return names[key]
    except (KeyError, TypeError):
        raise NotFound(f"{what} {key!r}: the model has {', '.join(names) or 'none'}") from None


class _PortsMixin:
    _inputs: List[Port]
    _outputs: List[Port]
    _input_names: Dict[str, int]
    _output_names: Dict[str, int]

    def _init_ports(self, inputs: List[Port], outputs: List[Port]) -> None:
        self._inputs = inputs
        self._outputs = outputs
        self._input_names = {p.name: p.index for p in inputs}
        self._output_names = {p.name: p.index for p in outputs}

    @property
    def inputs(self) -> List[Port]:
        return list(self._inputs)

    @property
    def outputs(self) -> List[Port]:
        return list(self._outputs)

    def input(self, key: Union[int, str, Port] = 0) -> Port:
        return self._inputs[_port_index(self._inputs, self._input_names, key, "input")]

    def output(self, key: Union[int, str, Port] = 0) -> Port:
        return self._outputs[_port_index(self._outputs, self._output_names, key, "output")]


# ---- Core ----


class Core:
    """The device registry: reads models, compiles them, answers which
    devices are present (REF is built in; RUNNEL_PLUGINS names a plugins
    file loaded at creation)."""

    def __init__(self) -> None:
        out = ffi.new("rn_core **")
        check(lib.rn_core_create(out))
        self._ptr = ffi.gc(out[0], lib.rn_core_free)

    @property
    def available_devices(self) -> List[str]:
        return [_c_str(lib.rn_core_device_name(self._ptr, i))
                for i in range(lib.rn_core_device_count(self._ptr))]

    @property
    def failed_devices(self) -> Dict[str, str]:
        """Devices that failed to load, with why."""
        name, reason = ffi.new("const char **"), ffi.new("const char **")
        failed = {}
        for i in range(lib.rn_core_failed_device_count(self._ptr)):
            check(lib.rn_core_failed_device(self._ptr, i, name, reason))
            failed[_c_str(name[0])] = _c_str(reason[0])
        return failed

    def read_model(self, model: PathLike) -> "Model":
        out = ffi.new("rn_model **")
        check(lib.rn_core_read_model(self._ptr, os.fsencode(model), out))
        return Model(ffi.gc(out[0], lib.rn_model_free))

    def compile_model(self, model: Union["Model", PathLike], device_name: Optional[str] = None,
                      config: Optional[Config] = None) -> "CompiledModel":
        """Compiles a Model (or the model file at a path) for a device (the
        first available one when None) with compile-time properties."""
        if not isinstance(model, Model):
            model = self.read_model(model)
        if device_name is None:
            device_name = self.available_devices[0]
        props, n, keep = _properties(config)
        out = ffi.new("rn_compiled_model **")
        check(lib.rn_core_compile_model(self._ptr, model._ptr, device_name.encode(), props, n,
                                        out))
        del keep
        return CompiledModel(ffi.gc(out[0], lib.rn_compiled_model_free))

    def import_model(self, model_stream: Any, device_name: str,
                     config: Optional[Config] = None) -> "CompiledModel":
        """Reads a blob written by CompiledModel.export_model (bytes, a
        buffer, or a binary file object)."""
        if hasattr(model_stream, "read"):
            model_stream = model_stream.read()
        data = ffi.from_buffer(model_stream)
        props, n, keep = _properties(config)
        out = ffi.new("rn_compiled_model **")
        check(lib.rn_core_import_model(self._ptr, data, len(data), device_name.encode(), props,
                                       n, out))
        del keep
        return CompiledModel(ffi.gc(out[0], lib.rn_compiled_model_free))

    def get_property(self, device_name: str, name: str) -> str:
        """A property of a device ("" or None: of the core, e.g. CACHE_DIR), as text."""
        dev = (device_name or "").encode()
        key = name.encode()
        return _read_property(lambda buf, size: lib.rn_core_get_property(
            self._ptr, dev, key, buf, size))

    def set_property(self, device_name: Union[str, Config, None],
                     properties: Optional[Config] = None) -> None:
        """set_property(device, {KEY: value}) or, for the core itself,
        set_property({KEY: value}). Nothing changes when a key or value is bad."""
        if properties is None and isinstance(device_name, Mapping):
            device_name, properties = None, device_name
        props, n, keep = _properties(properties)
        check(lib.rn_core_set_property(self._ptr, (device_name or "").encode(), props, n))
        del keep

    def get_versions(self, device_name: str) -> Dict[str, str]:
        """{device: version} of the plugin behind a device."""
        out = ffi.new("const char **")
        check(lib.rn_core_get_version(self._ptr, device_name.encode(), out))
        return {device_name: _c_str(out[0])}

    def register_plugin(self, plugin_path: PathLike, device_name: Optional[str] = None) -> None:
        """Loads a device plugin from a shared object (runnel/plugin.h)."""
        check(lib.rn_core_load_plugin(self._ptr, device_name.encode() if device_name
                                      else ffi.NULL, os.fsencode(plugin_path)))

    def add_extension(self, library_path: PathLike) -> None:
        """Loads an extension's op schemas and kernels (runnel/extension.h)."""
        check(lib.rn_core_add_extension(self._ptr, os.fsencode(library_path)))


# ---- Model ----


class Model(_PortsMixin):
    """A model read from a file. Compiling copies it; reshape changes it."""

    def __init__(self, ptr) -> None:
        self._ptr = ptr
        self._refresh()

    def _refresh(self) -> None:
        self._init_ports(_ports(lib.rn_model_input_count, lib.rn_model_input, self._ptr, True),
                         _ports(lib.rn_model_output_count, lib.rn_model_output, self._ptr, False))

    @property
    def friendly_name(self) -> str:
        return _c_str(lib.rn_model_name(self._ptr))

    def get_friendly_name(self) -> str:
        return self.friendly_name

    def reshape(self, shape: Union[Sequence[int], Mapping[Any, Sequence[int]]]) -> None:
        """reshape([1, 3, 224, 224]) for a model of one input, or
        reshape({input: shape, ...}); -1 leaves a dim dynamic. Shapes are
        re-inferred; on error the model is unchanged."""
        if not isinstance(shape, Mapping):
            if len(self._inputs) != 1:
                raise InvalidArgument(f"reshape: the model has {len(self._inputs)} inputs; "
                                      "give {input: shape, ...}")
            shape = {0: shape}
        for key, dims in shape.items():
            port = self.input(key)
            dims = [int(d) for d in dims]
            ps = ffi.new("rn_partial_shape *")
            if len(dims) > len(ps.dims):
                raise InvalidArgument(f"reshape: input '{port.name}': rank {len(dims)} is "
                                      f"over {len(ps.dims)}")
            ps.rank = len(dims)
            for i, d in enumerate(dims):
                ps.dims[i] = d
            check(lib.rn_model_reshape(self._ptr, port.name.encode(), ps))
        self._refresh()

    def __repr__(self) -> str:
        return f"<Model '{self.friendly_name}' inputs={self._inputs} outputs={self._outputs}>"


# ---- CompiledModel ----


class CompiledModel(_PortsMixin):
    """A model compiled for one device: makes infer requests."""

    def __init__(self, ptr) -> None:
        self._ptr = ptr
        self._init_ports(
            _ports(lib.rn_compiled_model_input_count, lib.rn_compiled_model_input, ptr, True),
            _ports(lib.rn_compiled_model_output_count, lib.rn_compiled_model_output, ptr, False))
        self._request: Optional[InferRequest] = None

    @property
    def device(self) -> str:
        return _c_str(lib.rn_compiled_model_device(self._ptr))

    def create_infer_request(self) -> "InferRequest":
        return InferRequest(self)

    def __call__(self, inputs: Inputs = None) -> "Results":
        """Runs one inference on a request the compiled model keeps (as
        OpenVINO does) and returns its results."""
        if self._request is None:
            self._request = InferRequest(self)
        return self._request.infer(inputs)

    def get_property(self, name: str) -> str:
        key = name.encode()
        return _read_property(lambda buf, size: lib.rn_compiled_model_get_property(
            self._ptr, key, buf, size))

    def set_property(self, properties: Config) -> None:
        props, n, keep = _properties(properties)
        check(lib.rn_compiled_model_set_property(self._ptr, props, n))
        del keep

    def export_model(self) -> bytes:
        """The compiled model as a blob for Core.import_model."""
        data, size = ffi.new("void **"), ffi.new("size_t *")
        check(lib.rn_compiled_model_export(self._ptr, data, size))
        try:
            return bytes(ffi.buffer(data[0], size[0]))
        finally:
            lib.free(data[0])

    def __repr__(self) -> str:
        return f"<CompiledModel on {self.device} inputs={self._inputs} outputs={self._outputs}>"


# ---- results ----


class Results(dict):
    """Outputs of a run by name (dict order: the model's outputs); also
    indexed by output number or Port. The arrays are views of the request's
    buffers: the next run of the request overwrites them (copy to keep)."""

    __slots__ = ("_names",)

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, int) and not isinstance(key, bool):
            key = self._names[key]
        elif isinstance(key, Port):
            key = key.name
        return dict.__getitem__(self, key)

    def to_tuple(self) -> Tuple[np.ndarray, ...]:
        return tuple(self.values())


class ProfilingInfo(NamedTuple):
    node_name: str
    node_type: str
    exec_type: str
    status: str  # "NOT_RUN", "OPTIMIZED_OUT", "EXECUTED"
    real_time: datetime.timedelta


_NODE_STATUS = {0: "NOT_RUN", 1: "OPTIMIZED_OUT", 2: "EXECUTED"}

# ---- requests and shutdown ----


_in_flight: set = set()  # requests with a callback and a run in flight (keeps them alive)
_live: "weakref.WeakSet[_RequestMemory]" = weakref.WeakSet()
_graveyard: List[Tuple[Any, Any]] = []  # requests that went inside a callback, freed later
_closing = False
_exit_registered = False
_lock = threading.Lock()


def _free_request(ptr, bound) -> None:
    """Frees a C request (after its run in flight, if any). Inside a
    completion callback this cannot wait (the callback may be this request's
    own), so the request is freed by the next request created, by
    AsyncInferQueue.wait_all or at exit."""
    if lib.rnpy_in_callback():
        _graveyard.append((ptr, bound))
        return
    lib.rn_infer_request_free(ptr)  # waits for a run in flight, without the GIL


def _reap() -> None:
    while _graveyard and not lib.rnpy_in_callback():
        ptr, bound = _graveyard.pop()
        lib.rn_infer_request_free(ptr)


def _at_exit() -> None:
    """Before the interpreter is torn down: refuse new runs, wait for every
    run in flight (their callbacks still run, with the GIL), then stop
    completions from entering Python. The requests are not freed: the
    process is ending, and a daemon thread may still be inside a
    synchronous infer of one."""
    global _closing
    _closing = True
    for memory in list(_live):
        lib.rn_infer_request_wait(memory.ptr)
    lib.rnpy_close()
    for memory in list(_live):
        memory.finalizer.detach()
    _graveyard.clear()


@ffi.def_extern()
def rnpy_on_done(handle, request, status, message) -> None:
    # The request is found through a weak reference (no cycle through the
    # handle); a run in flight with a callback is kept alive by _in_flight.
    owner = ffi.from_handle(handle)()
    if owner is not None:
        owner._on_done(status, message)


def _shutting_down() -> RunnelError:
    return RunnelError("runnel: the interpreter is shutting down; no new runs", Status.CANCELLED)


class _RequestMemory:
    """Owns a C request and the tensors bound to it; freed (after its run in
    flight) when the last of the InferRequest and the numpy views of its
    buffers goes. Views hold this, not the InferRequest, so that the
    request's cache of views makes no reference cycle (numpy arrays are not
    seen by the cycle collector)."""

    __slots__ = ("ptr", "bound", "finalizer", "__weakref__")

    def __init__(self, ptr) -> None:
        self.ptr = ptr
        self.bound: Dict[Tuple[bool, int], Tensor] = {}
        self.finalizer = weakref.finalize(self, _free_request, ptr, self.bound)


class InferRequest:
    """Buffers and a run of a compiled model: infer (sync), start_async /
    wait / wait_for / cancel, tensors, results, profiling, a callback.
    A request is used by one thread at a time."""

    def __init__(self, compiled: CompiledModel) -> None:
        global _exit_registered
        if _graveyard:
            _reap()
        out = ffi.new("rn_infer_request **")
        check(lib.rn_compiled_model_create_infer_request(compiled._ptr, out))
        self._ptr = out[0]
        self._compiled = compiled
        self._memory = _RequestMemory(self._ptr)
        # Tensors the C request reads or writes (kept until it is freed).
        self._bound = self._memory.bound
        with _lock:
            if not _exit_registered:
                # After weakref's own exit hook (registered with the first
                # finalize), so that it runs first.
                atexit.register(_at_exit)
                _exit_registered = True
        _live.add(self._memory)
        n_in = len(compiled._inputs)
        self._in_src: List[Any] = [None] * n_in  # what the user gave for each input
        self._in_shape: List[Any] = [None] * n_in
        self._out_names = [p.name for p in compiled._outputs]
        self._out_cache: List[Any] = [None] * len(self._out_names)
        self._info = ffi.new("rnpy_tensor_info *")
        self._handle = None
        self._callback: Optional[Callback] = None
        self._userdata: Any = None
        self._queue: Optional[Callable[[], Optional[AsyncInferQueue]]] = None
        self._index = 0
        self._done: Tuple[int, str] = (0, "")
        self._error: Optional[BaseException] = None

    # -- tensors --

    def _bind_input(self, index: int, value: Any) -> None:
        if value is self._in_src[index] and (not isinstance(value, np.ndarray)
                                             or value.shape == self._in_shape[index]):
            return  # the same array: runnel reads it in place
        if isinstance(value, Tensor):
            tensor = value
        elif isinstance(value, np.ndarray):
            tensor = Tensor(value)
        else:
            tensor = Tensor(value, type=self._compiled._inputs[index].element_type)
        check(lib.rn_infer_request_set_input_tensor(self._ptr, index, tensor._ptr))
        self._bound[(True, index)] = tensor
        self._in_src[index] = value
        self._in_shape[index] = getattr(value, "shape", None)

    def _bind(self, inputs: Inputs) -> None:
        if isinstance(inputs, dict) or isinstance(inputs, Mapping):
            items: Iterable = inputs.items()
        elif isinstance(inputs, (list, tuple)):
            items = enumerate(inputs)
        else:
            items = ((0, inputs),)
        cm = self._compiled
        src = self._in_src
        for key, value in items:
            index = cm._input_names.get(key) if type(key) is str else None
            if index is None:
                index = _port_index(cm._inputs, cm._input_names, key, "input")
            if value is src[index] and (type(value) is not np.ndarray
                                        or value.shape == self._in_shape[index]):
                continue  # the same array: runnel reads it in place
            self._bind_input(index, value)

    def _port(self, key: Any) -> Tuple[bool, int]:
        cm = self._compiled
        if isinstance(key, Port):
            return key.is_input, key.index
        if isinstance(key, str):
            if key in cm._input_names:
                return True, cm._input_names[key]
            if key in cm._output_names:
                return False, cm._output_names[key]
        raise NotFound(f"tensor {key!r}: the model's inputs are "
                       f"{', '.join(cm._input_names) or 'none'}, its outputs "
                       f"{', '.join(cm._output_names) or 'none'}")

    def get_tensor(self, key: Union[str, Port]) -> Tensor:
        """The tensor of an input or output (a view of the request's buffer, or
        the Tensor set for it)."""
        is_input, index = self._port(key)
        return self.get_input_tensor(index) if is_input else self.get_output_tensor(index)

    def _get(self, is_input: bool, index: int) -> Tensor:
        bound = self._bound.get((is_input, index))
        if bound is not None:
            return bound
        out = ffi.new("rn_tensor **")
        get = lib.rn_infer_request_get_input_tensor if is_input else \
            lib.rn_infer_request_get_output_tensor
        check(get(self._ptr, index, out))
        return Tensor._borrow(out[0], self._memory)

    def get_input_tensor(self, index: int = 0) -> Tensor:
        return self._get(True, index)

    def get_output_tensor(self, index: int = 0) -> Tensor:
        return self._get(False, index)

    def set_tensor(self, key: Union[str, Port], tensor: Union[Tensor, np.ndarray]) -> None:
        """Binds a Tensor (or a numpy array, wrapped without copying) to an
        input or output; an output's results are then written into it."""
        is_input, index = self._port(key)
        (self.set_input_tensor if is_input else self.set_output_tensor)(index, tensor)

    def set_input_tensor(self, index: int, tensor: Union[Tensor, np.ndarray]) -> None:
        if not isinstance(tensor, Tensor):
            tensor = Tensor(tensor)
        self._in_src[index] = None
        self._bind_input(index, tensor)

    def set_output_tensor(self, index: int, tensor: Union[Tensor, np.ndarray]) -> None:
        if not isinstance(tensor, Tensor):
            tensor = Tensor(tensor)
        check(lib.rn_infer_request_set_output_tensor(self._ptr, index, tensor._ptr))
        self._bound[(False, index)] = tensor
        self._out_cache[index] = None

    # -- runs --

    def infer(self, inputs: Inputs = None) -> Results:
        """Binds the inputs (numpy arrays are read in place), runs inference
        in this thread without the GIL, and returns the results."""
        if _closing:
            raise _shutting_down()
        if inputs is not None:
            self._bind(inputs)
        check(lib.rn_infer_request_infer(self._ptr))
        return self.results

    def start_async(self, inputs: Inputs = None, userdata: Any = None) -> None:
        """Starts a run and returns at once. The inputs must not change until
        it completes; the callback (set_callback) gets `userdata` (when None,
        the one given to set_callback or to the last start_async)."""
        if _closing:
            raise _shutting_down()
        if inputs is not None:
            self._bind(inputs)
        if userdata is not None:
            self._userdata = userdata
        tracked = self._handle is not None
        if tracked:
            _in_flight.add(self)
        st = lib.rn_infer_request_start_async(self._ptr)
        if st:
            if tracked:
                _in_flight.discard(self)
            raise error(st)

    def _raise_callback_error(self) -> None:
        e, self._error = self._error, None
        if e is not None:
            raise e

    def wait(self) -> None:
        """Waits (without the GIL) for the run in flight and its callback;
        raises the run's error, or the exception its callback raised."""
        st = lib.rn_infer_request_wait(self._ptr)
        self._raise_callback_error()
        check(st)

    def wait_for(self, timeout: int) -> bool:
        """As wait, for at most `timeout` milliseconds; False if still running."""
        st = lib.rn_infer_request_wait_for(self._ptr, int(timeout))
        if st == Status.RESULT_NOT_READY:
            return False
        self._raise_callback_error()
        check(st)
        return True

    def cancel(self) -> None:
        """Cancels the run in flight: it completes with Status.CANCELLED
        (wait raises Cancelled)."""
        check(lib.rn_infer_request_cancel(self._ptr))

    def set_callback(self, callback: Optional[Callback], userdata: Any = None) -> None:
        """callback(request, userdata, status) runs on runnel's callback thread
        (with the GIL) when an async run completes; None removes it. An
        exception it raises is raised again by the next wait."""
        if callback is None:
            check(lib.rnpy_clear_callback(self._ptr))
            self._handle = None
        else:
            if self._handle is None:
                handle = ffi.new_handle(weakref.ref(self))
                check(lib.rnpy_set_callback(self._ptr, handle))
                self._handle = handle
            self._userdata = userdata
        self._callback = callback

    def _on_done(self, status: int, message) -> None:
        self._done = (status, _c_str(message))
        try:
            if self._callback is not None:
                self._callback(self, self._userdata, Status(status))
        except BaseException as e:  # raised again by wait / wait_all
            self._error = e
        finally:
            _in_flight.discard(self)
            q = self._queue() if self._queue is not None else None
            if q is not None:
                q._idle.put(self._index)

    # -- results --

    @property
    def userdata(self) -> Any:
        return self._userdata

    @property
    def results(self) -> Results:
        """The outputs of the last run, as numpy views of the request's buffers."""
        info = self._info
        ptr = self._ptr
        cache = self._out_cache
        arrays = []
        for i in range(len(cache)):
            st = lib.rnpy_output(ptr, i, info)
            if st:
                raise error(st)
            if info.element_type == -1:
                # A map or a sequence of maps: a dict or a list of dicts (as
                # ONNX Runtime returns ZipMap's output), copied out.
                arrays.append(python_value(ffi.cast("rn_tensor *", info.data)))
                cache[i] = None
                continue
            hit = cache[i]
            # The view is made again only when the buffer or the shape changed.
            if hit is None or hit[0] != info.data or hit[1] != ffi.unpack(info.dims, info.rank):
                hit = self._view_output(i)
                cache[i] = hit
            arrays.append(hit[2])
        results = Results(zip(self._out_names, arrays))
        results._names = self._out_names
        return results

    def _view_output(self, i: int):
        info = self._info
        dims = ffi.unpack(info.dims, info.rank)
        strides = None if info.dense else self._get(False, i).strides
        return (info.data, dims, view(info.data, tuple(dims), info.element_type, self._memory,
                                      strides))

    def get_compiled_model(self) -> CompiledModel:
        return self._compiled

    @property
    def model_inputs(self) -> List[Port]:
        return self._compiled.inputs

    @property
    def model_outputs(self) -> List[Port]:
        return self._compiled.outputs

    @property
    def profiling_info(self) -> List[ProfilingInfo]:
        """Per-node times of the last run (ENABLE_PROFILING=YES at compile time)."""
        info, count = ffi.new("const rn_profiling_info **"), ffi.new("size_t *")
        check(lib.rn_infer_request_profiling_info(self._ptr, info, count))
        return [ProfilingInfo(_c_str(e.node_name), _c_str(e.node_type), _c_str(e.exec_type),
                              _NODE_STATUS.get(e.status, str(e.status)),
                              datetime.timedelta(microseconds=e.real_time_us))
                for e in (info[0][i] for i in range(count[0]))]

    def get_profiling_info(self) -> List[ProfilingInfo]:
        return self.profiling_info


# ---- AsyncInferQueue ----


class AsyncInferQueue:
    """A pool of `jobs` infer requests (0: the compiled model's
    OPTIMAL_NUMBER_OF_INFER_REQUESTS). start_async takes an idle request,
    waiting without the GIL when none is; the callback set with
    set_callback gets (request, userdata, status) on runnel's callback
    thread. Any number of Python threads may start jobs."""

    def __init__(self, model: CompiledModel, jobs: int = 0) -> None:
        if jobs <= 0:
            jobs = int(model.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))
        self._requests = [model.create_infer_request() for _ in range(jobs)]
        self._idle: "queue.SimpleQueue[int]" = queue.SimpleQueue()
        me = weakref.ref(self)
        for i, r in enumerate(self._requests):
            r._queue = me
            r._index = i
            r.set_callback(None)
            handle = ffi.new_handle(weakref.ref(r))
            check(lib.rnpy_set_callback(r._ptr, handle))
            r._handle = handle
            self._idle.put(i)

    def set_callback(self, callback: Optional[Callback]) -> None:
        for r in self._requests:
            r._callback = callback

    def start_async(self, inputs: Inputs = None, userdata: Any = None) -> None:
        i = self._idle.get()
        r = self._requests[i]
        try:
            # The previous job's callback has put it back; wait until it returned.
            lib.rn_infer_request_wait(r._ptr)
            r._userdata = userdata
            r.start_async(inputs)
        except BaseException:
            self._idle.put(i)
            raise

    def wait_all(self) -> None:
        """Waits for every job in flight and its callback; raises the first
        exception a callback raised."""
        for r in self._requests:
            lib.rn_infer_request_wait(r._ptr)
        if _graveyard:
            _reap()
        for r in self._requests:
            r._raise_callback_error()

    def is_ready(self) -> bool:
        """True when a request is idle (start_async would not wait)."""
        return not self._idle.empty()

    def get_idle_request_id(self) -> int:
        """Waits for an idle request and returns its index (it stays idle)."""
        i = self._idle.get()
        self._idle.put(i)
        return i

    @property
    def userdata(self) -> List[Any]:
        return [r._userdata for r in self._requests]

    def __len__(self) -> int:
        return len(self._requests)

    def __iter__(self) -> Iterator[InferRequest]:
        return iter(self._requests)

    def __getitem__(self, i: int) -> InferRequest:
        return self._requests[i]
