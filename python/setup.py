"""Builds runnel's Python package: the cffi extension runnel._capi (see
build_ffi.py) linked to libruntime.so, which python/build-wheel and
python/dev-install copy into runnel/ first (bazel build //runtime:libruntime.so)."""
import os
import re

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
if not os.path.exists(os.path.join(here, "runnel", "libruntime.so")):
    raise SystemExit("python/runnel/libruntime.so is missing: build the package with "
                     "python/build-wheel or python/dev-install (they run bazel first)")

include = os.environ.get("RUNNEL_INCLUDE", os.path.join(here, "..", "include"))
with open(os.path.join(include, "runnel", "version.h")) as f:
    parts = dict(re.findall(r"#define RN_VERSION_(MAJOR|MINOR|PATCH) (\d+)", f.read()))

setup(
    version=f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}",
    cffi_modules=["build_ffi.py:ffibuilder"],
)
