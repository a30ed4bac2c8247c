"""Concurrency and requests-per-minute limits shared by every thread and process on a machine.

Both use ``flock`` on files in ``SEJURY_LLM["LOCK_DIR"]``: the kernel releases a lock when its
holder dies, so a worker killed mid-request never leaks a slot. A concurrency limit of C is C
slot files; a caller holds one slot while its request is sent (with the structured-output
fallbacks of that one attempt and any wait for the rate window), never while it sleeps
before a retry. The rate limit keeps the send times of the last minute in a file.
"""

import fcntl
import hashlib
import json
import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WINDOW_S = 60.0
# Polling intervals while every slot is taken: short at first so a freed slot is taken up
# within a few milliseconds, longer while the wait goes on.
POLL_FIRST_S = 0.002
POLL_MAX_S = 0.025


def _safe_name(key: str) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    prefix = "".join(char if char.isalnum() else "-" for char in key)[:40]
    return f"{prefix}-{digest}"


class ProviderLimiter:
    def __init__(self, *, key: str, max_concurrency: int, rpm: int, lock_dir: Path) -> None:
        self.max_concurrency = max_concurrency
        self.rpm = rpm
        self.directory = lock_dir / _safe_name(key)
        self.directory.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of the provider's request slots (and a place in its rate window)."""
        fd = self._acquire_slot()
        try:
            if self.rpm:
                self._wait_for_rate()
            yield
        finally:
            os.close(fd)  # closing the descriptor releases its lock

    def _acquire_slot(self) -> int:
        pause = POLL_FIRST_S
        slots = list(range(self.max_concurrency))
        while True:
            # A random order spreads callers over the slots instead of all racing for slot 0.
            random.shuffle(slots)
            for index in slots:
                fd = os.open(self.directory / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                except BaseException:
                    os.close(fd)
                    raise
                return fd
            time.sleep(pause * random.uniform(0.5, 1.0))  # noqa: S311 - jitter
            pause = min(POLL_MAX_S, pause * 1.5)

    def _wait_for_rate(self) -> None:
        while True:
            wait = self._take_rate_token()
            if wait <= 0:
                return
            time.sleep(wait + random.uniform(0, 0.05))  # noqa: S311 - jitter

    def _take_rate_token(self) -> float:
        """Record a send now if the window has room; otherwise the seconds until it has."""
        path = self.directory / "rate.json"
        with open(self.directory / "rate.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            now = time.time()
            try:
                sent = [t for t in json.loads(path.read_text()) if now - t < WINDOW_S]
            except (FileNotFoundError, ValueError):
                sent = []
            if len(sent) >= self.rpm:
                return min(sent) + WINDOW_S - now
            sent.append(now)
            path.write_text(json.dumps(sent))
            return 0.0
