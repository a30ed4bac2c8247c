"""The concurrency and rate limits hold across threads and processes."""

import json
import multiprocessing
import threading
import time
from pathlib import Path

import pytest
from django.db import connection
from pytest_django.fixtures import Settings

from sejury_web.llm import complete, limits
from sejury_web.llm.limits import ProviderLimiter

from .fake_servers import OpenAIServer, ok
from .helpers import GOOD_ANSWER, point_at, score_request


def _max_overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


def _hold_slots(lock_dir: str, out: str, count: int, hold: float) -> None:
    """In a child process: take a slot ``count`` times from four threads, log the intervals.

    Each take is also a line in ``out``.taken, for a parent that waits until slots are held.
    """
    limiter = ProviderLimiter(key="shared", max_concurrency=3, rpm=0, lock_dir=Path(lock_dir))
    intervals: list[tuple[float, float]] = []
    taken = Path(f"{out}.taken")

    def work() -> None:
        for _ in range(count):
            with limiter.slot():
                with taken.open("a") as log:
                    log.write("taken\n")
                # Shrunk a little, so that a hand-over within the same instant isn't an overlap.
                start = time.time()
                time.sleep(hold)
                intervals.append((start + 0.001, time.time() - 0.001))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    Path(out).write_text(json.dumps(intervals))


# Three processes and twelve threads racing for slots: alone, so that a busy machine does not
# start them one after the other (and a 50 ms hold then meets no one to overlap with).
@pytest.mark.alone
def test_the_concurrency_limit_holds_across_processes(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")  # nothing shared but the lock files
    outputs = [tmp_path / f"process-{index}.json" for index in range(3)]
    processes = [
        context.Process(target=_hold_slots, args=(str(tmp_path / "locks"), str(out), 3, 0.05))
        for out in outputs
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    intervals = [tuple(pair) for out in outputs for pair in json.loads(out.read_text())]

    assert len(intervals) == 3 * 4 * 3
    # 12 threads in 3 processes wanted a slot at once; never more than 3 held one.
    assert _max_overlap(intervals) == 3  # type: ignore[arg-type]


# Alone: it times a slot against a second (after a kill -9), which a busy machine can miss.
@pytest.mark.alone
def test_a_slot_is_released_when_its_holder_dies(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    holder = context.Process(target=_hold_slots, args=(str(tmp_path), str(tmp_path / "o"), 1, 30))
    holder.start()
    # Until the child holds all three slots (its fourth thread waits for one).
    taken = tmp_path / "o.taken"
    deadline = time.monotonic() + 60
    while not (taken.is_file() and taken.read_text().count("taken") == 3):
        assert holder.is_alive(), "the child died before it held its slots"
        assert time.monotonic() < deadline, "the child did not take its slots within 60 s"
        time.sleep(0.02)
    holder.kill()
    holder.join()

    limiter = ProviderLimiter(key="shared", max_concurrency=3, rpm=0, lock_dir=tmp_path)
    started = time.monotonic()
    with limiter.slot():
        pass
    assert time.monotonic() - started < 1


def test_the_rate_limit_spaces_requests_over_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "WINDOW_S", 1.0)
    limiter = ProviderLimiter(key="rpm", max_concurrency=8, rpm=3, lock_dir=tmp_path)
    sent: list[float] = []

    def work() -> None:
        with limiter.slot():
            sent.append(time.monotonic())

    threads = [threading.Thread(target=work) for _ in range(7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    sent.sort()
    # At most 3 sends in any window of 1 s: the 4th comes a window after the 1st, and so on.
    for first, fourth in zip(sent, sent[3:], strict=False):
        assert fourth - first >= 0.99
    assert sent[-1] - sent[0] >= 2


@pytest.mark.django_db(transaction=True)
def test_the_layer_keeps_to_the_concurrency_limit(settings: Settings, tmp_path: Path) -> None:
    in_flight = peak = 0
    guard = threading.Lock()

    def slow(body: dict[str, object]) -> object:
        nonlocal in_flight, peak
        with guard:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.1)
        with guard:
            in_flight -= 1
        return ok(GOOD_ANSWER)

    with OpenAIServer(default=slow) as server:  # type: ignore[arg-type]
        point_at(
            settings,
            tmp_path,
            PROVIDER="openai",
            OPENAI_BASE_URL=server.base_url,
            MAX_CONCURRENCY=2,
        )

        def work(index: int) -> None:
            complete(score_request(f"question {index}"))
            connection.close()

        threads = [threading.Thread(target=work, args=(index,)) for index in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert server.request_count == 8
    assert peak == 2
