"""Keys sort for people (issue 16 item 15): ``Closure-2`` before ``Closure-10`` in every list
of bugs and patches, in the database's order on SQLite and PostgreSQL alike; and a bundle's bug
type is read from its metadata when the record has none."""

import pytest
from django.test import Client

from rubrics.bundle.bugs import metadata_bug_type
from rubrics.bundle.services import bundle_import
from rubrics.models import Bug, Patch, natural_sort_key
from tests.rubrics.bundles import bug, patch, source
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db

KEYS = ["Closure-10", "Closure-2", "Closure-1", "Chart-3", "Closure-2a", "closure-3"]
NATURAL = ["Chart-3", "Closure-1", "Closure-2", "Closure-2a", "Closure-10", "closure-3"]


def test_the_sort_key_pads_numbers() -> None:
    assert sorted(KEYS, key=natural_sort_key) == NATURAL
    assert natural_sort_key("a7-b12") == "a000000000007-b000000000012"


def test_bugs_and_patches_come_out_of_the_database_in_natural_order() -> None:
    dataset = DatasetFactory()
    for key in KEYS:
        PatchFactory(bug=BugFactory(dataset=dataset, key=key), key=f"{key}-p1")
    assert list(Bug.objects.filter(dataset=dataset).values_list("key", flat=True)) == NATURAL
    assert list(Patch.objects.filter(dataset=dataset).values_list("key", flat=True)) == [
        f"{key}-p1" for key in NATURAL
    ]


def test_bulk_writes_and_renames_keep_the_order() -> None:
    dataset = DatasetFactory()
    Bug.objects.bulk_create(
        Bug(dataset=dataset, key=key, description="d", reference_patch="") for key in KEYS
    )
    assert list(dataset.bugs.values_list("key", flat=True)) == NATURAL
    renamed = dataset.bugs.get(key="Closure-10")
    renamed.key = "Closure-0"
    Bug.objects.bulk_update([renamed], ["key"])
    assert dataset.bugs.values_list("key", flat=True)[1] == "Closure-0"
    renamed.key = "Closure-99"
    renamed.save(update_fields=["key"])
    assert list(dataset.bugs.values_list("key", flat=True))[-2] == "Closure-99"


def test_the_dataset_page_lists_bugs_in_natural_order(lead_client: Client) -> None:
    summary = bundle_import(
        source=source(*(bug(key) for key in KEYS), *(patch(f"{k}-p", k) for k in KEYS)),
        dataset_name="Natural",
        actor=None,
    )
    html = lead_client.get(summary.dataset.get_absolute_url()).content.decode()
    positions = [html.index(f">{key}</a>") for key in NATURAL]
    assert positions == sorted(positions)


def test_a_bug_type_is_read_from_the_metadata_when_the_record_has_none() -> None:
    records = [
        bug("A-1", bug_type="", metadata={"type": "null_pointer"}),
        bug("A-2", bug_type="off_by_one", metadata={"type": "ignored"}),
        bug("A-3", bug_type="", metadata={"project": "x"}),
    ]
    for record in records:
        if not record["bug_type"]:
            del record["bug_type"]
    dataset = bundle_import(source=source(*records), dataset_name="Types", actor=None).dataset
    assert dict(dataset.bugs.values_list("key", "bug_type")) == {
        "A-1": "null_pointer",
        "A-2": "off_by_one",
        "A-3": "",
    }
    # Importing the same file again changes nothing.
    again = bundle_import(source=source(*records), dataset_name="Types", actor=None)
    assert again.counts["bug"].updated == 0
    assert metadata_bug_type({"category": " logic "}) == "logic"
    assert metadata_bug_type({"type": 3}) == ""
    assert metadata_bug_type(None) == ""


def test_the_verdict_pages_previous_and_next_visit_keys_that_share_a_sort_key() -> None:
    """``P-1`` and ``P-01`` sort alike: the judgment breaks the tie, and none is skipped."""
    from judging.models import JudgingRun, PatchJudgment
    from judging.runs.verdicts import verdict_get

    dataset = DatasetFactory()
    bug = BugFactory(dataset=dataset, key="B")
    run = JudgingRun.objects.create(
        dataset=dataset, strategies=["s1b"], context="none", provider="offline", model="m"
    )
    judgments = [
        PatchJudgment.objects.create(run=run, patch=PatchFactory(bug=bug, key=key))
        for key in ("P-2", "P-01", "P-1", "P-10")
    ]
    start = min(judgments, key=lambda j: (j.patch.sort_key, j.pk))
    seen: list[int] = []
    current: int | None = start.pk
    while current is not None:
        seen.append(current)
        current = verdict_get(run=run, judgment_id=current).next_id
    assert len(seen) == 4
    assert [PatchJudgment.objects.get(pk=pk).patch.key for pk in seen] == [
        "P-01",
        "P-1",
        "P-2",
        "P-10",
    ]
    back: list[int] = []
    current = seen[-1]
    while current is not None:
        back.append(current)
        current = verdict_get(run=run, judgment_id=current).previous_id
    assert back == seen[::-1]
