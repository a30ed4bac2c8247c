"""A suggested revision as changes to take one by one: how it is compared with the current
revision, and what taking a change does to the editor (``rubrics.review.suggestions``)."""

from typing import Any

from rubrics.review.forms import EditorState
from rubrics.review.suggestions import change_is_taken, change_take, suggestion_changes

CURRENT: dict[str, Any] = {
    "root_cause": "f() returns 1.",
    "requirements": [
        {"title": "Fix f()", "detail": "return 2"},
        {"title": "Keep g()", "detail": "unchanged"},
        {"title": "Test it", "detail": "a test of f()"},
    ],
    "acceptable": ["Any fix of f()."],
    "unacceptable": ["Test-only patches."],
}


def suggested(**changes: Any) -> dict[str, Any]:
    return {**CURRENT, **changes}


def kinds(current: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c.part, c.kind, c.heading) for c in suggestion_changes(current, new)]


def test_an_unchanged_suggestion_has_no_change() -> None:
    assert suggestion_changes(CURRENT, suggested()) == []


def test_requirements_pair_by_title_so_a_removal_is_one_change() -> None:
    requirements = [CURRENT["requirements"][0], CURRENT["requirements"][2]]
    assert kinds(CURRENT, suggested(requirements=requirements)) == [
        ("requirements", "removed", "Requirement 2 removed")
    ]


def test_a_retitled_requirement_is_a_change_at_its_place() -> None:
    requirements = [dict(r) for r in CURRENT["requirements"]]
    requirements[1] = {"title": "Leave g() alone", "detail": "unchanged"}
    changes = suggestion_changes(CURRENT, suggested(requirements=requirements))
    assert [(c.kind, c.heading, c.position) for c in changes] == [("changed", "Requirement 2", 1)]
    assert changes[0].diff.changed


def test_every_part_and_the_indexes_in_order() -> None:
    new = suggested(
        root_cause="f() returns 1 for negative n.",
        requirements=[*CURRENT["requirements"], {"title": "Handle n < 0", "detail": "too"}],
        acceptable=["Any fix of f().", "A guard in the caller."],
        unacceptable=[],
    )
    changes = suggestion_changes(CURRENT, new)
    assert [(c.index, c.part, c.kind) for c in changes] == [
        (0, "root_cause", "changed"),
        (1, "requirements", "added"),
        (2, "acceptable", "added"),
        (3, "unacceptable", "removed"),
    ]


def test_taking_one_change_leaves_the_reviewers_other_edits_alone() -> None:
    new = suggested(
        requirements=[*CURRENT["requirements"], {"title": "Handle n < 0", "detail": "too"}],
        unacceptable=[],
    )
    added, removed = suggestion_changes(CURRENT, new)
    state = EditorState.from_structure(CURRENT)
    state.root_cause = "My own words."
    taken = change_take(state, added)
    assert taken.root_cause == "My own words."
    assert taken.requirements[-1] == {"title": "Handle n < 0", "detail": "too"}
    assert taken.unacceptable == ["Test-only patches."]
    assert change_is_taken(taken, added)
    assert not change_is_taken(taken, removed)
    # Taking it again changes nothing; the state it was taken into is untouched.
    assert change_take(taken, added) == taken
    assert len(state.requirements) == 3
    assert change_take(taken, removed).unacceptable == []


def test_a_changed_requirement_the_reviewer_edited_is_replaced_at_its_place() -> None:
    requirements = [dict(r) for r in CURRENT["requirements"]]
    requirements[0] = {"title": "Fix f()", "detail": "return 2 for every n"}
    (change,) = suggestion_changes(CURRENT, suggested(requirements=requirements))
    state = EditorState.from_structure(CURRENT)
    state.requirements[0] = {"title": "Fix f()", "detail": "my edit"}
    assert change_take(state, change).requirements[0] == requirements[0]


def test_a_free_form_rubric_is_one_change_of_its_text() -> None:
    (change,) = suggestion_changes({"text": "Old."}, {"text": "New."})
    state = EditorState.from_structure({"text": "Old."})
    assert change_take(state, change).text == "New."


def test_a_changed_requirement_whose_place_moved_is_appended_not_written_over_another() -> None:
    requirements = [dict(r) for r in CURRENT["requirements"]]
    requirements[2] = {"title": "Test it", "detail": "a test of f() for negative n"}
    (change,) = suggestion_changes(CURRENT, suggested(requirements=requirements))
    state = EditorState.from_structure(CURRENT)
    del state.requirements[0]  # the reviewer removed requirement 1: "Test it" is now 2nd
    state.requirements[1] = {"title": "Test it", "detail": "my own words"}
    taken = change_take(state, change)
    assert taken.requirements[:2] == state.requirements  # "Keep g()" is not written over
    assert taken.requirements[2] == requirements[2]
