"""A patch's test evidence in a bundle (issue 27 item 7): ``tests_status`` (the harness's
lists of test names) and ``tests_note`` (why ``tests_pass`` is what it is), checked on
import, kept on the patch, exported only where there is some."""

import json

import pytest

from rubrics.bundle.base import BundleImportError
from rubrics.bundle.bugs import MAX_TESTS_STATUS, TESTS_STATUS_LISTS, TESTS_STATUS_SHAPE
from rubrics.bundle.read import METADATA_TOO_LONG
from rubrics.bundle.services import bundle_export, bundle_import
from rubrics.models import Dataset, Patch
from tests.rubrics.bundles import bug, patch, source

pytestmark = pytest.mark.django_db

STATUS = {
    "FAIL_TO_PASS": {"success": ["test_a"], "failure": ["test_b"]},
    "PASS_TO_PASS": {"success": ["test_c"], "failure": []},
}
SHAPE = TESTS_STATUS_SHAPE.format(lists=", ".join(TESTS_STATUS_LISTS))


def errors_of(*records: dict) -> list[tuple[int | None, str | None, str]]:
    with pytest.raises(BundleImportError) as caught:
        bundle_import(source=source(*records), dataset_name="Demo", actor=None)
    return [(e.line, e.field, e.message) for e in caught.value.errors]


def test_the_test_evidence_is_kept_and_exported_where_there_is_some() -> None:
    note = "not evaluated: infra_failure_ids of m.run-1.json (out_of_memory)"
    records = (
        bug("BUG-1"),
        patch("P-1", tests_pass=False, tests_status=STATUS),
        patch("P-2", tests_pass=None, tests_note=note),
        patch("P-3", tests_pass=True),
    )
    bundle_import(source=source(*records), dataset_name="Demo", actor=None)
    stored = {p.key: (p.tests_status, p.tests_note) for p in Patch.objects.all()}
    assert stored == {"P-1": (STATUS, ""), "P-2": (None, note), "P-3": (None, "")}
    exported = [json.loads(line) for line in bundle_export(dataset=Dataset.objects.get())]
    patches = {r["key"]: r for r in exported if r["kind"] == "patch"}
    assert patches["P-1"]["tests_status"] == STATUS
    assert patches["P-2"]["tests_note"] == note
    assert "tests_status" not in patches["P-3"]
    assert "tests_note" not in patches["P-3"]
    bundle_import(source=source(*exported), dataset_name="Again", actor=None)
    again = {
        p.key: (p.tests_status, p.tests_note) for p in Patch.objects.filter(dataset__name="Again")
    }
    assert again == stored


@pytest.mark.parametrize(
    "status",
    [
        {"FAIL_TO_PASS": ["test_a"]},
        {"FAIL_TO_PASS": {"success": "test_a"}},
        {"FAIL_TO_PASS": {"passed": ["test_a"]}},
        {"FAIL_TO_PASS": {"success": [1]}},
        {"FLAKY": {"success": []}},
        {"left_out": {"PASS_TO_PASS.success": "many"}},
    ],
)
def test_a_tests_status_not_of_the_harness_shape_is_refused(status: dict) -> None:
    assert errors_of(bug("BUG-1"), patch("P-1", tests_status=status)) == [
        (2, "tests_status", SHAPE)
    ]


def test_a_tests_status_over_the_limit_is_refused() -> None:
    names = [f"test_{n:06d}" for n in range(MAX_TESTS_STATUS // 10)]
    status = {"PASS_TO_PASS": {"success": names, "failure": []}}
    message = METADATA_TOO_LONG.format(limit=MAX_TESTS_STATUS)
    assert errors_of(bug("BUG-1"), patch("P-1", tests_status=status)) == [
        (2, "tests_status", message)
    ]
