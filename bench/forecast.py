"""Benchmark: a new run's cost forecast at 10,000 patches.

The forecast (``judging.runs.forecast``) builds every request a run would send, with the
strategies' own prompt code, before anything is sent: the new-run form, ``judge --dry-run``
and the API's pre-flight wait for it, and ``run_create`` keeps it on the run. Here it runs on
P patches (3 per bug, every diff distinct) for the team rubric,s1b,s2,s3,s4,s5 in the
reference context, on gpt-5-mini:

- *cold*: the log has no call of this model, so no request's cache key is computed;
- *warm*: the log has answered every purpose of the team with this model before (one
  unrelated call each), so every request's key is computed and looked up in the log.

Printed: the calls, tokens and dollars (ordinary and batch) forecast, and each wall time
against the target (a few seconds: 5 s), with their ratio (≤ 1.0 is within target). Exit
status 1 on any FAIL.

Run with ``make bench`` or ``.venv/bin/python bench/forecast.py [--patches 10000]``, in a
throwaway SQLite database.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-"))
os.environ["OPENAI_API_KEY"] = "sk-bench-never-sent"  # a forecast sends nothing

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from bench.datasets import synthetic_dataset  # noqa: E402
from judging.runs.forecast import Forecast, dollars, run_forecast  # noqa: E402
from rubrics.models import Dataset  # noqa: E402
from sejury_web.llm.models import LLMCall  # noqa: E402

TEAM = ["rubric", "s1b", "s2", "s3", "s4", "s5"]
MODEL = "gpt-5-mini"
PATCHES_PER_BUG = 3
TARGET_S = 5.0


def dataset_create(patches: int) -> Dataset:
    return synthetic_dataset("bench-forecast", patches, per_bug=PATCHES_PER_BUG)


def timed(dataset: Dataset) -> tuple[Forecast, float]:
    started = time.perf_counter()
    forecast = run_forecast(
        dataset=dataset, team=TEAM, context="reference", provider="openai", model=MODEL
    )
    return forecast, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patches", type=int, default=10_000)
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    dataset = dataset_create(options.patches)
    cold = timed(dataset)
    # The log has answered each purpose with this model: every key is computed, looked up.
    for purpose in sorted(cold[0].outputs):
        LLMCall.objects.create(
            purpose=purpose,
            provider="openai",
            model=MODEL,
            request_hash=f"unrelated-{purpose}",
            status=LLMCall.Status.OK,
            answer={},
        )
    warm = timed(dataset)
    failed = False
    for label, (forecast, seconds) in (("cold", cold), ("warm", warm)):
        total = forecast.total
        ratio = seconds / TARGET_S
        verdict = "PASS" if ratio <= 1.0 else "FAIL"
        failed |= verdict == "FAIL"
        print(
            f"{label}: {forecast.patches:,} patches, {forecast.bugs:,} bugs, team "
            f"{','.join(TEAM)} on {MODEL}: {total.calls:,} calls ({total.cached_calls:,} "
            f"cached), {total.input_tokens:,} input and {total.output_tokens:,} output tokens, "
            f"{dollars(total.cost_usd)} ordinary, {dollars(total.batch_cost_usd)} batch; "
            f"forecast in {seconds:.2f} s (target {TARGET_S:g} s, ratio {ratio:.2f}) {verdict}"
        )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
