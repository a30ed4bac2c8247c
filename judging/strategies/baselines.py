"""The match-based baselines of paper 000 (Table I): BLEU, ChrF and normalized edit
similarity between the candidate's and the reference's changed lines, each on 0–100.

No model is asked. The changed lines are the removed and added lines of every file,
stripped and joined by newlines (removed first, then added), so a patch that deletes what
the reference deletes and adds what it adds scores 100.
"""

from typing import Any

from sejury_web.diffs import DiffError
from sejury_web.similarity import bleu, changed_lines, chrf, edit_similarity

from .base import Ask, Case, Outcome, Strategy, StrategyError, require_reference
from .registry import register

PROMPT_VERSION = "match-v1"  # no prompt: the version of the rule above
UNREADABLE = "cannot read the {which}: {error}"  # DiffError says what is wrong


def changed_text(diff: str, which: str) -> str:
    try:
        lines = changed_lines(diff)
    except DiffError as error:
        raise StrategyError(UNREADABLE.format(which=which, error=error)) from None
    return "\n".join(lines.removed + lines.added)


class MatchBaseline(Strategy):
    uses_llm = False
    prompt_version = PROMPT_VERSION

    def measure(self, candidate: str, reference: str) -> float:
        raise NotImplementedError

    def judge(self, case: Case, ask: Ask, *, prepared: dict[str, Any] | None = None) -> Outcome:
        require_reference(case)
        candidate = changed_text(case.candidate_diff, "candidate patch")
        reference = changed_text(case.reference_diff, "reference fix")
        score = round(self.measure(candidate, reference), 2)
        reasoning = (
            f"{self.label} of the candidate's changed lines against the reference's: {score:.2f}. "
            "A match-based baseline, not a judgement of correctness."
        )
        return Outcome(score, reasoning)


@register
class Bleu(MatchBaseline):
    name = "bleu"
    label = "BLEU"
    description = (
        "Sentence BLEU (sacrebleu's defaults) of the changed lines against the reference's."
    )

    def measure(self, candidate: str, reference: str) -> float:
        return bleu(candidate, reference)


@register
class Chrf(MatchBaseline):
    name = "chrf"
    label = "ChrF"
    description = (
        "Sentence chrF (sacrebleu's defaults) of the changed lines against the reference's."
    )

    def measure(self, candidate: str, reference: str) -> float:
        return chrf(candidate, reference)


@register
class EditSimilarity(MatchBaseline):
    name = "edit"
    label = "Edit similarity"
    description = "1 − normalized Levenshtein distance of the changed lines, on 0–100."

    def measure(self, candidate: str, reference: str) -> float:
        return edit_similarity(candidate, reference)
