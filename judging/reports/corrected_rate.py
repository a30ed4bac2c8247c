"""The share of each source's test-passing candidates a judge calls valid, and that share
corrected for the judge's errors (Rogan and Gladen, 1978). Pure: plain values, no ORM.

valid@k takes a candidate's validity from the human consensus, else from a run's verdict, so
on a benchmark where humans labelled a few hundred of thousands of patches most of it is the
judge's word. The judge's errors are measured on the labelled patches; if they are the same
on the unlabelled ones, the share the judge calls valid, ``judged``, is

    judged = Se · p + (1 − Sp) · (1 − p)

where p is the true share, Se the judge's sensitivity (VALID is the positive class: the
share of the consensus' VALID patches the judge calls VALID) and Sp its specificity (of the
consensus' INVALID patches, the share it calls INVALID). Solved for p:

    corrected = (judged + Sp − 1) / (Se + Sp − 1)

**Clipping.** Estimated Se and Sp can put ``corrected`` below 0 or above 1 (a judge that
calls more patches valid than its estimated false-positive rate explains); it is then
clipped to [0, 1], and the row says it was (``clipped``). Each bootstrap replicate is
clipped the same way, so an interval can end at 0 or 1.

**Youden's J.** The denominator Se + Sp − 1 is Youden's J: 0 for a judge whose verdicts
carry no information on validity (it says VALID as often whatever the truth), 1 for a
perfect judge. Every error of ``judged`` and of Se and Sp is multiplied by about 1 / J: below
``YOUDEN_MIN`` = 0.2, a two-point error in the judged share is a ten-point error in the
corrected one, and small changes in the few labels Se and Sp rest on swing it from 0 to 1.
The row then carries a warning (as it does when J's interval reaches 0), and at J ≤ 0 the
corrected share is undefined: the judge is no better than a coin, nothing can be corrected.

**Which patches.** ``judged`` is over the source's test-passing candidates with a verdict of
the run (a candidate that fails its tests counts in no valid@k, whatever its validity).
Se and Sp are measured on the test-passing candidates of **every** source that have both a
consensus and a verdict, leaving out the run's calibration patches (its team was chosen on
them, so its errors there are smaller than elsewhere, as the agreement figures leave them
out): per source, labels are too few for two proportions each (a benchmark of dozens of
tools labels a handful of each), so the correction assumes the judge errs at the same rates
on every source's patches. Labels chosen for the judge's uncertainty (routing sends the least
certain verdicts to humans) measure its errors where it errs most: Se and Sp are then too
low and the correction too strong.

**Intervals.** One bootstrap (``resampling.Replicates``) over the test-passing candidates
with a verdict, labelled or not: each replicate draws them with replacement, and the
labelled ones it drew give that replicate's Se and Sp while all it drew give its judged
shares, so the labels and the judged patches are resampled together, as the data was drawn.
A replicate whose Se, Sp or J is undefined (or J ≤ 0) is left out of the percentile
interval.
"""

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from judging.models import Label
from judging.reports.figures import Figure, Sampling
from judging.reports.judges import RunVerdicts
from judging.reports.resampling import Replicates
from judging.reports.scope import Scope
from judging.reports.valid_at_k import NO_SOURCE

YOUDEN_MIN = 0.2
WEAK_JUDGE = (
    "Youden's J (sensitivity + specificity − 1) is {j}, below {minimum}: the correction"
    " divides by it, so every error of the judged share and of the few labels behind"
    " sensitivity and specificity is multiplied by about {factor}; the corrected share means"
    " little."
)
CHANCE_JUDGE = (
    "Youden's J (sensitivity + specificity − 1) is {j}: the judge's verdicts are no better"
    " than chance on the labelled patches, so its share cannot be corrected."
)
J_REACHES_ZERO = (
    "Youden's J's interval reaches {low}: the judge may be no better than chance, and the"
    " corrected share's interval is unreliable."
)
NO_VALID_LABELLED = "No labelled test-passing patch is VALID by the consensus: sensitivity unknown."
NO_INVALID_LABELLED = (
    "No labelled test-passing patch is INVALID by the consensus: specificity unknown."
)


@dataclasses.dataclass(frozen=True)
class CorrectedRate:
    """One source's share of test-passing candidates the judge calls VALID, corrected."""

    source: str  # "(no source)" for patches without one
    n_judged: int  # test-passing candidates of the source with a verdict of the run
    judged: Figure  # the share of them the run calls VALID
    corrected: Figure  # Rogan–Gladen, clipped to [0, 1]; None when Se, Sp or J > 0 is not
    clipped: str  # "" or "0" / "1": the bound the corrected share was clipped to
    # Measured on every source's labelled test-passing patches (the same in every row):
    sensitivity: Figure  # n: labelled patches VALID by the consensus
    specificity: Figure  # n: labelled patches INVALID by the consensus
    youden: Figure  # Se + Sp − 1
    n_labelled: int  # the labelled patches Se and Sp rest on
    warnings: tuple[str, ...]  # why the corrected share means little, if it does


def rogan_gladen(judged: np.ndarray, se: np.ndarray, sp: np.ndarray) -> np.ndarray:
    """(judged + Sp − 1) / (Se + Sp − 1), clipped to [0, 1], elementwise; nan where any is
    nan or Se + Sp − 1 ≤ 0 (a judge no better than chance corrects nothing)."""
    judged, se, sp = (np.asarray(values, np.float64) for values in (judged, se, sp))
    youden = se + sp - 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = (judged + sp - 1.0) / youden
    return np.where(youden > 0, np.clip(raw, 0.0, 1.0), np.nan)


def corrected_valid_rate(
    scope: Scope,
    candidates: Iterable[tuple[int, int, str, bool | None]],
    run: RunVerdicts | None,
    *,
    sampling: Sampling | None = None,
) -> list[CorrectedRate]:
    """Every source's row, sorted by source: ``candidates`` are every patch in the report's
    scope (as valid@k takes them), the consensus is ``scope``'s, the verdicts and the
    calibration patches left out of Se and Sp are ``run``'s (the report's first run, as
    valid@k's). No run: no rows."""
    if run is None:
        return []
    consensus = scope.consensus_labels()
    return corrected_valid_rate_of(
        candidates, consensus, run.verdicts, excluded=run.excluded, sampling=sampling
    )


def corrected_valid_rate_of(
    candidates: Iterable[tuple[int, int, str, bool | None]],
    consensus: Mapping[int, str],
    verdicts: Mapping[int, str],
    *,
    excluded: Iterable[int] = (),
    sampling: Sampling | None = None,
) -> list[CorrectedRate]:
    """The rows from plain values: ``consensus`` and ``verdicts`` map a patch id to VALID or
    INVALID (others ignored); ``excluded`` patches count in the judged shares but not in Se
    and Sp. A source gets a row when one of its test-passing candidates has a verdict."""
    sampling = sampling or Sampling()
    left_out = set(excluded)
    decisive = (Label.VALID, Label.INVALID)
    rows = sorted(
        (patch_id, source or NO_SOURCE, verdict == Label.VALID)
        for patch_id, _, source, tests_pass in candidates
        if tests_pass is True and (verdict := verdicts.get(patch_id)) in decisive
    )
    if not rows:
        return []
    sources = sorted({source for _, source, _ in rows})
    size = len(sources)
    source_index = np.searchsorted(sources, [source for _, source, _ in rows])
    says_valid = np.array([valid for _, _, valid in rows], bool)
    truth = [
        consensus.get(patch_id) if patch_id not in left_out else None for patch_id, _, _ in rows
    ]
    truly_valid = np.array([label == Label.VALID for label in truth], bool)
    truly_invalid = np.array([label == Label.INVALID for label in truth], bool)
    # Columns: per source, judged then judged VALID; then the labelled patches VALID by the
    # consensus, of which the judge called VALID; INVALID, of which it called INVALID.
    everyone = np.arange(len(rows))
    hits = truly_valid & says_valid, truly_invalid & ~says_valid
    parts = [(everyone, source_index), (everyone[says_valid], size + source_index[says_valid])]
    for column, chosen in enumerate((truly_valid, hits[0], truly_invalid, hits[1])):
        parts.append((everyone[chosen], np.full(int(chosen.sum()), 2 * size + column)))
    replicates = Replicates.draw(len(rows), sampling)
    counts = replicates.tally(
        np.concatenate([patches for patches, _ in parts]),
        np.concatenate([columns for _, columns in parts]),
        2 * size + 4,
    )  # (R + 1, 2 · sources + 4)
    with np.errstate(invalid="ignore", divide="ignore"):
        judged = counts[:, size : 2 * size] / counts[:, :size]
        se = counts[:, 2 * size + 1] / counts[:, 2 * size]
        sp = counts[:, 2 * size + 3] / counts[:, 2 * size + 2]
    youden = se + sp - 1.0
    corrected = rogan_gladen(judged, se[:, None], sp[:, None])
    n_judged = counts[0, :size].astype(int).tolist()
    n_valid, n_invalid = int(counts[0, 2 * size]), int(counts[0, 2 * size + 2])
    judged_figures = replicates.figures(judged, n_judged)
    corrected_figures = replicates.figures(corrected, n_judged)
    se_figure, sp_figure, j_figure = replicates.figures(
        np.stack([se, sp, youden], axis=1),
        [n_valid, n_invalid, n_valid + n_invalid],
        items=[n_valid, n_invalid, min(n_valid, n_invalid)],
    )
    warnings = _warnings(n_valid, n_invalid, j_figure)
    result = []
    for column, source in enumerate(sources):
        raw = _raw(judged[0, column], se[0], sp[0])
        result.append(
            CorrectedRate(
                source=source,
                n_judged=n_judged[column],
                judged=judged_figures[column],
                corrected=corrected_figures[column],
                clipped="0" if raw < 0 else "1" if raw > 1 else "",
                sensitivity=se_figure,
                specificity=sp_figure,
                youden=j_figure,
                n_labelled=n_valid + n_invalid,
                warnings=warnings,
            )
        )
    return result


def _raw(judged: Any, se: Any, sp: Any) -> float:
    """The point estimate before clipping (nan where undefined)."""
    youden = float(se) + float(sp) - 1.0
    if not youden > 0:
        return float("nan")
    return (float(judged) + float(sp) - 1.0) / youden


def _warnings(n_valid: int, n_invalid: int, youden: Figure) -> tuple[str, ...]:
    """Why the corrected shares mean little, if they do: the same for every source."""
    if not n_valid:
        return (NO_VALID_LABELLED,)
    if not n_invalid:
        return (NO_INVALID_LABELLED,)
    j = youden.value
    assert j is not None  # both classes have labelled patches
    if j <= 0:
        return (CHANCE_JUDGE.format(j=f"{j:.2f}"),)
    if j < YOUDEN_MIN:
        return (WEAK_JUDGE.format(j=f"{j:.2f}", minimum=f"{YOUDEN_MIN:g}", factor=f"{1 / j:.0f}"),)
    if youden.ci is not None and youden.ci[0] <= 0:
        return (J_REACHES_ZERO.format(low=f"{youden.ci[0]:.2f}"),)
    return ()
