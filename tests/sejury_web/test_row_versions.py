"""``row_version_of``: the rows' versions in one query, compiled once per key, and still
asked each time (a change shows at once)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from rubrics.models import Patch
from sejury_web.row_versions import count_of, newest, row_version, row_version_of
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db


def test_a_version_asked_again_is_compiled_once_and_read_each_time() -> None:
    dataset = DatasetFactory(name="Versions", slug="versions")
    bug = BugFactory(dataset=dataset)
    PatchFactory(bug=bug, diff=make_diff(new="a = 1"))
    built = []

    def groups() -> list[list]:
        built.append(1)
        patches = Patch.objects.filter(dataset=dataset)
        return [[count_of(patches)], [newest(patches, "updated_at"), count_of(patches)]]

    key = ("test", dataset.pk)
    first = row_version_of(key, groups)
    assert first == (
        (1,),
        (*row_version(newest(Patch.objects.filter(dataset=dataset), "updated_at")), 1),
    )
    PatchFactory(bug=bug, diff=make_diff(new="a = 2"))
    with CaptureQueriesContext(connection) as queries:
        again = row_version_of(key, groups)
    assert len(queries) == 1
    assert again[0] == (2,)
    assert again[1][1] == 2
    assert built == [1]  # the parts built and compiled once
    assert row_version_of(("empty",), lambda: [[], []]) == ((), ())
