"""valid@k per agent (paper 004 §7): how often an agent's candidates pass the tests, and
how often they pass *and* are valid. Pure: computed from plain values, no ORM.

For each patch source (the agent or repair tool) and k in ``KS``, over the bugs with at
least k candidates from that source, each bug with n candidates of which c qualify
contributes the unbiased estimator of Chen et al. (2021), ``pass_at_k(n, c, k)``: the chance
that k candidates drawn without replacement include one that qualifies. The figure is its
mean over those bugs. pass@k counts a candidate whose ``tests_pass`` is true; valid@k
(``(pass ∧ valid)@k``) counts one that also is valid:

- by the human consensus where the patch has one;
- otherwise by the verdict of the run the lead picked (a verdict of a judgment done);
- otherwise its validity is unknown, and it counts as **not valid**: valid@k is then a lower
  bound, and each row says how many of its test-passing candidates were unknown.

A candidate whose ``tests_pass`` is None (never run) counts as not passing, and is counted
too. The validity of a candidate that fails its tests changes no figure, so the counts of
where validity came from are over test-passing candidates only. The run's calibration
patches are not left out here: the agreement figures leave them out because the run's team
was chosen on them, but here a verdict is only a label, used where humans gave none.

Intervals resample **bugs**, not patches: the estimator's unit is a bug (its n and c come
from all of that bug's candidates together), and the candidates of one bug are not
independent draws, so resampling patches would break bugs apart and mix their candidates
into other bugs' counts. One index matrix over the bugs in scope (``sampling.resamples``
rows of as many bugs, drawn with replacement by a ``Generator`` seeded with
``sampling.seed``) serves every row: a figure's replicate is the mean of its per-bug values
over the bugs the resample drew (a bug drawn twice counts twice; bugs without k candidates
from the source count not at all, so a replicate that drew none of them is undefined and
left out). Row 0 is the data. pass@k and valid@k of a row rest on the same draws. The
interval is the percentile interval of ``resampling.percentiles``, over the defined
replicates.
"""

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
from django.utils.safestring import SafeString

from judging.models import Label
from judging.reports.charts import Estimate, interval_chart
from judging.reports.figures import Figure, Sampling
from judging.reports.judges import NO_GROUP, RunVerdicts
from judging.reports.resampling import Replicates
from judging.reports.scope import Scope

KS = (1, 5, 10)
NO_SOURCE = NO_GROUP.format(key="source")  # "(no source)", as the source breakdown says
CHART_K = 1


class Candidate(NamedTuple):
    """One patch in the report's scope, labelled or not: ``values_list("id", "bug_id",
    "source", "tests_pass")`` rows fit as they are."""

    patch_id: int
    bug_id: int
    source: str
    tests_pass: bool | None


@dataclasses.dataclass(frozen=True)
class ValidAtK:
    """pass@k and (pass ∧ valid)@k of one source, over the bugs with ≥ k of its candidates."""

    source: str  # "(no source)" for patches without one
    k: int
    bugs: int  # bugs with at least k candidates from the source: the figures' n
    candidates: int  # their candidates from the source
    passing: int  # of which tests_pass is true
    tests_unknown: int  # of which tests_pass is None: counted as not passing
    pass_at_k: Figure  # the mean of pass_at_k(n, c_pass, k) over the bugs, with interval
    valid_at_k: Figure  # the same with c counting passing and valid candidates
    # Where the validity of the ``passing`` candidates came from (they add up to it):
    by_consensus: int  # the human consensus
    by_run: int  # no consensus: the run's verdict
    unknown: int  # neither: counted as not valid


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator of Chen et al. (2021): with n candidates of which c
    are correct, the chance that k drawn without replacement include a correct one,
    1 − C(n − c, k) / C(n, k). Computed as the Codex paper does, as a product that never
    forms the binomials: 1 − ∏_{i = n − c + 1}^{n} (1 − k / i); 1.0 when n − c < k."""
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise ValueError(f"pass_at_k: {name} must be an integer, not {value!r}")
    if k < 1:
        raise ValueError(f"pass_at_k: k must be at least 1, not {k}")
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: c must be between 0 and n = {n}, not {c}")
    if k > n:
        raise ValueError(f"pass_at_k: k = {k} is more than the n = {n} candidates")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def _per_bug(ns: np.ndarray, cs: np.ndarray, k: int) -> np.ndarray:
    """``pass_at_k`` of each bug, computed once per distinct (n, c): each pair as one number
    n·(max c + 1) + c (``np.unique`` of rows sorts them as structures, 10 times slower)."""
    ns, cs = np.asarray(ns, np.int64), np.asarray(cs, np.int64)
    base = int(cs.max(initial=0)) + 1
    codes, inverse = np.unique(ns * base + cs, return_inverse=True)
    values = [pass_at_k(code // base, code % base, k) for code in codes.tolist()]
    return np.array(values, dtype=np.float64)[np.asarray(inverse).reshape(-1)]


def valid_at_k(
    scope: Scope,
    patches: Iterable[tuple[int, int, str, bool | None]],
    run: RunVerdicts | None = None,
    *,
    sampling: Sampling | None = None,
    ks: Sequence[int] = KS,
) -> list[ValidAtK]:
    """Every (source, k) row of the report: ``patches`` is every patch in its scope, as
    (patch id, bug id, source, tests_pass); validity is the consensus of ``scope``,
    else ``run``'s verdict. ``sampling`` is the report's (default ``Sampling()``). See
    ``valid_at_k_of``."""
    consensus = scope.consensus_labels()
    return valid_at_k_of(
        patches,
        consensus,
        run.verdicts if run is not None else None,
        sampling=sampling,
        ks=ks,
    )


def valid_at_k_of(
    patches: Iterable[tuple[int, int, str, bool | None]],
    consensus: Mapping[int, str],
    verdicts: Mapping[int, str] | None = None,
    *,
    sampling: Sampling | None = None,
    ks: Sequence[int] = KS,
) -> list[ValidAtK]:
    """pass@k and (pass ∧ valid)@k per source and k, sorted by source then k.

    ``consensus`` and ``verdicts`` map a patch id to VALID or INVALID (others ignored; a
    consensus or verdict of a patch not in ``patches`` is ignored). A source gets a row for
    each k of ``ks`` that at least one bug has k candidates from it for. ``sampling``
    (default ``Sampling()``) gives the resamples, seed and level of the intervals."""
    sampling = sampling or Sampling()
    candidates = [Candidate(*row) for row in patches]
    bug_ids = sorted({candidate.bug_id for candidate in candidates})
    bug_index = {bug_id: index for index, bug_id in enumerate(bug_ids)}
    verdicts = verdicts or {}
    # Per source and bug: candidates, passing, passing and valid, then where the passing
    # ones' validity came from (by consensus, by run, unknown) and tests unknown. Counted in
    # plain ints, one flat list per source (a numpy element update per candidate costs more
    # than the whole count).
    width = 7
    flat: dict[str, list[int]] = {}
    valid, invalid = Label.VALID, Label.INVALID
    for candidate in candidates:
        source = candidate.source or NO_SOURCE
        row = flat.get(source)
        if row is None:
            row = flat[source] = [0] * (width * len(bug_ids))
        at = width * bug_index[candidate.bug_id]
        row[at] += 1
        tests_pass = candidate.tests_pass
        if tests_pass is None:
            row[at + 6] += 1
        if tests_pass is not True:
            continue
        row[at + 1] += 1
        label = consensus.get(candidate.patch_id)
        if label in (valid, invalid):
            row[at + 3] += 1
        else:
            label = verdicts.get(candidate.patch_id)
            if label in (valid, invalid):
                row[at + 4] += 1
            else:
                row[at + 5] += 1
        if label == valid:
            row[at + 2] += 1
    tallies: dict[str, np.ndarray] = {}
    origin: dict[str, np.ndarray] = {}  # per bug: by consensus, by run, unknown, tests unknown
    for source, row in flat.items():
        table = np.array(row, np.int64).reshape(len(bug_ids), width)
        tallies[source] = np.ascontiguousarray(table[:, :3])
        origin[source] = np.ascontiguousarray(table[:, 3:])

    # The figures' columns: per (source, k), each bug's pass and valid values where it has
    # k candidates (0 elsewhere), and whether it does.
    keys: list[tuple[str, int]] = []
    values: list[np.ndarray] = []
    eligible: list[np.ndarray] = []
    for source in sorted(tallies):
        counts = tallies[source]
        for k in sorted(set(ks)):
            chosen = counts[:, 0] >= k
            if not chosen.any():
                continue
            for column in (1, 2):  # pass, then pass ∧ valid
                value = np.zeros(len(bug_ids))
                value[chosen] = _per_bug(counts[chosen, 0], counts[chosen, column], k)
                values.append(value)
            eligible.append(chosen)
            keys.append((source, k))
    if not keys:
        return []

    replicates = Replicates.draw(len(bug_ids), sampling)
    weights = replicates.by_patch.astype(np.float64)  # (bugs, R + 1): how often drawn
    member = np.stack(eligible, axis=1).astype(np.float64)  # (bugs, rows)
    sums = weights.T @ np.stack(values, axis=1)  # (R + 1, 2 · rows)
    drawn = np.repeat(weights.T @ member, 2, axis=1)  # bugs drawn per column's row
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(drawn > 0, sums / drawn, np.nan)
    bugs = [int(chosen.sum()) for chosen in eligible]
    figures = replicates.figures(means, [n for n in bugs for _ in (0, 1)])

    rows = []
    for position, ((source, k), chosen) in enumerate(zip(keys, eligible, strict=True)):
        counts, labels = tallies[source][chosen], origin[source][chosen]
        rows.append(
            ValidAtK(
                source=source,
                k=k,
                bugs=bugs[position],
                candidates=int(counts[:, 0].sum()),
                passing=int(counts[:, 1].sum()),
                tests_unknown=int(labels[:, 3].sum()),
                pass_at_k=figures[2 * position],
                valid_at_k=figures[2 * position + 1],
                by_consensus=int(labels[:, 0].sum()),
                by_run=int(labels[:, 1].sum()),
                unknown=int(labels[:, 2].sum()),
            )
        )
    return rows


def _percent(value: float) -> str:
    return f"{value:.1%}"


def _bugs(n: int) -> str:
    return f"{n} bug" if n == 1 else f"{n} bugs"


def _spoken(estimate: Estimate) -> str:
    if estimate.value is None or math.isnan(estimate.value):
        return f"{estimate.label} undefined ({_bugs(estimate.n)})"
    interval = f"{_percent(estimate.ci[0])} to {_percent(estimate.ci[1])}, " if estimate.ci else ""
    return f"{estimate.label} {_percent(estimate.value)} ({interval}{_bugs(estimate.n)})"


def valid_at_k_chart(rows: Sequence[ValidAtK]) -> SafeString | None:
    """Per source, pass@1 beside valid@1 with their intervals (groups "pass@1" and
    "valid@1"); None when no source has a k = 1 row. The n column is bugs."""
    estimates = []
    for row in sorted((row for row in rows if row.k == CHART_K), key=lambda row: row.source):
        for group, figure in (
            (f"pass@{CHART_K}", row.pass_at_k),
            (f"valid@{CHART_K}", row.valid_at_k),
        ):
            estimates.append(
                Estimate(
                    label=f"{row.source}: {group}",
                    value=figure.value,
                    ci=figure.ci,
                    n=figure.n,
                    group=group,
                    note="small sample" if figure.small_sample else "",
                )
            )
    if not estimates:
        return None
    return interval_chart(
        estimates,
        lo=0.0,
        hi=1.0,
        x_label="pass@1 and valid@1, averaged over bugs",
        percent=True,
        title="pass@1 and valid@1 per patch source",
        desc=(
            "pass@1 (the tests pass) and valid@1 (the tests pass and the patch is valid, by"
            " the human consensus or else the run's verdict) of each patch source, averaged"
            " over its bugs, with bootstrap intervals over bugs: "
            + "; ".join(_spoken(estimate) for estimate in estimates)
            + "."
        ),
        chart_id="chart-valid-at-k",
    )
