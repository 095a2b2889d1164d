"""The interpreter exiting with runs in flight, and resource warnings under
python -X dev: run in a child interpreter so that exit itself is observed."""
import os
import subprocess
import sys
import textwrap

from conftest import RELU, SLOW, need

SCRIPT = textwrap.dedent("""
    import threading, numpy as np, runnel
    core = runnel.Core()
    slow = core.compile_model({slow!r}, "REF")
    relu = core.compile_model({relu!r}, "REF")
    y = relu({{"x": np.ones((3, 4, 5), np.float32)}})["y"]
    q = runnel.AsyncInferQueue(slow, 2)
    q.set_callback(lambda req, ud, st: print("callback", ud, st.name, flush=True))
    x = np.zeros((1, 3, 224, 224), np.float32)
    q.start_async({{0: x}}, 1)
    q.start_async({{0: x}}, 2)
    r = slow.create_infer_request()
    r.start_async({{0: x}})            # no callback, in flight at exit
    def daemon():
        rq = relu.create_infer_request()
        while True:                    # still running when the interpreter exits
            try:
                rq.infer({{"x": np.ones((3, 4, 5), np.float32)}})
            except runnel.RunnelError:
                break
    threading.Thread(target=daemon, daemon=True).start()
    print("exiting", flush=True)
""")


def run_child(*flags):
    code = SCRIPT.format(slow=need(SLOW), relu=need(RELU))
    return subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True,
                          timeout=300)


def test_exit_with_requests_in_flight():
    p = run_child()
    assert p.returncode == 0, p.stderr
    assert "exiting" in p.stdout
    # Callbacks of jobs in flight ran (at exit, before the interpreter went).
    assert "callback 1" in p.stdout and "callback 2" in p.stdout, p.stdout
    assert "Traceback" not in p.stderr and "Fatal" not in p.stderr, p.stderr


def test_no_resource_warnings_under_dev_mode():
    p = run_child("-X", "dev", "-W", "error::ResourceWarning")
    assert p.returncode == 0, p.stderr
    assert "ResourceWarning" not in p.stderr, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
