"""The offline heuristic's ``rubric.revise``: suggestions read off the disagreements' labels."""

import copy
import dataclasses
import json
from typing import Any

import jsonschema
import pytest

from rubrics.review import offline
from rubrics.rubric_text import MAX_TEXT, structure_normalize
from sejury_web.llm import OFFLINE_MARKER, LLMRequest, Message, Provider, complete
from sejury_web.llm.offline import (
    BAD_INPUT,
    MISSING_INPUT,
    PREFIX,
    OfflineUnsupported,
    offline_answer,
    offline_purposes,
)
from sejury_web.llm.offline.patches import code_spans
from tests.helpers import DEMO_BUNDLE

PURPOSE = "rubric.revise"
SECTION = "## Offline suggestions (not an LLM)"

RUBRIC: dict[str, Any] = {
    "root_cause": "f() returns 1 instead of 2.",
    "requirements": [
        {"title": "Return two", "detail": "f() must return 2."},
        {"title": "Keep `f()` pure", "detail": "No global state."},
    ],
    "acceptable": ["Computing 2 from a constant."],
    "unacceptable": ["Changing only the tests."],
}
FREE_TEXT = "# What a fix must do\n\nf() must return 2.\n\n## Notes\n\nNone."


def disagreement(
    key: str,
    human: str,
    judge: str,
    *,
    failed: tuple[int, ...] = (),
    notes: tuple[str, ...] = (),
    themes: tuple[str, ...] = (),
) -> dict[str, Any]:
    checks = [{"index": i, "passed": False, "reason": "fails"} for i in failed]
    return {
        "patch_key": key,
        "diff": "",
        "diff_cut": "",
        "judge_verdict": judge,
        "human_label": human,
        "justification": "because",
        "requirements": [{"index": 99, "passed": True, "reason": "fine"}, *checks],
        "notes": list(notes),
        "themes": list(themes),
    }


def inputs(
    disagreements: list[dict[str, Any]], rubric: dict[str, Any] | None = None, **more: Any
) -> dict[str, Any]:
    rubric = RUBRIC if rubric is None else rubric
    return {
        "bug": {"key": "BUG-1", "description": "f() returns 1"},
        "reference_diff": "",
        "variant": "free_form" if "text" in rubric else "templated",
        "rubric": copy.deepcopy(rubric),
        "disagreements": disagreements,
        "left_out": 0,
        **more,
    }


def revise(disagreements: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    answer = offline_answer(purpose=PURPOSE, inputs=inputs(disagreements, **kw))
    assert answer["rationale"].startswith(PREFIX)
    if "rubric" in answer:
        structure_normalize({"text": answer["rubric"]}, templated=False)
    else:
        structure_normalize(as_rubric(answer), templated=True)
    return answer


def as_rubric(answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "root_cause": answer["root_cause"],
        "requirements": answer["requirements"],
        "acceptable": answer["acceptable_solutions"],
        "unacceptable": answer["unacceptable_solutions"],
    }


def added(before: str, after: str) -> str:
    """What ``after`` appends to ``before``, which it must keep word for word."""
    assert after.startswith(before)
    return after[len(before) :]


def test_the_limit_is_the_rubric_texts_and_the_purpose_is_supported() -> None:
    assert offline.MAX_TEXT == MAX_TEXT
    assert offline.SECTION == SECTION
    assert PURPOSE in offline_purposes()


def test_a_valid_patch_the_judge_rejected_flags_its_failed_requirement() -> None:
    answer = revise(
        [disagreement("a/1", "VALID", "INVALID", failed=(2,), notes=("", "1+1\nis  2", "x"))]
    )

    assert answer["root_cause"] == RUBRIC["root_cause"]
    assert answer["requirements"][0] == RUBRIC["requirements"][0]
    assert answer["requirements"][1]["title"] == RUBRIC["requirements"][1]["title"]
    note = added("No global state. ", answer["requirements"][1]["detail"])
    assert note == PREFIX + offline.REQUIREMENT_NOTE.format(key="a/1")
    assert '"a/1"' in note
    assert "review it" in note
    assert code_spans(note) == []  # the offline judge reads code spans as code to find
    assert answer["acceptable_solutions"][0] == RUBRIC["acceptable"][0]
    assert answer["acceptable_solutions"][1:] == [
        PREFIX + 'A fix like patch "a/1", which the humans judged valid and the rubric judge '
        'did not; a human noted: "1+1 is 2".'
    ]
    assert answer["unacceptable_solutions"] == RUBRIC["unacceptable"]
    assert 'patch "a/1" (humans VALID, judge INVALID)' in answer["rationale"]
    assert "requirement 2" in answer["rationale"]


def test_a_valid_patch_without_failed_requirements_becomes_an_acceptable_solution() -> None:
    answer = revise([disagreement("a/2", "VALID", "INVALID")])

    assert answer["requirements"] == RUBRIC["requirements"]
    assert answer["acceptable_solutions"] == [
        *RUBRIC["acceptable"],
        PREFIX + 'A fix like patch "a/2", which the humans judged valid and the rubric judge '
        "did not.",
    ]


def test_a_failed_requirement_that_is_not_in_the_rubric_is_skipped_and_said() -> None:
    answer = revise([disagreement("a/3", "VALID", "INVALID", failed=(7,))])

    assert answer["requirements"] == RUBRIC["requirements"]
    assert len(answer["acceptable_solutions"]) == 2
    assert "requirement(s) 7, not in the rubric" in answer["rationale"]


def test_an_invalid_patch_the_judge_let_through_becomes_an_unacceptable_solution() -> None:
    answer = revise(
        [
            disagreement(
                "b/1", "INVALID", "VALID", notes=("Only the test.",), themes=("Scope", "Other")
            ),
            disagreement("b/2", "invalid", "valid"),
        ]
    )

    assert answer["requirements"] == RUBRIC["requirements"]
    assert answer["acceptable_solutions"] == RUBRIC["acceptable"]
    assert answer["unacceptable_solutions"] == [
        *RUBRIC["unacceptable"],
        PREFIX + 'A patch like "b/1", which the humans judged invalid and the rubric let through; '
        'a human noted: "Only the test."; disagreement themes: Scope, Other.',
        PREFIX + 'A patch like "b/2", which the humans judged invalid and the rubric let through.',
    ]
    assert (
        'patch "b/1" (humans INVALID, judge VALID): an unacceptable solution'
        in (answer["rationale"])
    )


def test_agreeing_labels_change_nothing() -> None:
    answer = revise(
        [disagreement("c/1", "VALID", "VALID", failed=(1,)), disagreement("c/2", "", "INVALID")]
    )

    assert as_rubric(answer) == RUBRIC
    assert "no disagreement" in answer["rationale"]


def test_nothing_is_added_twice_and_revising_again_changes_nothing() -> None:
    same = disagreement("a/1", "VALID", "INVALID", failed=(1,))
    other = disagreement("a/2", "VALID", "INVALID", failed=(1, 1))
    invalid = disagreement("b/1", "INVALID", "VALID")

    answer = revise([same, same, other, invalid, invalid])

    detail = added("f() must return 2. ", answer["requirements"][0]["detail"])
    sentences = [PREFIX + offline.REQUIREMENT_NOTE.format(key=k) for k in ("a/1", "a/2")]
    assert detail == " ".join(sentences)  # one sentence per patch, each once
    assert len(answer["acceptable_solutions"]) == 3
    assert len(answer["unacceptable_solutions"]) == 2
    assert "nothing new" in answer["rationale"]

    again = revise([same, other, invalid], rubric=as_rubric(answer))
    assert as_rubric(again) == as_rubric(answer)


def test_the_answer_is_deterministic_and_the_inputs_are_not_changed() -> None:
    given = inputs(
        [
            disagreement("a/1", "VALID", "INVALID", failed=(2, 1), notes=("n",)),
            disagreement("b/1", "INVALID", "VALID", themes=("t",)),
        ],
        left_out=4,
    )
    before = json.dumps(given)

    first = offline_answer(purpose=PURPOSE, inputs=given)

    assert json.dumps(given) == before
    second = offline_answer(purpose=PURPOSE, inputs=json.loads(before))
    assert json.dumps(first) == json.dumps(second)
    assert "4 more disagreement(s) were not shown" in first["rationale"]


def test_every_added_text_is_marked_and_everything_else_is_kept_word_for_word() -> None:
    answer = revise(
        [
            disagreement("a/1", "VALID", "INVALID", failed=(1, 2), notes=("ok",)),
            disagreement("b/1", "INVALID", "VALID", notes=("no",), themes=("Scope",)),
        ]
    )

    for old, new in zip(RUBRIC["requirements"], answer["requirements"], strict=True):
        assert new["title"] == old["title"]
        assert added(old["detail"] + " ", new["detail"]).startswith(PREFIX)
    for key in ("acceptable", "unacceptable"):
        items = answer[f"{key}_solutions"]
        assert items[: len(RUBRIC[key])] == RUBRIC[key]
        assert len(items) == len(RUBRIC[key]) + 1
        assert items[-1].startswith(PREFIX)


def test_a_free_form_rubric_gets_one_section_of_marked_bullets() -> None:
    answer = revise(
        [
            disagreement("a/1", "VALID", "INVALID", failed=(2,), notes=("ok",)),
            disagreement("b/1", "INVALID", "VALID", themes=("Scope",)),
        ],
        rubric={"text": FREE_TEXT},
    )

    section = added(FREE_TEXT, answer["rubric"])
    bullets = section.strip().split("\n")[2:]
    assert section.startswith(f"\n\n{SECTION}\n\n")
    assert [line[:2] for line in bullets] == ["- "] * 3
    assert all(line[2:].startswith(PREFIX) for line in bullets)
    assert 'Requirement 2 of the judge\'s checks: humans judged patch "a/1"' in bullets[0]
    assert 'A fix like patch "a/1"' in bullets[1]
    assert 'a human noted: "ok"' in bullets[1]
    assert 'A patch like "b/1"' in bullets[2]
    assert "disagreement themes: Scope" in bullets[2]

    again = revise(
        [disagreement("b/1", "INVALID", "VALID", themes=("Scope",))],
        rubric={"text": answer["rubric"]},
    )
    assert again["rubric"] == answer["rubric"]


def test_a_later_suggestion_extends_the_section_where_it_is() -> None:
    first = revise([disagreement("b/1", "INVALID", "VALID")], rubric={"text": FREE_TEXT})
    moved = first["rubric"].strip() + "\n\n## Added later by a reviewer\n\nKeep this last.\n"

    second = revise([disagreement("b/2", "INVALID", "VALID")], rubric={"text": moved})

    bullet = f"- {unacceptable_item('b/2')}"
    old_bullet = f"- {unacceptable_item('b/1')}"
    assert second["rubric"] == moved.replace(old_bullet + "\n", f"{old_bullet}\n{bullet}\n")
    assert second["rubric"].count(SECTION) == 1


def unacceptable_item(key: str) -> str:
    return (
        PREFIX + f'A patch like "{key}", which the humans judged invalid and the rubric let '
        "through."
    )


@pytest.mark.parametrize("templated", [True, False])
def test_suggestions_that_would_pass_the_length_limit_are_left_out(templated: bool) -> None:
    filler = "x" * (MAX_TEXT - 800)
    rubric = {**RUBRIC, "root_cause": filler} if templated else {"text": filler}
    many = [disagreement(f"b/{n}", "INVALID", "VALID", notes=("y" * 300,)) for n in range(5)]

    answer = revise(many, rubric=rubric)  # normalizes

    assert (
        "suggestion(s) left out: the rubric would exceed 50,000 characters" in (answer["rationale"])
    )
    kept = answer["unacceptable_solutions"] if templated else answer["rubric"].split("\n")
    assert 0 < sum('A patch like "b/' in item for item in kept) < 5


def test_a_long_note_is_cut_on_one_line() -> None:
    answer = revise([disagreement("b/1", "INVALID", "VALID", notes=("z\n" * 400,))])

    item = answer["unacceptable_solutions"][-1]
    assert "\n" not in item
    quoted = ("z " * offline.NOTE_WIDTH)[: offline.NOTE_WIDTH - 1] + "…"
    assert f'a human noted: "{quoted}".' in item


def test_incomplete_or_mistyped_inputs_are_refused() -> None:
    good = inputs([disagreement("a/1", "VALID", "INVALID")])
    for key in ("bug", "rubric", "disagreements", "variant", "reference_diff"):
        with pytest.raises(OfflineUnsupported) as error:
            offline_answer(purpose=PURPOSE, inputs={k: v for k, v in good.items() if k != key})
        assert str(error.value) == MISSING_INPUT.format(purpose=PURPOSE, key=key)

    bad: list[tuple[dict[str, Any], str, str]] = [
        ({"rubric": {"text": "t"}}, "rubric.root_cause", "str"),
        ({"rubric": {**RUBRIC, "requirements": "x"}}, "rubric.requirements", "objects"),
        ({"rubric": {**RUBRIC, "acceptable": [1]}}, "rubric.acceptable", "strs"),
        ({"variant": "free_form"}, "rubric.text", "str"),
        ({"disagreements": ["x"]}, "disagreements", "objects"),
        ({"left_out": "3"}, "left_out", "int"),
    ]
    for change, key, expected in bad:
        with pytest.raises(OfflineUnsupported) as error:
            offline_answer(purpose=PURPOSE, inputs={**good, **change})
        assert str(error.value) == BAD_INPUT.format(purpose=PURPOSE, key=key, expected=expected)


def _demo_requests() -> list[tuple[dict[str, Any], str]]:
    """For each demo bug and variant: its offline draft revised with a disagreement on each
    of its patches, alternating the two kinds."""
    records = [json.loads(line) for line in DEMO_BUNDLE.read_text(encoding="utf-8").splitlines()]
    bugs = [r for r in records if r["kind"] == "bug"]
    requests = []
    for bug in bugs:
        base = {
            "bug": {"key": bug["key"], "description": bug["description"]},
            "reference_diff": bug["reference_patch"],
        }
        patches = [r for r in records if r["kind"] == "patch" and r["bug"] == bug["key"]]
        for variant in ("templated", "free_form"):
            draft = offline_answer(purpose="rubric.draft", inputs={**base, "variant": variant})
            rubric = {"text": draft["rubric"]} if variant == "free_form" else as_rubric(draft)
            disagreements = []
            for number, patch in enumerate(patches):
                judged = offline_answer(
                    purpose="judge.rubric",
                    inputs={**base, "candidate_diff": patch["diff"], "rubric": rubric},
                )
                human = "INVALID" if judged["verdict"] == "VALID" else "VALID"
                notes = ("a note",) if number % 2 else ()
                disagreements.append(
                    {
                        "patch_key": patch["key"],
                        "diff": patch["diff"],
                        "diff_cut": "",
                        "judge_verdict": judged["verdict"],
                        "human_label": human,
                        "justification": judged["justification"],
                        "requirements": judged["requirements"],
                        "notes": list(notes),
                        "themes": ["Other"] if number % 3 else [],
                    }
                )
            given = {**base, "variant": variant, "rubric": rubric}
            requests.append(({**given, "disagreements": disagreements, "left_out": 0}, variant))
    return requests


TEXT = {"type": "string", "minLength": 1}
SCHEMAS = {
    "templated": {
        "type": "object",
        "properties": {
            "root_cause": TEXT,
            "requirements": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"title": TEXT, "detail": TEXT},
                    "required": ["title", "detail"],
                    "additionalProperties": False,
                },
            },
            "acceptable_solutions": {"type": "array", "items": TEXT},
            "unacceptable_solutions": {"type": "array", "items": TEXT},
            "rationale": TEXT,
        },
        "required": [
            "root_cause",
            "requirements",
            "acceptable_solutions",
            "unacceptable_solutions",
            "rationale",
        ],
        "additionalProperties": False,
    },
    "free_form": {
        "type": "object",
        "properties": {"rubric": TEXT, "rationale": TEXT},
        "required": ["rubric", "rationale"],
        "additionalProperties": False,
    },
}


def test_the_demo_drafts_revised_match_the_schema_are_marked_and_normalize() -> None:
    """Revising an offline draft marks what it adds, and keeps the draft's clean text as it
    is (the draft is not marked: its page says once that the offline heuristic wrote it)."""
    requests = _demo_requests()
    assert {variant for _, variant in requests} == {"templated", "free_form"}
    for given, variant in requests:
        answer = offline_answer(purpose=PURPOSE, inputs=given)
        jsonschema.Draft202012Validator(SCHEMAS[variant]).validate(answer)
        if variant == "templated":
            rubric = given["rubric"]
            assert answer["root_cause"] == rubric["root_cause"]
            assert PREFIX not in rubric["root_cause"]
            assert answer["rationale"].startswith(PREFIX)
            added_items = answer["acceptable_solutions"][len(rubric["acceptable"]) :]
            added_items += answer["unacceptable_solutions"][len(rubric["unacceptable"]) :]
            assert added_items
            assert all(text.startswith(PREFIX) for text in added_items)
            structure_normalize(as_rubric(answer), templated=True)
            assert len(answer["acceptable_solutions"]) + len(answer["unacceptable_solutions"]) > (
                len(given["rubric"]["acceptable"]) + len(given["rubric"]["unacceptable"])
            )
        else:
            assert answer["rubric"].startswith(given["rubric"]["text"].strip())
            assert SECTION in answer["rubric"]
            structure_normalize({"text": answer["rubric"]}, templated=False)
        again = offline_answer(purpose=PURPOSE, inputs=json.loads(json.dumps(given)))
        assert json.dumps(again) == json.dumps(answer)


@pytest.mark.django_db
def test_through_the_llm_layer_the_answer_is_marked_offline() -> None:
    given = inputs([disagreement("a/1", "VALID", "INVALID", failed=(1,))])
    request = LLMRequest(
        purpose=PURPOSE,
        messages=(Message("user", "Revise the rubric."),),
        schema=SCHEMAS["templated"],
        inputs=given,
    )

    response = complete(request)

    assert response.provider == Provider.OFFLINE
    assert response.is_offline
    assert response.marker == OFFLINE_MARKER
    assert response.answer["rationale"].startswith(f"[{OFFLINE_MARKER}] ")
    assert response.answer == offline_answer(purpose=PURPOSE, inputs=given)
    assert complete(request).from_cache
    other = {**given, "disagreements": [disagreement("b/1", "INVALID", "VALID")]}
    assert not complete(dataclasses.replace(request, inputs=other)).from_cache
