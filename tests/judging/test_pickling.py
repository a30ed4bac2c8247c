"""The judging app's typed errors survive pickling (a Celery result, a worker process) with
their message said once and what they carry kept."""

import pickle
from typing import TypeVar, cast

import pytest

from judging.annotations.selectors import UNKNOWN_CAMPAIGN, CampaignNotFound
from judging.runs.selectors import UNKNOWN_RUN, RunNotFound, run_preflight
from judging.runs.services import RunNotReady
from tests.judging.factories import bug_with_patches, make_golden

E = TypeVar("E", bound=BaseException)


def copied(error: E) -> E:
    """``error`` pickled and read back."""
    return cast(E, pickle.loads(pickle.dumps(error)))  # noqa: S301 - our own bytes


def test_the_not_found_errors_keep_their_id_and_say_it_once() -> None:
    run = copied(RunNotFound(5))
    assert (type(run), str(run), run.run_id) == (RunNotFound, UNKNOWN_RUN.format(run=5), 5)
    campaign = copied(CampaignNotFound(7))
    assert (type(campaign), str(campaign), campaign.campaign_id) == (
        CampaignNotFound,
        UNKNOWN_CAMPAIGN.format(campaign=7),
        7,
    )


@pytest.mark.django_db
def test_a_refusal_keeps_its_pre_flight() -> None:
    bug = bug_with_patches(2)
    make_golden(bug_with_patches(1, dataset=bug.dataset))
    preflight = run_preflight(dataset=bug.dataset, strategies=["rubric"], context="golden")
    error = RunNotReady(preflight)

    again = copied(error)

    assert type(again) is RunNotReady
    assert str(again) == str(error)
    assert str(again).count("no run was started") == 1
    assert (again.preflight.total, again.preflight.ready) == (3, 1)
    assert again.preflight.summary() == preflight.summary()
