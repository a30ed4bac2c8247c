"""Start the web server and a Celery worker together; stop both when either stops."""

import math
import signal
import subprocess
import sys
import time
from argparse import ArgumentParser
from typing import Any, cast

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the development web server and a Celery worker together (make run)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        # Judging waits on the model, not the CPU: threads, 1.5 × as many as the LLM layer
        # lets through at once, so that some do database work while the others wait.
        default = math.ceil(1.5 * cast(int, settings.SEJURY_LLM["MAX_CONCURRENCY"]))
        parser.add_argument(
            "--concurrency",
            type=int,
            default=default,
            help=f"worker threads (default {default}: 1.5 × SEJURY_LLM_MAX_CONCURRENCY)",
        )

    def handle(self, *args: Any, host: str, port: int, concurrency: int, **options: Any) -> None:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "sejury_web", "worker",
             "--loglevel=INFO", "--pool=threads", f"--concurrency={concurrency}",
             "--hostname=worker@%h"]
        )  # fmt: skip
        manage = str(settings.BASE_DIR / "manage.py")
        web = subprocess.Popen(
            [sys.executable, manage, "runserver", f"{host}:{port}", "--noreload"]
        )
        children = [web, worker]

        def stop(*_: Any) -> None:
            for child in children:
                if child.poll() is None:
                    child.terminate()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self.stdout.write(
            self.style.SUCCESS(f"\nSE-Jury web is starting on http://{host}:{port}/")
            + "  (web server and Celery worker; Ctrl-C stops both)\n"
        )
        try:
            while all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            stop()
            for child in children:
                try:
                    child.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    child.kill()
        failed = [c for c in children if c.returncode not in (0, -signal.SIGTERM, -signal.SIGINT)]
        if failed:
            sys.exit(1)
