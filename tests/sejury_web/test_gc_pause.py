"""The collector paused while a large read is built: back on when the last pause ends, and
only if it was on before the first."""

import gc
import threading
from collections.abc import Iterator

import pytest

from sejury_web.gc_pause import collector_paused


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_pauses_overlapping_in_two_threads_turn_it_on_at_the_last_end() -> None:
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    with collector_paused():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread's pause still holds
    release.set()
    thread.join(10)
    assert gc.isenabled()


def test_a_collector_off_before_stays_off_and_a_decorated_call_pauses_it() -> None:
    @collector_paused()
    def during() -> bool:
        return gc.isenabled()

    gc.enable()
    assert during() is False
    assert gc.isenabled()
    gc.disable()
    assert during() is False
    assert not gc.isenabled()
