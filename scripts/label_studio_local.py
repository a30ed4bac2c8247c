#!/usr/bin/env python3
"""A real Label Studio on this machine, for the round-trip tests (``tests/label_studio``).

    python3 scripts/label_studio_local.py install   # its virtualenv, and a migrated database
    python3 scripts/label_studio_local.py start     # install, start (or reuse) it, print exports
    python3 scripts/label_studio_local.py env       # the exports of the running one
    python3 scripts/label_studio_local.py status    # whether it runs, and where
    python3 scripts/label_studio_local.py stop      # stop it, by its pid

``eval "$(python3 scripts/label_studio_local.py start)"`` points the tests at it. Only
``export NAME=value`` lines go to standard output; progress goes to standard error.

Label Studio is a Django application with a few hundred dependencies of its own (Django
among them, at another version than ours), so it lives in a virtualenv of its own, in the
per-user cache ``$SEJURY_CACHE_DIR`` (default ``~/.cache/sejury-web``, as
``scripts/llm_local.py``'s model), beside the app's ``.venv`` and never in it:

- ``label-studio-venv``: ``pip install label-studio==<version>`` (about 1 GB; 12 minutes
  to install on a busy two-core machine), installed again when the pinned version changes;
- ``label-studio-<version>-template``: an empty data directory, its SQLite database
  migrated once (``label-studio version`` applies the migrations and exits): Label Studio's
  migrations take minutes on two cores, every start would otherwise pay them;
- ``run/``: the running one's state (pid, port, its user), its data directory and its log.

Each ``start`` begins from a copy of the template: no project, no user but the one made from
the environment, ``LABEL_STUDIO_USERNAME`` (an e-mail: Label Studio's users log in by
e-mail), ``LABEL_STUDIO_PASSWORD`` and ``LABEL_STUDIO_USER_TOKEN`` (its API token), or made
up here when unset and printed among the exports. Legacy tokens are enabled
(``Authorization: Token …``, as ``LABEL_STUDIO_USER_TOKEN`` needs), sign-up needs the
organisation's invite link, and it listens on the loopback only
(``SEJURY_LABEL_STUDIO_PORT``, default 8093). It runs with none of this process's
environment but ``PATH``, ``HOME`` and the locale: Label Studio reads many bare names
(``HOST``, ``PORT``, ``DEBUG``, ``USERNAME``…) as its settings.

Stdlib only: it runs with any Python 3.11 before the app's dependencies are installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

LABEL_STUDIO = "label-studio"
LABEL_STUDIO_VERSION = "1.23.2"
DEFAULT_PORT = 8093
DEFAULT_USERNAME = "lead@sejury.test"
# A cold start checks the migrations and builds its caches: tens of seconds on a busy
# machine; the first ``install`` migrates the template, which takes minutes.
HEALTH_WAIT_S = 600
# What Label Studio's process gets of this one's environment.
PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def cache_dir() -> Path:
    explicit = os.environ.get("SEJURY_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sejury-web"


def port() -> int:
    return int(os.environ.get("SEJURY_LABEL_STUDIO_PORT") or DEFAULT_PORT)


def say(message: str) -> None:
    print(f"label-studio-local: {message}", file=sys.stderr, flush=True)


class Failure(Exception):
    pass


# -- what is installed --------------------------------------------------------------------------


def venv() -> Path:
    return cache_dir() / f"{LABEL_STUDIO}-venv"


def command() -> Path:
    return venv() / "bin" / "label-studio"


def template() -> Path:
    return cache_dir() / f"{LABEL_STUDIO}-{LABEL_STUDIO_VERSION}-template"


def installed() -> bool:
    venv_python = venv() / "bin" / "python"
    if not (command().exists() and venv_python.exists()):
        return False
    # The pinned version, fully installed (an interrupted install leaves no dist-info).
    found = subprocess.run(
        [str(venv_python), "-m", "pip", "show", LABEL_STUDIO],
        capture_output=True,
        text=True,
        check=False,
    )
    return f"Version: {LABEL_STUDIO_VERSION}" in found.stdout


def _environment(data_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED_ENV if name in os.environ}
    return env | {
        "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        "LOG_LEVEL": "WARNING",
        **(extra or {}),
    }


def install() -> None:
    if not installed():
        started = time.monotonic()
        say(f"installing {LABEL_STUDIO}=={LABEL_STUDIO_VERSION} into {venv()} (minutes)")
        shutil.rmtree(venv(), ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv())], check=True)
        log = cache_dir() / f"{LABEL_STUDIO}-install.log"
        with log.open("wb") as out:
            done = subprocess.run(
                [
                    str(venv() / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    f"{LABEL_STUDIO}=={LABEL_STUDIO_VERSION}",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0 or not installed():
            tail = log.read_text(errors="replace").splitlines()[-20:]
            raise Failure("pip failed; the end of its log:\n" + "\n".join(tail))
        say(f"installed in {time.monotonic() - started:.0f} s")
        shutil.rmtree(template(), ignore_errors=True)
    migrated = template() / "migrated"
    if not migrated.exists():
        started = time.monotonic()
        say(f"migrating an empty database into {template()} (minutes)")
        shutil.rmtree(template(), ignore_errors=True)
        template().mkdir(parents=True)
        migration = subprocess.run(
            [str(command()), "version"],
            env=_environment(template()),
            capture_output=True,
            text=True,
            check=False,
        )
        if migration.returncode != 0:
            output = f"{migration.stdout}\n{migration.stderr}"
            raise Failure(f"label-studio version failed:\n{output}")
        migrated.write_text(f"{LABEL_STUDIO_VERSION}\n")
        say(f"migrated in {time.monotonic() - started:.0f} s")


# -- the server ---------------------------------------------------------------------------------


def run_dir() -> Path:
    directory = cache_dir() / "run"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def state_path() -> Path:
    return run_dir() / "label-studio.json"


def data_dir() -> Path:
    return run_dir() / "label-studio-data"


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
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


def _read_state() -> dict[str, object]:
    try:
        state = json.loads(state_path().read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def running() -> dict[str, object] | None:
    """The recorded Label Studio, if its process lives and it answers on its port."""
    state = _read_state()
    pid, at = state.get("pid"), state.get("port")
    if not isinstance(pid, int) or not isinstance(at, int) or not _alive(pid):
        return None
    return state if healthy(at) else None


def start() -> dict[str, object]:
    state = running()
    if state:
        say(f"Label Studio already running on {base_url(int(str(state['port'])))}")
        return state
    stop(quiet=True)
    install()
    at = port()
    if healthy(at):
        raise Failure(
            f"something else answers on {base_url(at)}: stop it or set SEJURY_LABEL_STUDIO_PORT"
        )
    user = {
        "LABEL_STUDIO_USERNAME": os.environ.get("LABEL_STUDIO_USERNAME") or DEFAULT_USERNAME,
        "LABEL_STUDIO_PASSWORD": os.environ.get("LABEL_STUDIO_PASSWORD") or secrets.token_hex(12),
        # Label Studio applies a token of more than 5 characters.
        "LABEL_STUDIO_USER_TOKEN": os.environ.get("LABEL_STUDIO_USER_TOKEN")
        or secrets.token_hex(20),
    }
    shutil.rmtree(data_dir(), ignore_errors=True)
    shutil.copytree(template(), data_dir())
    log = run_dir() / "label-studio.log"
    args = ["start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(at)]
    say(f"starting Label Studio {LABEL_STUDIO_VERSION} on {base_url(at)}; its log: {log}")
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(command()), *args],
            env=_environment(data_dir(), user),
            cwd=run_dir(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives the shell that started it, and its Ctrl-C
        )
    started = time.monotonic()
    while not healthy(at):
        if process.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-20:]
            raise Failure(
                f"Label Studio exited with status {process.returncode}; the end of its log:\n"
                + "\n".join(tail)
            )
        if time.monotonic() - started > HEALTH_WAIT_S:
            _terminate(process.pid)
            raise Failure(f"Label Studio did not answer within {HEALTH_WAIT_S} s; see {log}")
        time.sleep(0.5)
    state = {"pid": process.pid, "port": at, **user}
    state_path().touch(mode=0o600)
    state_path().write_text(json.dumps(state) + "\n")
    say(f"Label Studio answers on {base_url(at)} after {time.monotonic() - started:.1f} s")
    return state


def _terminate(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def stop(*, quiet: bool = False) -> None:
    pid = _read_state().get("pid")
    if isinstance(pid, int) and _alive(pid):
        say(f"stopping Label Studio (pid {pid})")
        _terminate(pid)
    elif not quiet:
        say("Label Studio is not running")
    with contextlib.suppress(FileNotFoundError):
        state_path().unlink()


def exports(state: dict[str, object]) -> list[str]:
    names = ("LABEL_STUDIO_USERNAME", "LABEL_STUDIO_PASSWORD", "LABEL_STUDIO_USER_TOKEN")
    return [f"export SEJURY_LABEL_STUDIO_URL={base_url(int(str(state['port'])))}"] + [
        f"export {name}={state[name]}" for name in names
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("command", choices=["install", "start", "env", "status", "stop"])
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install()
        elif args.command == "start":
            print("\n".join(exports(start())))
        elif args.command == "env":
            state = running()
            if not state:
                raise Failure("Label Studio is not running: `start` starts it")
            print("\n".join(exports(state)))
        elif args.command == "status":
            state = running()
            say(f"running on {base_url(int(str(state['port'])))}" if state else "not running")
            return 0 if state else 1
        else:
            stop()
    except (Failure, subprocess.CalledProcessError, OSError) as error:
        say(f"error: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
