"""The offline heuristic's ``judge.rejection_theme``: a keyword rule over the justification,
failed rubric requirements first, its rationale marked as not an LLM's."""

import pytest

from sejury_web.llm.offline import (
    BAD_INPUT,
    MISSING_INPUT,
    PREFIX,
    OfflineUnsupported,
    offline_answer,
    offline_purposes,
)

PURPOSE = "judge.rejection_theme"
BUG = {"key": "B-1", "title": "f returns 1", "description": "f() must return 2."}


def theme(justification: str, failed: list[dict[str, object]] | None = None) -> dict[str, str]:
    inputs = {
        "bug": BUG,
        "candidate_diff": "",
        "justification": justification,
        "strategy": "rubric",
        "failed_requirements": failed or [],
    }
    return offline_answer(purpose=PURPOSE, inputs=inputs)


def test_it_is_a_supported_purpose() -> None:
    assert PURPOSE in offline_purposes()


def test_failed_requirements_come_first_whatever_the_words() -> None:
    failed = [{"index": 2, "title": "Keep the check", "reason": "it is gone"}]
    answer = theme("It masks the symptom and breaks the API.", failed)
    assert answer["theme"] == "violates_requirement"
    assert answer["rationale"] == (
        f"{PREFIX}Theme violates_requirement: the rubric judge marked requirement(s) 2 as failed."
    )


@pytest.mark.parametrize(
    ("justification", "expected", "word"),
    [
        ("The patch fixes the symptom, not the ROOT CAUSE.", "root_cause", "root cause"),
        ("It only masks the crash with a try/except.", "root_cause", "mask"),
        ("A workaround in the test data.", "root_cause", "workaround"),
        ("It suppresses the sanitizer error.", "root_cause", "suppress"),
        ("The fix is incomplete.", "incomplete", "incomplete"),
        ("It is applied partially: not all callers change.", "incomplete", "partial"),
        ("Only some of the call sites are fixed.", "incomplete", "only some"),
        ("It breaks the public API.", "new_issues", "break"),
        ("This introduces a regression in parsing.", "new_issues", "regress"),
        ("A new bug: the loop never ends.", "new_issues", "new bug"),
        ("It does not follow the rubric.", "violates_requirement", "rubric"),
        ("Requirement 3 says to use RAII.", "violates_requirement", "requirement"),
        ("Looks wrong to me.", "other", ""),
        ("", "other", ""),
    ],
)
def test_the_first_theme_with_a_word_in_the_justification(
    justification: str, expected: str, word: str
) -> None:
    answer = theme(justification)
    assert answer["theme"] == expected
    assert answer["rationale"].startswith(PREFIX)
    if word:
        assert f"“{word}”" in answer["rationale"]


def test_words_match_whole_unless_they_are_stems() -> None:
    # "not all" is a phrase, not the start of "not allowed"; "partial" is a stem.
    assert theme("Such a change is not allowed here.")["theme"] == "other"
    assert theme("It is partially done.")["theme"] == "incomplete"
    assert theme("Nothing unbreakable here.")["theme"] == "other"


def test_the_offline_marker_of_a_justification_is_not_read() -> None:
    # The marker says "not an LLM": none of its words may decide a theme.
    assert theme(f"{PREFIX}INVALID: the patch is empty.")["theme"] == "other"


def test_its_inputs_are_checked() -> None:
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(purpose=PURPOSE, inputs={"bug": BUG, "failed_requirements": []})
    assert str(error.value) == MISSING_INPUT.format(purpose=PURPOSE, key="justification")
    with pytest.raises(OfflineUnsupported) as error:
        offline_answer(
            purpose=PURPOSE,
            inputs={"bug": BUG, "justification": "x", "failed_requirements": ["req 1"]},
        )
    assert str(error.value) == BAD_INPUT.format(
        purpose=PURPOSE, key="failed_requirements", expected="objects"
    )
