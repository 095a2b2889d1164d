"""runnel as scripts/install lays it out (what deploy/Dockerfile builds its
image from): the installed runnel-server, moved to another folder, serves a
model over HTTP and gRPC with tritonclient's clients, and a C program built
against the installed headers and libruntime.so alone runs.

Part of the end-to-end suite: scripts/test-server runs scripts/install into a
temporary prefix with the suite's Bazel flags and passes it as --installed.
"""

import os
import shutil
import subprocess

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

PROGRAM = r"""
#include <stdio.h>
#include "runnel/runnel.h"
int main(void)
{
    rn_core *core;
    if (rn_core_create(&core) != RN_OK) {
        fprintf(stderr, "rn_core_create: %s\n", rn_last_error());
        return 1;
    }
    for (size_t i = 0; i < rn_core_device_count(core); i++)
        printf("%s\n", rn_core_device_name(core, i));
    rn_core_free(core);
    return 0;
}
"""


def cases(ctx):
    """The case; ctx as e2e.py's (installed, onnx_data, work, rng, sanitized, Server)."""

    def installed_server_serves_http_and_grpc():
        if not ctx.installed:
            return "no --installed prefix (scripts/test-server passes scripts/install's)"
        # Moved: the installed files find each other relative to themselves.
        prefix = os.path.join(ctx.work, "moved-prefix")
        shutil.copytree(ctx.installed, prefix, symlinks=True)
        server_bin = os.path.join(prefix, "bin", "runnel-server")
        for f in ("lib/libruntime.so", "lib/runnel/libgpu.so", "lib/runnel-plugins.txt",
                  "include/runnel/runnel.h"):
            assert os.path.exists(os.path.join(prefix, f)), f"{f} not installed"
        dynamic = subprocess.run(["readelf", "-d", server_bin], capture_output=True,
                                 text=True, check=True).stdout
        assert "[$ORIGIN/../lib]" in dynamic, dynamic
        ldd = subprocess.run(["ldd", server_bin], capture_output=True, text=True).stdout
        assert f"{prefix}/bin/../lib/libruntime.so" in ldd, ldd
        # The plugins link libruntime.so (the device kit, docs/plugins.md
        # section 9): the moved prefix's own copy, not one in Bazel's tree.
        gpu = os.path.join(prefix, "lib", "runnel", "libgpu.so")
        dynamic = subprocess.run(["readelf", "-d", gpu], capture_output=True, text=True,
                                 check=True).stdout
        assert "[libruntime.so]" in dynamic and "[$ORIGIN/..]" in dynamic, dynamic
        ldd = subprocess.run(["ldd", gpu], capture_output=True, text=True).stdout
        assert f"{prefix}/lib/runnel/../libruntime.so" in ldd, ldd
        # The installed plugins file names them relative to itself: found with
        # no environment variable, also after the move.
        plugins = open(os.path.join(prefix, "lib", "runnel-plugins.txt")).read()
        assert "GPU runnel/libgpu.so" in plugins and ctx.installed not in plugins, plugins
        env = {k: v for k, v in os.environ.items()
               if k not in ("RUNNEL_PLUGINS", "RUNNEL_INSTALLED_PLUGINS")}

        # A C program against the installed headers and library only.
        src = os.path.join(ctx.work, "installed.c")
        open(src, "w").write(PROGRAM)
        exe = os.path.join(ctx.work, "installed")
        sanitize = ["-fsanitize=address,undefined"] if ctx.sanitized else []
        subprocess.run(["cc", "-std=c17", "-Wall", "-Werror", *sanitize, "-I",
                        os.path.join(prefix, "include"), src, "-L", os.path.join(prefix, "lib"),
                        "-lruntime", f"-Wl,-rpath,{prefix}/lib", "-o", exe], check=True)
        devices = subprocess.run([exe], capture_output=True, text=True, env=env,
                                 check=True).stdout.split()
        # GPU from the installed plugins file (PoCL is one of scripts/setup's packages).
        assert {"REF", "CPU", "HETERO", "AUTO", "GPU"} <= set(devices), devices
        print(f"  installed libruntime.so: devices {devices}")

        repo = os.path.join(ctx.work, "installed-repo")
        os.makedirs(f"{repo}/add/1")
        shutil.copy(f"{ctx.onnx_data}/node/test_add/model.onnx", f"{repo}/add/1/model.onnx")
        srv = ctx.Server(server_bin, repo, "--drain-secs", "0", "--threads", "2", env=env)
        try:
            x = ctx.rng.standard_normal((3, 4, 5), np.float32)
            y = ctx.rng.standard_normal((3, 4, 5), np.float32)
            h = httpclient.InferenceServerClient(url=srv.url)
            assert h.is_server_ready()
            a = httpclient.InferInput("x", [3, 4, 5], "FP32")
            a.set_data_from_numpy(x)
            b = httpclient.InferInput("y", [3, 4, 5], "FP32")
            b.set_data_from_numpy(y)
            assert np.array_equal(h.infer("add", [a, b]).as_numpy("sum"), x + y)
            h.close()
            g = grpcclient.InferenceServerClient(srv.grpc_url)
            a = grpcclient.InferInput("x", [3, 4, 5], "FP32")
            a.set_data_from_numpy(x)
            b = grpcclient.InferInput("y", [3, 4, 5], "FP32")
            b.set_data_from_numpy(y)
            assert np.array_equal(g.infer("add", [a, b]).as_numpy("sum"), x + y)
            g.close()
        finally:
            rc = srv.stop()
        assert rc == 0, f"exit {rc}"

    return [installed_server_serves_http_and_grpc]
