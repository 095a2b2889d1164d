#!/usr/bin/env python3
"""The cost of one call into libruntime.so from Python: cffi in API mode (the
package's extension, runnel._capi) against ctypes and cffi in ABI mode on the
same library, same calls, same run. It decided how the package binds the C API
(docs/python.md, "Why cffi"). Not a test: it never fails on a number.

  bench/python/run calls
"""
import ctypes
import os
import sys
import timeit

import cffi

from runnel import _capi

N = 200_000


def best(stmt, ns):
    # Best of 5 repeats of N calls, in ns per call.
    return min(timeit.repeat(stmt, globals=ns, number=N, repeat=5)) / N * 1e9


def main():
    lib_path = os.path.join(os.path.dirname(_capi.__file__), "libruntime.so")
    api_ffi, api = _capi.ffi, _capi.lib

    cdll = ctypes.CDLL(lib_path)
    c_create = cdll.rn_tensor_create
    c_create.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t,
                         ctypes.POINTER(ctypes.c_void_p)]
    c_create.restype = ctypes.c_int
    c_rank = cdll.rn_tensor_rank
    c_rank.argtypes = [ctypes.c_void_p]
    c_rank.restype = ctypes.c_size_t
    c_wrap = cdll.rn_tensor_wrap
    c_wrap.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t,
                       ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
    c_wrap.restype = ctypes.c_int
    c_free = cdll.rn_tensor_free
    c_free.argtypes = [ctypes.c_void_p]
    c_free.restype = None

    abi_ffi = cffi.FFI()
    abi_ffi.cdef("typedef struct rn_tensor rn_tensor;"
                 "size_t rn_tensor_rank(const rn_tensor *);"
                 "int rn_tensor_wrap(int, const int64_t *, size_t, void *, size_t, rn_tensor **);"
                 "void rn_tensor_free(rn_tensor *);")
    abi = abi_ffi.dlopen(lib_path)

    dims = (ctypes.c_int64 * 1)(4)
    ct = ctypes.c_void_p()
    assert c_create(1, dims, 1, ctypes.byref(ct)) == 0
    buf = (ctypes.c_float * 4)()
    out = ctypes.c_void_p()

    api_dims = api_ffi.new("int64_t[1]", [4])
    api_t = api_ffi.new("rn_tensor **")
    assert api.rn_tensor_create(1, api_dims, 1, api_t) == 0
    api_buf = api_ffi.new("float[4]")
    api_out = api_ffi.new("rn_tensor **")
    abi_t = abi_ffi.cast("rn_tensor *", int(api_ffi.cast("intptr_t", api_t[0])))
    abi_dims = abi_ffi.new("int64_t[1]", [4])
    abi_buf = abi_ffi.new("float[4]")
    abi_out = abi_ffi.new("rn_tensor **")

    ns = dict(globals(), **locals())
    rows = [
        ("rn_tensor_rank (1 argument)",
         best("api.rn_tensor_rank(api_t[0])", ns),
         best("c_rank(ct)", ns),
         best("abi.rn_tensor_rank(abi_t)", ns)),
        ("rn_tensor_wrap + rn_tensor_free (6 + 1 arguments)",
         best("api.rn_tensor_wrap(1, api_dims, 1, api_buf, 16, api_out); "
              "api.rn_tensor_free(api_out[0])", ns),
         best("c_wrap(1, dims, 1, buf, 16, ctypes.byref(out)); c_free(out)", ns),
         best("abi.rn_tensor_wrap(1, abi_dims, 1, abi_buf, 16, abi_out); "
              "abi.rn_tensor_free(abi_out[0])", ns)),
    ]
    print(f"python {sys.version.split()[0]}, cffi {cffi.__version__}, best of 5 x {N} calls")
    for name, a, c, b in rows:
        print(f"{name:50s} cffi-api={a:7.1f} ns  ctypes={c:7.1f} ns  cffi-abi={b:7.1f} ns  "
              f"ratio=api/ctypes {a / c:.2f}")
    api.rn_tensor_free(api_t[0])


if __name__ == "__main__":
    main()
