"""``{% test_evidence patch %}``: the test evidence behind a patch's ``tests_pass``.

What the SWE-bench harness kept of the patch's test run (``Patch.tests_status``: each list of
tests, FAIL_TO_PASS and PASS_TO_PASS, its passing and failing names) and why ``tests_pass``
is null or failing (``Patch.tests_note``), as a compact block: a row per list with how many
of its tests pass and the failing ones named, the passing ones folded away. Shown to leads
and reviewers (the patch page, a verdict's page); never to an annotator, whose pages are
built from their assignments alone. A judge sees it only through a written judge whose
template names the ``test_evidence`` block (``judging.runs.cases.test_evidence_text``).
"""

from dataclasses import dataclass, field
from typing import Any

from django import template

from rubrics.models import Patch

register = template.Library()

SHOWN = 50  # test names shown of one list before "and N more"
LISTS = (
    ("FAIL_TO_PASS", "failed before the fix; must pass with it"),
    ("PASS_TO_PASS", "passed before; must still pass"),
    ("FAIL_TO_FAIL", "failed before and after the fix"),
    ("PASS_TO_FAIL", "passed before, fail after the fix"),
)


@dataclass
class EvidenceList:
    name: str
    meaning: str
    passing: list[str] = field(default_factory=list)
    failing: list[str] = field(default_factory=list)
    passed: int = 0
    failed: int = 0
    passing_more: int = 0
    failing_more: int = 0
    names_left_out: bool = False  # a list too long to keep: only its length is known

    @property
    def total(self) -> int:
        return self.passed + self.failed


def _names(tests: Any) -> list[str]:
    return [str(name) for name in tests] if isinstance(tests, list) else []


def evidence_lists(status: Any) -> list[EvidenceList]:
    """The lists of a ``tests_status`` that name a test, in the harness's order."""
    if not isinstance(status, dict):
        return []
    given = status.get("left_out")
    left_out: dict[str, Any] = given if isinstance(given, dict) else {}
    found = []
    for name, meaning in LISTS:
        lists = status.get(name)
        if not isinstance(lists, dict):
            continue
        passing, failing = _names(lists.get("success")), _names(lists.get("failure"))
        passed = left_out.get(f"{name}.success", len(passing))
        failed = left_out.get(f"{name}.failure", len(failing))
        if not passed + failed:
            continue
        found.append(
            EvidenceList(
                name=name,
                meaning=meaning,
                passing=passing[:SHOWN],
                failing=failing[:SHOWN],
                passed=passed,
                failed=failed,
                passing_more=max(0, len(passing) - SHOWN),
                failing_more=max(0, len(failing) - SHOWN),
                names_left_out=any(key.startswith(f"{name}.") for key in left_out),
            )
        )
    return found


@register.inclusion_tag("components/_test_evidence.html")
def test_evidence(patch: Patch) -> dict[str, Any]:
    lists = evidence_lists(patch.tests_status)
    return {
        "shown": bool(lists or patch.tests_note or patch.tests_status is not None),
        "tests_pass": patch.tests_pass,
        "note": patch.tests_note,
        "lists": lists,
        "recorded": patch.tests_status is not None,
    }
