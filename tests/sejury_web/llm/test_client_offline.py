"""The offline heuristic through the layer, and the log under concurrent writers."""

import threading
from decimal import Decimal

import pytest
from django.db import connection

from sejury_web.llm import OFFLINE_MARKER, LLMError, LLMRequest, Message, Provider, complete
from sejury_web.llm.models import LLMCall

from .helpers import SCORE_SCHEMA

REFERENCE = """\
diff --git a/src/count.py b/src/count.py
--- a/src/count.py
+++ b/src/count.py
@@ -1,4 +1,4 @@
 def count(items):
     n = len(items)
-    return n - 1
+    return n
"""


def judge_request(candidate: str, schema: dict[str, object] = SCORE_SCHEMA) -> LLMRequest:
    return LLMRequest(
        purpose="judge.s1b",
        messages=(Message("user", "Judge the candidate against the reference."),),
        schema=schema,
        inputs={
            "bug": {"key": "BUG-1", "description": "off by one"},
            "candidate_diff": candidate,
            "reference_diff": REFERENCE,
        },
    )


@pytest.mark.django_db
def test_offline_answers_are_marked_free_and_cached() -> None:
    response = complete(judge_request(REFERENCE))

    assert response.provider == Provider.OFFLINE
    assert response.is_offline
    assert response.marker == OFFLINE_MARKER
    assert response.answer["score"] == 100
    assert response.answer["reasoning"].startswith(f"[{OFFLINE_MARKER}]")
    assert response.cost_usd == Decimal(0)
    assert response.input_tokens == response.output_tokens == 0
    row = LLMCall.objects.get(pk=response.call_id)
    assert row.inputs["candidate_diff"] == REFERENCE
    assert row.author == "llm:offline/heuristic-v1"

    again = complete(judge_request(REFERENCE))
    assert again.from_cache
    assert again.call_id == response.call_id


@pytest.mark.django_db
def test_offline_answers_depend_on_the_inputs_not_only_the_messages() -> None:
    """Same prompt text, another candidate: the heuristic must not answer from the cache."""
    same = complete(judge_request(REFERENCE))
    other = complete(judge_request(""))

    assert not other.from_cache
    assert other.answer["score"] == 0
    assert same.call_id != other.call_id


@pytest.mark.django_db
def test_a_purpose_the_heuristic_cannot_answer_is_a_stored_error() -> None:
    request = LLMRequest(purpose="summarize.code", messages=(), schema=SCORE_SCHEMA)

    with pytest.raises(LLMError, match=r"cannot answer purpose 'summarize\.code'") as info:
        complete(request)

    row = LLMCall.objects.get(pk=info.value.call_id)
    assert row.status == LLMCall.Status.ERROR
    assert row.answer is None


@pytest.mark.django_db
def test_an_offline_answer_that_does_not_fit_the_callers_schema_is_an_error() -> None:
    schema = {**SCORE_SCHEMA, "required": ["score", "reasoning", "confidence"]}

    with pytest.raises(LLMError, match="confidence"):
        complete(judge_request(REFERENCE, schema=schema))


@pytest.mark.django_db(transaction=True)
def test_sixteen_threads_logging_at_once_never_see_a_locked_database() -> None:
    """The embedded default (SQLite in WAL with a busy timeout) under the issue's load."""
    errors: list[BaseException] = []
    per_thread = 15

    def work(thread: int) -> None:
        try:
            for index in range(per_thread):
                candidate = REFERENCE.replace(
                    "+    return n", f"+    return n + {thread * 1000 + index}"
                )
                complete(judge_request(candidate))
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(thread,)) for thread in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert LLMCall.objects.filter(status=LLMCall.Status.OK).count() == 16 * per_thread
