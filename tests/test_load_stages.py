"""The load bench's CPU by stage: the server's clock (``hivemem.frontends.stages``) and
the bench's arithmetic over its reports (``hivemem.evaluation.load_stages``). The
whole path, a real server reporting to the bench, is in ``tests/test_bench_load.py``."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

from hivemem.evaluation.load_stages import collect, per_request
from hivemem.frontends.stages import StageClock, thread_cpu


def test_the_stages_are_the_difference_of_two_reports_and_framework_is_the_rest():
    before = {
        1: {"requests": 10, "stages_ns": {"library": 5_000_000}, "threads_ns": {}},
    }
    after = {
        1: {
            "requests": 110,
            "stages_ns": {"parse": 1_000_000, "library": 305_000_000, "serialise": 2_000_000},
            "threads_ns": {"hivemem-lane": 100_000_000, "MainThread": 900_000_000},
        },
        # a worker that began reporting after the first report: all of it counts
        2: {"requests": 100, "stages_ns": {"auth": 20_000_000}, "threads_ns": {}},
    }
    stages = per_request(before, after, server_cpu_ms=1000.0)
    assert stages is not None and stages.requests == 200
    # library: 300 ms timed in the request threads + 100 ms on the lane threads
    assert stages.ms == pytest.approx(
        {
            "parse": 0.005,
            "auth": 0.1,
            "library": 2.0,
            "serialise": 0.01,
            "framework": 5.0 - 0.005 - 0.1 - 2.0 - 0.01,
        }
    )
    assert per_request(before, before, 10.0) is None  # no request: nothing to divide
    assert "framework" not in per_request(before, after, None).ms  # no /proc: no rest


def test_the_clock_times_a_stage_with_the_cpu_of_its_thread():
    clock = StageClock()
    with clock.timed("library"):
        deadline = time.thread_time() + 0.02
        while time.thread_time() < deadline:
            pass
    with clock.timed("parse"):
        time.sleep(0.05)  # waiting costs no CPU
    clock.request()
    shot = clock.snapshot()
    assert shot["requests"] == 1 and shot["pid"] == os.getpid()
    assert shot["stages_ns"]["library"] >= 20_000_000
    assert shot["stages_ns"]["parse"] < 20_000_000
    assert shot["stages_ns"]["auth"] == 0


def test_threads_are_grouped_by_name_without_the_pool_number():
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    workers = [threading.Thread(target=spin, name=f"hivemem-lane_{n}") for n in range(2)]
    for worker in workers:
        worker.start()
    time.sleep(0.3)
    used = thread_cpu()
    stop.set()
    for worker in workers:
        worker.join()
    assert used.get("hivemem-lane", 0) > 0
    assert not any(name.startswith("hivemem-lane_") for name in used)


def test_a_server_reports_on_request_and_only_one_that_said_it_can(tmp_path):
    clock = StageClock()
    previous = signal.getsignal(signal.SIGUSR1)
    try:
        clock.install(str(tmp_path))
        clock.request()
        first = collect(tmp_path, [os.getpid()])
        clock.request()
        second = collect(tmp_path, [os.getpid(), 999_999_999])  # the other said nothing
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert first[os.getpid()]["requests"] == 1
    assert list(second) == [os.getpid()] and second[os.getpid()]["requests"] == 2
    written = json.loads((tmp_path / f"stages-{os.getpid()}.json").read_text())
    assert written["requests"] == 2
