"""The offline rule of ``rubric.draft`` (``rubrics/review/offline.py``): a skeleton read off
the reference diff of the demo bundle's bugs."""

from sejury_web.llm.offline import PREFIX, offline_answer
from tests.offline_requests import GARBAGE, NOT_PROSE_HEADINGS, bug_inputs, demo_bundle


def test_draft_names_files_functions_and_conditions() -> None:
    bug = demo_bundle()[0]["java-paginate-1"]
    inputs = {
        "bug": bug_inputs(bug),
        "reference_diff": bug["reference_patch"],
        "variant": "templated",
    }
    draft = offline_answer(purpose="rubric.draft", inputs=inputs)
    assert "`src/main/java/org/acme/paging/Paginator.java`" in draft["root_cause"]
    assert "`pageCount()`" in draft["root_cause"]
    assert "`return (items.size() + pageSize - 1) / pageSize;`" in draft["root_cause"]
    first = draft["requirements"][0]
    # Clean text: the rubric's page says once that the offline heuristic wrote it.
    assert first["title"] == "Change `pageCount()` near line 21"
    texts = [draft["root_cause"], *draft["acceptable_solutions"], *draft["unacceptable_solutions"]]
    texts += [text for r in draft["requirements"] for text in (r["title"], r["detail"])]
    assert not [text for text in texts if "offline heuristic" in text]
    assert "replace `return items.size() / pageSize;` with" in first["detail"]
    assert any("Suppressing the error" in s for s in draft["unacceptable_solutions"])
    assert any("only tests" in s for s in draft["unacceptable_solutions"])


def test_free_form_draft_has_the_content_without_the_template_headings() -> None:
    bug = demo_bundle()[0]["c-conf-1"]
    inputs = {"bug": bug_inputs(bug), "reference_diff": bug["reference_patch"]}
    templated = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "templated"})
    free = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "free_form"})
    text = free["rubric"]
    for line in text.splitlines():
        assert not line.startswith(("#", *NOT_PROSE_HEADINGS)), line
    for requirement in templated["requirements"]:
        assert requirement["detail"] in text
    assert "offline heuristic" not in text


def test_draft_of_an_unreadable_reference_says_so() -> None:
    bug = demo_bundle()[0]["py-slugify-1"]
    inputs = {"bug": bug_inputs(bug), "reference_diff": GARBAGE, "variant": "templated"}
    draft = offline_answer(purpose="rubric.draft", inputs=inputs)
    (requirement,) = draft["requirements"]
    assert "could not be read" in requirement["title"]
    assert "not a readable unified diff" in requirement["detail"]


def test_draft_of_a_test_only_reference_mentions_the_tests() -> None:
    _, patches = demo_bundle()
    (patch,) = [p for p in patches if p["key"] == "py-slugify-1-p3"]
    inputs = {"bug": {"key": "k", "description": ""}, "reference_diff": patch["diff"]}
    draft = offline_answer(purpose="rubric.draft", inputs={**inputs, "variant": "templated"})
    assert "changes no non-test code" in draft["requirements"][0]["title"]
    assert "`tests/test_slugify.py`" in draft["root_cause"]
    tests = offline_answer(purpose="judge.s5.tests", inputs=inputs)["tests"]
    assert [t["name"] for t in tests] == [PREFIX + "tests/test_slugify.py"]
