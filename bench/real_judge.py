"""Benchmark: how well a real local model judges real patches, and how fast.

N patches of ``../shared/datasets/defects4j-le2019`` (default 30), drawn with a fixed seed
among those with a human consensus, are judged by a team (default ``s1b``) on the model that
``make llm-local`` serves (or any OpenAI-compatible server: ``--base-url``, ``--model``). The
team's verdicts are compared with the consensus: accuracy, Cohen's κ, Gwet's AC1 and MCC
(``judging/agreement.py``), beside the two baselines a judge must beat: always the more
common label, and VALID at random at the consensus' VALID rate (the mean over 2,000 draws).
Then the seconds per call, and κ's ratio to the target.

The target is κ ≥ 0.40, "moderate" agreement (Landis and Koch), about what paper 000's
best teams of large models reach on this data. A 1.5B model on a CPU is not expected to
reach it: the point is to measure, honestly, what a small private model can do.

    make llm-local
    .venv/bin/python bench/real_judge.py [--n 30] [--seed 2019] [--team s1b]
        [--context reference] [--rule unanimous|majority] [--base-url URL] [--model NAME]

In a throwaway SQLite database by default (so every call goes to the model); ``--keep DIR``
keeps the database, and with it the LLMCall cache, in DIR, so that a second run is instant.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATASET = ROOT.parent / "shared" / "datasets" / "defects4j-le2019" / "bundle.jsonl"
TARGET_KAPPA = 0.40
RANDOM_DRAWS = 2000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30, help="patches to judge (30)")
    parser.add_argument("--seed", type=int, default=2019, help="the sample's seed (2019)")
    parser.add_argument("--team", default="s1b", help="strategies, comma-separated (s1b)")
    parser.add_argument(
        "--context", default="reference", help="what the rubric judge sees (reference)"
    )
    parser.add_argument(
        "--rule", default="unanimous", choices=["unanimous", "majority"], help="consensus rule"
    )
    parser.add_argument(
        "--base-url", default="", help="the server (default: make llm-local's, port 8091)"
    )
    parser.add_argument("--model", default="", help="the model (default: the server's first)")
    parser.add_argument("--keep", default="", help="a folder to keep the database (cache) in")
    return parser.parse_args()


def server_model(base_url: str) -> str:
    with urllib.request.urlopen(f"{base_url}/models", timeout=10) as answer:
        return str(json.loads(answer.read())["data"][0]["id"])


ARGS = parse_args()
BASE_URL = (
    ARGS.base_url or f"http://127.0.0.1:{os.environ.get('SEJURY_LLM_LOCAL_PORT') or 8091}/v1"
).rstrip("/")
MODEL = ARGS.model or server_model(BASE_URL)
os.environ.update(
    {
        "DJANGO_SETTINGS_MODULE": "sejury_web.settings",
        "SEJURY_VAR_DIR": ARGS.keep or tempfile.mkdtemp(prefix="sejury-real-judge-"),
        "SEJURY_LLM_PROVIDER": "openai",
        "OPENAI_BASE_URL": BASE_URL,
        "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "local",
        "SEJURY_LLM_MODEL": MODEL,
        "SEJURY_LLM_TIMEOUT": os.environ.get("SEJURY_LLM_TIMEOUT") or "600",
        "SEJURY_LLM_MAX_CONCURRENCY": "1",
        "LOG_LEVEL": "WARNING",
    }
)
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
os.environ.pop("DATABASE_URL", None)
Path(os.environ["SEJURY_VAR_DIR"]).mkdir(parents=True, exist_ok=True)

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from judging.agreement import binary_metrics, gwet_ac1  # noqa: E402
from judging.consensus.rules import dataset_consensus  # noqa: E402
from judging.models import JudgingRun  # noqa: E402
from judging.runs.selectors import run_left_out  # noqa: E402
from judging.runs.services import RunError, run_create  # noqa: E402
from rubrics.bundle.services import bundle_import  # noqa: E402
from rubrics.models import ConsensusRule  # noqa: E402
from rubrics.selectors import dataset_resolve  # noqa: E402
from sejury_web.celery import app as celery_app  # noqa: E402
from sejury_web.llm.config import loopback  # noqa: E402
from sejury_web.llm.models import LLMCall  # noqa: E402

VALID, INVALID = "VALID", "INVALID"
NAME = "defects4j-le2019 (real judge bench)"


def figures(predicted: list[str], actual: list[str]) -> dict[str, float | None]:
    metrics = binary_metrics(predicted, actual, positive=VALID)
    return {
        "accuracy": metrics.accuracy,
        "kappa": metrics.kappa,
        "ac1": gwet_ac1([predicted, actual]),
        "mcc": metrics.mcc,
    }


def random_baseline(actual: list[str], valid_rate: float, seed: int) -> dict[str, float | None]:
    """The mean of each figure over draws of VALID at ``valid_rate`` (None counted as 0)."""
    rng = random.Random(seed)  # noqa: S311 - a baseline, not a secret
    sums = {"accuracy": 0.0, "kappa": 0.0, "ac1": 0.0, "mcc": 0.0}
    for _ in range(RANDOM_DRAWS):
        guess = [VALID if rng.random() < valid_rate else INVALID for _ in actual]
        for name, value in figures(guess, actual).items():
            sums[name] += value or 0.0
    return {name: total / RANDOM_DRAWS for name, total in sums.items()}


def show(value: float | None) -> str:
    return "  —  " if value is None else f"{value:+.3f}" if value < 0 else f" {value:.3f}"


def main() -> None:
    if not DATASET.exists():
        sys.exit(f"{DATASET} is missing: this bench needs ../shared/datasets/defects4j-le2019")
    call_command("migrate", verbosity=0)
    dataset = dataset_resolve(NAME)
    if dataset is None:
        with DATASET.open("rb") as source:
            dataset = bundle_import(source=source, dataset_name=NAME, actor=None).dataset
    consensus = {
        patch_id: found.consensus
        for patch_id, found in dataset_consensus(dataset, rule=ConsensusRule(ARGS.rule)).items()
        if found.consensus in (VALID, INVALID)
    }
    eligible = sorted(consensus)
    sample = sorted(random.Random(ARGS.seed).sample(eligible, min(ARGS.n, len(eligible))))  # noqa: S311
    print(
        f"real judge: {MODEL} at {BASE_URL} ({'local' if loopback(BASE_URL) else 'remote'}), "
        f"team {ARGS.team}, context {ARGS.context}"
    )
    print(
        f"  {len(sample)} of the {len(eligible)} le2019 patches with a {ARGS.rule} consensus "
        f"(seed {ARGS.seed})"
    )
    calls_before = set(LLMCall.objects.values_list("id", flat=True))
    celery_app.conf.task_always_eager = True  # judged in this process, one call at a time
    started = time.monotonic()
    try:
        # Only the sampled patches that have what the team needs in the context (a golden or
        # draft rubric for --context golden|draft) are judged; the others are said below.
        run = run_create(
            actor=None,
            dataset=dataset,
            strategies=ARGS.team,
            context=ARGS.context,
            patches=dataset.patches.filter(pk__in=sample),
            provider="openai",
            model=MODEL,
            name=f"real judge bench: {MODEL}",
            only_ready=True,
        )
    except RunError as error:
        sys.exit(f"real judge: {error}")
    wall = time.monotonic() - started
    run.refresh_from_db()
    left_out = run_left_out(run)
    if left_out is not None:
        print(
            f"  {left_out.count} of the {left_out.total} sampled patches left out, since "
            f"{left_out.lacks}: the figures below are over the other "
            f"{left_out.total - left_out.count}"
        )
    judgments = list(run.judgments.select_related("patch"))
    judged = [j for j in judgments if j.verdict in (VALID, INVALID)]
    failed = len(judgments) - len(judged)
    predicted = [j.verdict for j in judged]
    actual = [consensus[j.patch_id] for j in judged]
    calls = LLMCall.objects.exclude(id__in=calls_before)
    made = list(calls.values_list("status", "latency_s", "input_tokens", "output_tokens"))
    ok = [row for row in made if row[0] == LLMCall.Status.OK]
    valid_rate = actual.count(VALID) / len(actual) if actual else 0.0
    majority = VALID if valid_rate > 0.5 else INVALID

    print(
        f"  run {run.pk} {run.status}: {len(judged)} judged, {failed} failed; the model said "
        f"VALID {predicted.count(VALID)}, INVALID {predicted.count(INVALID)}; the consensus "
        f"VALID {actual.count(VALID)}, INVALID {actual.count(INVALID)} "
        f"(VALID rate {valid_rate:.2f})"
    )
    rows = [
        (f"{MODEL} ({ARGS.team})", figures(predicted, actual) if judged else {}),
        (f"always {majority}", figures([majority] * len(actual), actual) if judged else {}),
        (
            f"VALID at random ({valid_rate:.2f})",
            random_baseline(actual, valid_rate, ARGS.seed) if judged else {},
        ),
    ]
    print(f"  {'judge':<44} accuracy   kappa     AC1     MCC")
    for label, values in rows:
        cells = "  ".join(show(values.get(name)) for name in ("accuracy", "kappa", "ac1", "mcc"))
        print(f"  {label:<44} {cells}")
    if ok:
        seconds = [row[1] for row in ok]
        tokens_in = sum(row[2] for row in ok)
        tokens_out = sum(row[3] for row in ok)
        print(
            f"  {len(made)} model calls ({len(made) - len(ok)} failed): "
            f"{sum(seconds) / len(ok):.1f} s per call (min {min(seconds):.1f}, max "
            f"{max(seconds):.1f}); {tokens_in / len(ok):.0f} input and "
            f"{tokens_out / len(ok):.0f} output tokens per call; "
            f"{tokens_out / sum(seconds):.1f} output tokens/s"
        )
    else:
        print(f"  {len(made)} model calls, none successful (answered from the cache: 0 calls)")
    print(f"  wall time {wall:.0f} s ({wall / max(1, len(judgments)):.1f} s per patch)")
    kappa = rows[0][1].get("kappa") if judged else None
    ratio = (kappa or 0.0) / TARGET_KAPPA
    print(f"  kappa {show(kappa).strip()} / target {TARGET_KAPPA:.2f} = ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
    sys.exit(0 if JudgingRun.objects.exists() else 1)
