"""Async runs: callbacks from runnel's threads, wait/wait_for/cancel, Busy,
AsyncInferQueue with many jobs from several Python threads, and object
lifetimes with runs in flight."""
import gc
import os
import threading
import weakref

import numpy as np
import pytest

import runnel
from conftest import F32, RELU, need

# 10^5 jobs as the issue asks; RUNNEL_PY_JOBS scales it (scripts/test runs the full count).
QUEUE_JOBS = int(os.environ.get("RUNNEL_PY_JOBS", "100000"))


def test_start_async_wait(relu):
    r = relu.create_infer_request()
    x = np.linspace(-1, 1, 60, dtype=np.float32).reshape(3, 4, 5)
    r.start_async({"x": x})
    r.wait()
    np.testing.assert_array_equal(r.results["y"], np.maximum(x, 0))
    assert r.wait_for(0) is True  # nothing in flight: done


def test_callback_on_runnel_thread(relu):
    r = relu.create_infer_request()
    seen = []
    done = threading.Event()

    def on_done(request, userdata, status):
        seen.append((request, userdata, status, threading.get_ident(),
                     request.results["y"].copy()))
        done.set()

    r.set_callback(on_done, "first")
    x = np.full((3, 4, 5), 3, np.float32)
    r.start_async({"x": x})
    r.wait()
    assert done.is_set()
    request, userdata, status, ident, y = seen[0]
    assert request is r and userdata == "first" and status == runnel.Status.OK
    assert ident != threading.get_ident()
    assert np.all(y == 3)
    r.start_async(userdata="second")
    r.wait()
    assert seen[1][1] == "second" and r.userdata == "second"
    r.set_callback(None)
    r.start_async()
    r.wait()
    assert len(seen) == 2


def test_callback_exception_is_raised_by_wait(relu):
    r = relu.create_infer_request()

    def boom(request, userdata, status):
        raise KeyError("from the callback")

    r.set_callback(boom)
    r.start_async({"x": np.ones((3, 4, 5), np.float32)})
    with pytest.raises(KeyError, match="from the callback"):
        r.wait()
    r.wait()  # raised once


def test_busy_wait_for_cancel(slow_ref):
    r = slow_ref.create_infer_request()
    r.get_input_tensor(0).data[...] = 0.1
    statuses = []
    r.set_callback(lambda req, ud, st: statuses.append(st))
    r.start_async()
    with pytest.raises(runnel.Busy) as e:
        r.start_async()
    assert "start_async" in str(e.value) and "running" in str(e.value)
    with pytest.raises(runnel.Busy):
        r.infer()
    assert r.wait_for(0) is False
    r.cancel()
    with pytest.raises(runnel.Cancelled) as e:
        r.wait()
    assert "cancel" in str(e.value).lower()
    assert statuses == [runnel.Status.CANCELLED]
    r.start_async()  # usable again after a cancel
    r.wait()
    assert statuses[-1] == runnel.Status.OK


def test_async_infer_queue_results(relu):
    q = runnel.AsyncInferQueue(relu, 4)
    assert len(q) == 4 and all(isinstance(r, runnel.InferRequest) for r in q)
    got = {}

    def on_done(request, userdata, status):
        assert status == runnel.Status.OK
        got[userdata] = request.results["y"][0, 0, 0]

    q.set_callback(on_done)
    for i in range(64):
        q.start_async({"x": np.full((3, 4, 5), float(i), np.float32)}, i)
    q.wait_all()
    assert got == {i: float(i) for i in range(64)}
    assert q.is_ready() and 0 <= q.get_idle_request_id() < 4


def test_async_infer_queue_default_jobs(relu):
    q = runnel.AsyncInferQueue(relu)
    assert len(q) == int(relu.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))


def test_queue_jobs_from_four_threads_complete_once(core):
    compiled = core.compile_model(need(RELU), "REF")
    q = runnel.AsyncInferQueue(compiled, 8)
    counts = np.zeros(QUEUE_JOBS, np.int32)
    bad = []

    def on_done(request, userdata, status):
        counts[userdata] += 1
        if status != runnel.Status.OK or request.results["y"][2, 3, 4] != userdata:
            bad.append((userdata, status))

    q.set_callback(on_done)
    per_thread = QUEUE_JOBS // 4

    def producer(t):
        x = np.zeros((3, 4, 5), np.float32)
        for i in range(t * per_thread, (t + 1) * per_thread):
            xi = x.copy()
            xi[2, 3, 4] = i  # exact in f32 below 2^24
            q.start_async({"x": xi}, i)

    threads = [threading.Thread(target=producer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    q.wait_all()
    assert not bad, bad[:5]
    assert counts[:4 * per_thread].min() == 1 and counts.max() == 1


def test_objects_freed_in_any_order(core, device):
    import itertools
    for order in itertools.permutations(range(4)):
        compiled = core.compile_model(need(RELU), device, F32)
        request = compiled.create_infer_request()
        y = request.infer({"x": np.ones((3, 4, 5), np.float32)})["y"]
        objs = [compiled, request, y, runnel.Tensor(np.zeros(3, np.float32))]
        refs = [weakref.ref(o) for o in objs if not isinstance(o, np.ndarray)]
        for i in order:
            objs[i] = None
            gc.collect()
        del compiled, request, y
        gc.collect()
        assert all(r() is None for r in refs)


def test_output_view_keeps_the_request_memory(relu):
    r = relu.create_infer_request()
    y = r.infer({"x": np.full((3, 4, 5), 2, np.float32)})["y"]
    request, memory = weakref.ref(r), weakref.ref(r._memory)
    del r
    gc.collect()
    assert request() is None
    assert memory() is not None  # the view holds the C request's buffers
    assert np.all(y == 2)
    del y
    gc.collect()
    assert memory() is None


def test_gc_with_runs_in_flight(core, slow_ref):
    # Requests dropped while running: one with a callback (kept alive until it
    # ran), one without (freed after its run); inputs stay alive meanwhile.
    done = threading.Event()
    seen = []
    r1 = slow_ref.create_infer_request()
    r1.set_callback(lambda req, ud, st: (seen.append(st), done.set()))
    r1.start_async({0: np.full((1, 3, 224, 224), 0.5, np.float32)})
    ref1 = weakref.ref(r1)
    del r1
    r2 = slow_ref.create_infer_request()
    r2.start_async({0: np.full((1, 3, 224, 224), 0.25, np.float32)})
    ref2 = weakref.ref(r2)
    del r2
    gc.collect()
    assert ref2() is None  # freed: its finalizer waited for the run
    assert done.wait(60) and seen == [runnel.Status.OK]
    for _ in range(100):
        gc.collect()
        if ref1() is None:
            break
        threading.Event().wait(0.01)
    assert ref1() is None


def test_queue_dropped_with_jobs_in_flight(slow_ref):
    q = runnel.AsyncInferQueue(slow_ref, 2)
    finished = []
    q.set_callback(lambda req, ud, st: finished.append(ud))
    x = np.zeros((1, 3, 224, 224), np.float32)
    q.start_async({0: x}, "a")
    q.start_async({0: x}, "b")
    refs = [weakref.ref(r) for r in q]
    del q
    gc.collect()
    for _ in range(600):
        if sorted(finished) == ["a", "b"] and all(r() is None for r in refs):
            break
        gc.collect()
        threading.Event().wait(0.05)
    assert sorted(finished) == ["a", "b"]
    runnel.InferRequest(slow_ref)  # frees requests that went inside callbacks
    gc.collect()
    assert all(r() is None for r in refs)
