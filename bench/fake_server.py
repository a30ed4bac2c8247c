"""The fake OpenAI-protocol server (``tests/sejury_web/llm/fake_servers.py``) in a
subprocess, as the throughput benchmarks use it: it counts requests (not connections) and
says how many so far, and the most ever in flight, on SIGUSR1."""

import contextlib
import ctypes
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def die_with_parent() -> None:
    """In a child, before it runs: SIGTERM it when this process dies, even of SIGKILL (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


class FakeServer:
    """The fake OpenAI server in a subprocess; counts requests on demand (SIGUSR1)."""

    def __init__(self, latency: float, *, prefix_cache: bool = False) -> None:
        """``prefix_cache``: the server counts tokens as OpenAI's prompt cache would."""
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.sejury_web.llm.fake_servers",
                "openai",
                "--latency",
                str(latency),
                *(["--prefix-cache"] if prefix_cache else []),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=die_with_parent,  # safe: this process runs no threads
        )
        line = self._line()
        if not line.startswith("URL "):
            self.stop()
            raise SystemExit(f"the fake server did not start: {line!r}")
        self.base_url = line.removeprefix("URL ") + "/v1"

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def requests(self) -> tuple[int, int]:
        """The requests the server has received so far, and the most it ever had in flight."""
        self.process.send_signal(signal.SIGUSR1)
        words = self._line().split()  # REQUESTS <count> PEAK <peak>
        return int(words[1]), int(words[3])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            self.process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate()
