"""The judge's disagreements with humans, brought back to the rubric that guided the judge
(paper 004 §8: disagreements lead to rubric refinement).

A *disagreement* is a patch whose human consensus differs from the rubric judge's verdict
(its latest result in a judging run, judged with a revision of this rubric). Judging owns
verdicts, labels and consensus, so it registers a ``DisagreementSource`` here from its
``AppConfig.ready()``; rubrics never imports judging.

A reviewer answers disagreements with a new revision or by upholding the rubric; either is a
``RubricEvent`` whose ``subjects`` are the keys it answered. A key names the judge's result
and the human label (``"<result id>:<label>"``), so a disagreement comes back when either
changes: re-judged with the new rubric and still wrong, or the humans' consensus moved.
"""

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Protocol

from rubrics.models import Rubric, RubricEvent
from rubrics.review.prompts import Disagreement, RequirementCheck

ANSWERING_KINDS = (RubricEvent.Kind.ANSWERED, RubricEvent.Kind.UPHELD)


def disagreement_key(result_id: int, human_label: str) -> str:
    return f"{result_id}:{human_label}"


@dataclass(frozen=True)
class HumanLabel:
    """One annotator's label, without their name: the rubric's reviewers need what was said,
    not who said it (only leads see who labelled what)."""

    label: str
    note: str


@dataclass(frozen=True)
class JudgeDisagreement:
    key: str  # disagreement_key(result id, human label)
    patch_id: int
    patch_key: str
    patch_url: str
    source: str
    tests_pass: bool | None
    diff: str
    judge_verdict: str  # the rubric judge's VALID or INVALID
    human_label: str  # the human consensus
    consensus_state: str  # how the consensus was reached: unanimous, majority, adjudicated
    justification: str  # the rubric judge's
    requirements: tuple[RequirementCheck, ...]  # the judge's pass/fail per requirement
    revision_number: int  # the revision of the rubric the judge read
    run_name: str
    verdict_url: str
    labels: tuple[HumanLabel, ...]
    themes: tuple[str, ...]  # the adjudication's disagreement themes, as their labels
    adjudication_note: str
    is_offline: bool  # the judge's result came from the offline model, not an LLM

    @property
    def failed(self) -> tuple[RequirementCheck, ...]:
        return tuple(check for check in self.requirements if not check.passed)

    def for_prompt(self) -> Disagreement:
        notes = [label.note for label in self.labels if label.note.strip()]
        if self.adjudication_note.strip():
            notes.append(self.adjudication_note)
        return Disagreement(
            patch_key=self.patch_key,
            diff=self.diff,
            judge_verdict=self.judge_verdict,
            human_label=self.human_label,
            justification=self.justification,
            requirements=self.requirements,
            notes=tuple(notes),
            themes=self.themes,
        )


class DisagreementSource(Protocol):
    def rubric_keys(self) -> dict[int, set[str]]:
        """The keys of every rubric's disagreements, answered or not, by rubric id."""
        ...

    def rubric_disagreements(self, *, rubric_id: int) -> list[JudgeDisagreement]:
        """The rubric's disagreements, answered or not, in patch key order."""
        ...


class NoDisagreements:
    """The source when no app judges patches."""

    def rubric_keys(self) -> dict[int, set[str]]:
        return {}

    def rubric_disagreements(self, *, rubric_id: int) -> list[JudgeDisagreement]:
        return []


_source: DisagreementSource = NoDisagreements()


def disagreement_source_register(source: DisagreementSource) -> None:
    global _source
    _source = source


def answered_keys(rubric_ids: Iterable[int]) -> dict[int, set[str]]:
    """The keys each rubric's reviewers answered, in one query."""
    answered: dict[int, set[str]] = {}
    events = RubricEvent.objects.filter(rubric_id__in=list(rubric_ids), kind__in=ANSWERING_KINDS)
    for rubric_id, subjects in events.values_list("rubric_id", "subjects"):
        answered.setdefault(rubric_id, set()).update(str(s) for s in subjects or [])
    return answered


def open_counts(rubric_ids: Collection[int] | None = None) -> dict[int, int]:
    """How many unanswered disagreements each rubric has (rubrics with none are left out),
    among ``rubric_ids`` or all; in a fixed number of queries."""
    keys = _source.rubric_keys()
    if rubric_ids is not None:
        keys = {rubric_id: k for rubric_id, k in keys.items() if rubric_id in rubric_ids}
    answered = answered_keys(keys)
    counts = {rubric_id: len(k - answered.get(rubric_id, set())) for rubric_id, k in keys.items()}
    return {rubric_id: n for rubric_id, n in counts.items() if n}


@dataclass(frozen=True)
class RubricDisagreements:
    open: list[JudgeDisagreement]
    answered: list[JudgeDisagreement]

    @property
    def open_keys(self) -> list[str]:
        return [d.key for d in self.open]


def rubric_disagreements(rubric: Rubric) -> RubricDisagreements:
    """The rubric's disagreements, unanswered first."""
    every = _source.rubric_disagreements(rubric_id=rubric.pk)
    answered = answered_keys([rubric.pk]).get(rubric.pk, set())
    return RubricDisagreements(
        open=[d for d in every if d.key not in answered],
        answered=[d for d in every if d.key in answered],
    )
