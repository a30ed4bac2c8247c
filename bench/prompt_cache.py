"""Benchmark: how much of each judging prompt a bug's candidates share, before and after the
candidate-last order (issue 26), and what a provider's prompt cache makes of it in a run.

Two datasets: le2019 (``../shared/datasets/defects4j-le2019/bundle.jsonl``: 100 bugs, 150
patches, short failing-test descriptions) and a synthetic SWE-bench-like set (``--instances``
issues, three candidate patches each; seeded; issue texts log-normal around 2,500
characters with a long tail to 40,000, reference fixes and candidates around 1,500
characters, about the sizes of ``bench/swebench_import.py``).

*Before* is the prompts of commit ``BEFORE`` (the strategies' modules as they were, read with
``git show`` into a throwaway package and run as they are); *after*, the working tree's.
Both are built from the same cases by a recording ``ask`` whose answers are valid against
each request's schema. A prompt is what OpenAI's cache sees: the output schema, then each
message's role and content; its tokens are counted as in the fake server, every 4 characters
one (``tests.sejury_web.llm.fake_servers.token_count``).

Printed, per dataset:

1. By strategy, the shared-prefix share: over the calls of every patch that has a sibling,
   the tokens of its messages it shares with a sibling's messages of the same call (the
   longest common prefix), over all its tokens; before, after, and after ÷ before. For s1b,
   s2 and s3 on le2019, the ratio to the issue's 73 % (its measure of the candidate-last
   order; it counted with a real tokenizer, so the figures differ a little).
2. Two personas of one patch (``roles``): the tokens their messages share, on average over
   every pair; the issue measured 60 before and 665 after on le2019.
3. The cached share of a run of the team ``TEAM``: the input tokens a prompt cache that
   works as OpenAI's (1,024-token minimum, 128-token steps, one cache per
   ``prompt_cache_key``, no eviction) serves, over all input tokens. Replayed on the fake's
   ``PrefixCache`` for the before prompts in import order without cache keys, and for the
   after prompts in the new queue order with their cache groups; then measured on a real run
   of the app (``run_create``, tasks run eagerly in this process) against the fake OpenAI
   server with ``--prefix-cache``, from the tokens the run recorded (``run_progress``), with
   what caching saved at ``MODEL``'s prices.

Run with ``.venv/bin/python bench/prompt_cache.py [--instances 100]``, in a throwaway
directory (SQLite database). Not a timed test: exit status 1 only if the after order shares
less than the before order anywhere, or the run's recorded cached share is not the replay's.
"""

import argparse
import hashlib
import importlib
import json
import logging
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sejury_web.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-insecure-key")
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"  # the run's tasks, in this process
OWN_VAR_DIR = "SEJURY_VAR_DIR" not in os.environ
os.environ.setdefault("SEJURY_VAR_DIR", tempfile.mkdtemp(prefix="sejury-bench-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bench.fake_server import FakeServer  # noqa: E402
from judging.runs.selectors import run_progress  # noqa: E402
from judging.runs.services import run_create  # noqa: E402
from judging.strategies import STRATEGIES, Case  # noqa: E402
from rubrics.models import Bug, Dataset, Patch  # noqa: E402
from sejury_web.llm import LLMRequest, LLMResponse, Provider  # noqa: E402
from tests.sejury_web.llm.fake_servers import (  # noqa: E402
    CHARS_PER_TOKEN,
    PrefixCache,
    openai_prompt,
    schema_answer,
    token_count,
)

BEFORE = "c72170d"  # the last commit with the candidate-in-the-middle prompts
LE2019 = ROOT.parent / "shared" / "datasets" / "defects4j-le2019" / "bundle.jsonl"
STRATEGY_NAMES = ["rubric", "s1a", "s1b", "s2", "s3", "s4", "s5", "roles"]
TEAM = ["s1b", "s2", "s3", "roles"]  # no bug step: before, queued in import order
MODEL = "gpt-4o-mini"
ISSUE_TARGET = 0.73  # the issue's shared-prefix share after, for s1b, s2 and s3 on le2019
ISSUE_ROLES = (60, 665)  # the issue's tokens two personas of a patch share, before and after
MODULES = ["base", "prompts", "registry", "two_step", "rubric", "s1", "s2", "s3", "s4", "s5"]


@dataclass(frozen=True)
class Item:
    """A patch and its bug, as the bench reads them."""

    bug_key: str
    bug_title: str
    bug_description: str
    reference: str
    patch_key: str
    diff: str

    def case(self) -> Case:
        return Case(
            bug_key=self.bug_key,
            bug_title=self.bug_title,
            bug_description=self.bug_description,
            candidate_diff=self.diff,
            reference_diff=self.reference,
            context="reference",
        )


# -- the datasets ------------------------------------------------------------------------------


def le2019_items() -> list[Item]:
    rows = [json.loads(line) for line in LE2019.read_text().splitlines() if line.strip()]
    bugs = {row["key"]: row for row in rows if row["kind"] == "bug"}
    return [
        Item(
            bug_key=bug["key"],
            bug_title=bug.get("title", ""),
            bug_description=bug["description"],
            reference=bug["reference_patch"],
            patch_key=row["key"],
            diff=row["diff"],
        )
        for row in rows
        if row["kind"] == "patch"
        for bug in [bugs[row["bug"]]]
    ]


WORDS = (  # noqa: SIM905 (a vocabulary: easier to read as one text)
    "the a when it returns value error raises request response field query model cache view "
    "user with without after before list dict none empty string unicode timezone migration "
    "admin form test expected actual fails instead should would because setting option"
).split()


def words(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
        out.append(line.capitalize() + ".")
        size += len(line) + 2
    return "\n".join(out)


def code_diff(rng: random.Random, path: str, chars: int) -> str:
    lines = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}"]
    size = 0
    while size < chars:
        start = rng.randint(10, 900)
        hunk = [f"@@ -{start},7 +{start},7 @@ def f{start}(self):"]
        for _ in range(3):
            hunk.append(f"     {rng.choice(WORDS)} = self.{rng.choice(WORDS)}({rng.choice(WORDS)})")
        hunk.append(f"-        return {rng.choice(WORDS)}.{rng.choice(WORDS)}()")
        hunk.append(
            f"+        return {rng.choice(WORDS)}.{rng.choice(WORDS)}({rng.randint(0, 99)})"
        )
        for _ in range(3):
            hunk.append(f"     # {words(rng, 40).splitlines()[0]}")
        lines += hunk
        size += sum(len(line) + 1 for line in hunk)
    return "\n".join(lines) + "\n"


def lognormal(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, rng.lognormvariate(math.log(median), sigma))))


def swebench_items(instances: int) -> list[Item]:
    rng = random.Random(26)  # noqa: S311 (synthetic data, not secrets)
    items = []
    for n in range(instances):
        key = f"proj{n % 12}__proj{n % 12}-{10000 + n}"
        statement = words(rng, lognormal(rng, 2500, 0.8, 300, 40_000))
        title = statement.splitlines()[0][:500]
        reference = code_diff(rng, f"src/mod{n}.py", lognormal(rng, 1500, 0.6, 300, 20_000))
        for model in range(3):
            diff = code_diff(rng, f"src/mod{n}.py", lognormal(rng, 1500, 0.6, 300, 20_000))
            items.append(Item(key, title, statement, reference, f"{key}-m{model}", diff))
    return items


# -- the prompts -------------------------------------------------------------------------------


def strategies_before(work: Path) -> dict[str, Any]:
    """The strategies of ``BEFORE``, imported from a throwaway package of their modules."""
    package = work / "strategies_before"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in [*MODULES, "roles"]:
        source = subprocess.run(
            ["git", "show", f"{BEFORE}:judging/strategies/{name}.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (package / f"{name}.py").write_text(source)
    sys.path.insert(0, str(work))
    for name in [*MODULES, "roles"]:
        importlib.import_module(f"strategies_before.{name}")
    return importlib.import_module("strategies_before.registry").STRATEGIES


def answer(request: LLMRequest) -> LLMResponse:
    """A recording ``ask``'s answer: valid against the request's schema."""
    value = schema_answer(request.schema)
    return LLMResponse(
        value, json.dumps(value), Provider.OPENAI, MODEL, 0, 0, 0, 0.0, None, False, 0
    )


def prompt_of(request: LLMRequest, *, schema: bool = True) -> str:
    """What OpenAI's cache sees of the request, as the fake server reads a body; without
    ``schema``, its messages alone."""
    messages = [{"role": m.role, "content": m.content} for m in request.messages]
    if not schema:
        return openai_prompt({"messages": messages})
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": request.schema, "strict": True},
    }
    return openai_prompt({"response_format": response_format, "messages": messages})


@dataclass(frozen=True)
class Call:
    step: str  # the call's place among its patch's calls: purpose and number
    prompt: str  # what the cache sees: the output schema, then the messages
    messages: str  # the messages alone: what the shared-prefix share measures
    group: str


def call_of(request: LLMRequest, n: int) -> Call:
    return Call(
        f"{request.purpose}#{n}",
        prompt_of(request),
        prompt_of(request, schema=False),
        request.cache_group,
    )


def calls_of(strategy: Any, item: Item, prepared: dict[str, Any] | None) -> list[Call]:
    """The per-patch calls the strategy sends for ``item`` (after its bug step)."""
    requests: list[LLMRequest] = []

    def ask(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        return answer(request)

    strategy.judge(item.case(), ask, prepared=prepared)
    return [call_of(request, n) for n, request in enumerate(requests)]


def bug_step(strategy: Any, item: Item) -> dict[str, Any] | None:
    """The answer of the strategy's bug-level step for ``item``'s bug (None if it has none)."""
    if not strategy.bug_step:
        return None
    return strategy.prepare(item.case(), answer).response.answer


def prompts_by_patch(
    strategies: dict[str, Any], names: Iterable[str], items: list[Item]
) -> dict[str, dict[str, list[Call]]]:
    """For each strategy, each patch's calls (bug steps left out: one per bug, no sibling)."""
    out: dict[str, dict[str, list[Call]]] = {}
    for name in names:
        strategy = strategies[name]
        prepared: dict[str, dict[str, Any] | None] = {}
        out[name] = {}
        for item in items:
            if item.bug_key not in prepared:
                prepared[item.bug_key] = bug_step(strategy, item)
            out[name][item.patch_key] = calls_of(strategy, item, prepared[item.bug_key])
    return out


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (a binary search over slices, at C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shared_share(items: list[Item], calls: dict[str, list[Call]]) -> float:
    """Of the tokens of the calls of patches with a sibling, the share a sibling's same call
    shares as its prefix."""
    siblings: dict[str, list[str]] = defaultdict(list)
    for item in items:
        siblings[item.bug_key].append(item.patch_key)
    shared = total = 0
    for keys in siblings.values():
        if len(keys) < 2:
            continue
        for key in keys:
            for n, call in enumerate(calls[key]):
                best = max(
                    common_prefix(call.messages, calls[other][n].messages)
                    for other in keys
                    if other != key
                )
                shared += best // CHARS_PER_TOKEN
                total += token_count(call.messages)
    return shared / total if total else float("nan")


def personas_shared(calls: dict[str, list[Call]]) -> float:
    """The tokens two personas' prompts of one patch share, on average over every pair."""
    pairs = []
    for patch_calls in calls.values():
        prompts = [call.messages for call in patch_calls]
        for i, first in enumerate(prompts):
            pairs += [common_prefix(first, other) // CHARS_PER_TOKEN for other in prompts[i + 1 :]]
    return sum(pairs) / len(pairs)


# -- a run -------------------------------------------------------------------------------------


def run_order(
    strategies: dict[str, Any], items: list[Item], *, bug_by_bug: bool
) -> list[tuple[str, str]]:
    """The calls of a run of ``TEAM`` in the order they reach the provider, as (cache key,
    prompt): patches in import order (before) or bug by bug, in import order of each bug's
    first patch (after; one patch first, then its siblings, as the tasks queue them)."""
    order = items
    if bug_by_bug:
        by_bug: dict[str, list[Item]] = defaultdict(list)
        for item in items:
            by_bug[item.bug_key].append(item)
        order = [item for patches in by_bug.values() for item in patches]
    sent = []
    for item in order:
        for name in TEAM:
            sent += [(call.group, call.prompt) for call in calls_of(strategies[name], item, None)]
    return sent


def replayed_share(sent: list[tuple[str, str]]) -> float:
    cache = PrefixCache()
    served = [cache.serve(key, prompt) for key, prompt in sent]
    return sum(cached for _, cached in served) / sum(total for total, _ in served)


def dataset_create(name: str, items: list[Item]) -> Dataset:
    nonce = uuid.uuid4().hex[:8]
    dataset = Dataset.objects.create(name=f"{name}-{nonce}", slug=f"{name}-{nonce}")
    bugs: dict[str, Bug] = {}
    for item in items:
        if item.bug_key not in bugs:
            bugs[item.bug_key] = Bug.objects.create(
                dataset=dataset,
                key=item.bug_key,
                title=item.bug_title,
                description=item.bug_description,
                language="java",
                reference_patch=item.reference,
            )
    Patch.objects.bulk_create(
        Patch(
            dataset=dataset,
            bug=bugs[item.bug_key],
            key=item.patch_key,
            diff=item.diff,
            diff_hash=hashlib.sha256(item.diff.encode()).hexdigest(),
        )
        for item in items
    )
    return dataset


def measured_run(dataset: Dataset) -> tuple[float | None, Decimal | None, Decimal | None]:
    run = run_create(
        actor=None,
        dataset=dataset,
        strategies=TEAM,
        context="reference",
        provider="openai",
        model=MODEL,
    )
    progress = run_progress(run)
    if progress.failed or progress.pending:
        raise SystemExit(f"FAIL: the run left {progress.failed} failed, {progress.pending} pending")
    return progress.cached_share, progress.cache_saved_usd, progress.cost_usd


# -- the report --------------------------------------------------------------------------------


def percent(value: float) -> str:
    return f"{100 * value:5.1f} %"


def report(
    label: str,
    items: list[Item],
    before: dict[str, Any],
    measure: Callable[[list[Item]], tuple[float | None, Decimal | None, Decimal | None]],
) -> list[str]:
    """Print the dataset's figures; return what failed."""
    failed = []
    bugs = len({item.bug_key for item in items})
    print(f"\n{label}: {len(items)} patches of {bugs} bugs")
    print(f"  {'strategy':<9}{'before':>9}{'after':>9}{'after/before':>14}")
    old = prompts_by_patch(before, STRATEGY_NAMES, items)
    new = prompts_by_patch(STRATEGIES, STRATEGY_NAMES, items)
    for name in STRATEGY_NAMES:
        was, now = shared_share(items, old[name]), shared_share(items, new[name])
        line = f"  {name:<9}{percent(was):>9}{percent(now):>9}{now / was:>13.2f}×"
        if label == "le2019" and name in ("s1b", "s2", "s3"):
            line += f"   issue: 73–75 % after; {now / ISSUE_TARGET:4.2f} of 73 %"
        print(line)
        if now < was:
            failed.append(f"{label} {name}: after shares less than before")
    was, now = personas_shared(old["roles"]), personas_shared(new["roles"])
    line = f"  two personas of one patch share {was:6.0f} tokens before, {now:6.0f} after"
    if label == "le2019":
        line += (
            f"   (issue: {ISSUE_ROLES[0]} and {ISSUE_ROLES[1]}; {now / ISSUE_ROLES[1]:4.2f} of 665)"
        )
    print(line)
    before_run = replayed_share(run_order(before, items, bug_by_bug=False))
    after_run = replayed_share(run_order(STRATEGIES, items, bug_by_bug=True))
    print(
        f"  a run of {','.join(TEAM)} on a cache as OpenAI's (replayed): "
        f"{percent(before_run)} of input tokens cached before, {percent(after_run)} after"
    )
    measured, saved, cost = measure(items)
    shown = "–" if measured is None else percent(measured)
    money = "unknown" if saved is None else f"${saved:.4f} of ${(cost or 0) + saved:.4f} uncached"
    print(
        f"  the same run through the app and the fake server (--prefix-cache): {shown} cached; "
        f"caching saved {money}, at {MODEL}'s prices"
    )
    if measured is None or abs(measured - after_run) > 0.02:
        failed.append(f"{label}: the run's recorded cached share is not the replay's")
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=100, help="SWE-bench-like issues")
    options = parser.parse_args()
    logging.getLogger("celery").setLevel(logging.WARNING)  # a line per eager task otherwise
    call_command("migrate", verbosity=0)
    work = Path(tempfile.mkdtemp(prefix="sejury-prompts-before-"))
    server = FakeServer(0.0, prefix_cache=True)
    try:
        before = strategies_before(work)
        settings.SEJURY_LLM = {
            **settings.SEJURY_LLM,
            "PROVIDER": "openai",
            "MODEL": MODEL,
            "OPENAI_API_KEY": "sk-bench",
            "OPENAI_BASE_URL": server.base_url,
            "LOCAL_FREE": False,  # the fake stands for OpenAI: priced
        }

        def measure(name: str) -> Callable[[list[Item]], Any]:
            return lambda items: measured_run(dataset_create(name, items))

        print(
            f"prompts before: {BEFORE}; after: the working tree. Tokens: 4 characters each. "
            f"Shared-prefix share: calls of patches with a sibling."
        )
        failed = []
        if LE2019.exists():
            failed += report("le2019", le2019_items(), before, measure("le2019"))
        else:
            print(f"\nle2019: skipped, {LE2019} is absent")
        swebench = f"SWE-bench-like ({options.instances} issues × 3 patches)"
        failed += report(
            swebench, swebench_items(options.instances), before, measure("swebench-like")
        )
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    if failed:
        print("FAIL: " + "; ".join(failed))
        sys.exit(1)
    print("PASS")
    if OWN_VAR_DIR:
        shutil.rmtree(settings.VAR_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
