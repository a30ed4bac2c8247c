"""Labels naming existing users without the annotator role (issue 28): refused once per user,
and imported when the lead asks to give the role to those without any role, never to a lead
or a reviewer; the demo's made-up raters collide with no real dataset's names."""

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.http import HttpResponse
from django.test import Client, TestCase
from django.urls import reverse

from judging.management.commands.load_demo import REPORT_DEMO_SHAPE, Command
from judging.models import Annotation
from judging.reports.synthetic import RATER_PREFIX, Shape, synthetic_dataset
from rubrics.bundle.base import BundleImportError
from rubrics.bundle.services import bundle_import
from rubrics.models import BundleUpload
from sejury_web.models import AuditEvent
from sejury_web.roles import Role
from sejury_web.users import USER_ROLES
from tests.api.helpers import NDJSON, bearer, token_for
from tests.rubrics.bundles import bug, jsonl, label, patch, source

pytestmark = pytest.mark.django_db

RECORDS = (
    bug("BUG-1"),
    patch("P-1", "BUG-1"),
    patch("P-2", "BUG-1"),
    label("P-1", "rater-01"),  # line 4
    label("P-2", "Rater-01"),
    label("P-1", "rater-02"),
    label("P-2", "lead"),  # line 7
)


def role_less(name: str) -> User:
    """A user as the synthetic demo made them before: no role, no usable password."""
    return User.objects.create(username=name, password=make_password(None))


def refused(*, grant: bool = False) -> BundleImportError:
    with pytest.raises(BundleImportError) as excinfo:
        bundle_import(
            source=source(*RECORDS), dataset_name="D", actor=None, grant_annotator_role=grant
        )
    return excinfo.value


def test_an_existing_user_without_a_role_is_named_once_with_their_count() -> None:
    role_less("rater-01")
    with pytest.raises(BundleImportError) as excinfo:
        bundle_import(source=source(*RECORDS[:-1]), dataset_name="D", actor=None)
    error = excinfo.value
    assert [(e.line, e.field) for e in error.errors] == [(4, "annotator")]
    assert error.errors[0].message.startswith(
        "'rater-01' (named by 2 lines, this the first) is an existing user without the"
        " annotator role; import with the option to give the annotator role"
    )
    assert error.grantable == ("rater-01",)
    assert error.only_grantable
    assert not Annotation.objects.exists()


def test_the_grant_gives_the_role_audited_and_imports(lead: User) -> None:
    rater = role_less("rater-01")
    summary = bundle_import(
        source=source(*RECORDS[:-1]), dataset_name="D", actor=lead, grant_annotator_role=True
    )
    assert summary.counts["label"].created == 3
    assert set(rater.groups.values_list("name", flat=True)) == {Role.ANNOTATOR}
    event = AuditEvent.objects.get(action=USER_ROLES, target_id=rater.pk)
    assert event.actor == lead
    assert (event.detail["before"], event.detail["after"]) == ([], [Role.ANNOTATOR])
    assert event.detail["dataset"] == "D"
    assert summary.notes[-1] == (
        "Gave the annotator role to 1 existing user the file names as annotators: rater-01."
    )
    assert not rater.has_usable_password()  # still no login until a lead sets a password


def test_the_grant_never_makes_a_lead_an_annotator(lead: User) -> None:
    role_less("rater-01")
    error = refused()
    assert [(e.line, e.field) for e in error.errors] == [(4, "annotator"), (7, "annotator")]
    assert (error.grantable, error.only_grantable) == (("rater-01",), False)
    error = refused(grant=True)
    assert [(e.line, e.field) for e in error.errors] == [(7, "annotator")]
    assert error.errors[0].message.startswith(
        "'lead' (named by this line) is a lead without the annotator role, which an import"
        " never gives to a lead or a reviewer: annotators must stay blind"
    )
    assert not error.grantable
    assert not User.objects.filter(groups__name=Role.ANNOTATOR).exists()  # all rolled back
    assert not AuditEvent.objects.filter(action=USER_ROLES).exists()


def test_the_synthetic_raters_have_a_demo_prefix_and_cannot_log_in(lead_client: Client) -> None:
    synthetic_dataset("Syn", Shape(bugs=2, patches_per_bug=2, annotators=3, labels_per_patch=2))
    raters = User.objects.filter(username__startswith=RATER_PREFIX).order_by("username")
    assert [r.username for r in raters] == ["demo-rater-00", "demo-rater-01", "demo-rater-02"]
    assert not any(r.has_usable_password() for r in raters)
    assert not User.objects.filter(username__startswith="rater-").exists()
    # A user whose password is the empty string cannot log in either: the page says so.
    User.objects.create(username="empty-pass", password="")
    html = lead_client.get(reverse("user_list")).content.decode()
    assert html.count("no password: cannot log in until a lead sets one") == 4
    assert "has a password" in html  # the lead's own row


def test_every_door_carries_the_grant(lead: User, lead_client: Client, tmp_path: Path) -> None:
    """The Import page's box, ``import_bundle --grant-annotator-role`` and the API's
    ``grant_annotator_role``: each refuses without it, naming the user once, and imports with
    it."""
    records: tuple[dict[str, Any], ...] = RECORDS[:-1]
    role_less("rater-01")

    def page(dataset: str, **grant: str) -> HttpResponse:
        upload = SimpleUploadedFile("b.jsonl", jsonl(*records))
        form = {"dataset": dataset, "file": upload, **grant}
        return lead_client.post(reverse("rubrics:bundle_upload"), form)

    html = page("Web").content.decode()
    assert html.count("&#x27;rater-01&#x27; (named by 2 lines, this the first)") == 1
    assert "Only the annotator role stops this import" in html
    assert page("Web", grant_annotator_role="on").status_code == 302
    assert User.objects.get(username="rater-01").groups.filter(name=Role.ANNOTATOR).exists()

    role_less("roleless-2")  # the next doors meet a user without a role again
    records = (*records, label("P-2", "roleless-2"))
    path = tmp_path / "b.jsonl"
    path.write_bytes(jsonl(*records))
    with pytest.raises(CommandError, match="--grant-annotator-role gives the annotator role"):
        call_command("import_bundle", str(path), dataset="Cmd", stdout=io.StringIO())
    call_command(
        "import_bundle", str(path), dataset="Cmd", grant_annotator_role=True, stdout=io.StringIO()
    )
    assert Annotation.objects.filter(annotator__username="roleless-2").count() == 1

    role_less("roleless-3")
    records = (*records, label("P-1", "roleless-3"))
    api = Client(headers=bearer(token_for(lead)))
    url = "/api/v1/datasets/Api/bundle"
    refused = api.post(url, jsonl(*records), content_type=NDJSON)
    assert refused.status_code == 422
    assert refused.json()["grantable"] == ["roleless-3"]
    imported = api.post(f"{url}?grant_annotator_role=true", jsonl(*records), content_type=NDJSON)
    assert imported.status_code == 201
    assert AuditEvent.objects.filter(action=USER_ROLES).count() == 3


def test_a_large_upload_carries_the_grant_to_the_worker(
    lead: User, lead_client: Client, settings: Any, tmp_path: Path, eager_tasks: None
) -> None:
    settings.SEJURY_BUNDLE_WORKER_BYTES = 100  # this bundle goes to the worker
    settings.VAR_DIR = tmp_path
    rater = role_less("rater-01")
    upload = SimpleUploadedFile("big.jsonl", jsonl(*RECORDS[:-1]))
    form = {"dataset": "Big", "file": upload, "grant_annotator_role": "on"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        lead_client.post(reverse("rubrics:bundle_upload"), form)
    done = BundleUpload.objects.get()
    assert (done.grant_annotator_role, done.status) == (True, BundleUpload.Status.DONE)
    assert rater.groups.filter(name=Role.ANNOTATOR).exists()
    assert AuditEvent.objects.get(action=USER_ROLES).actor == lead


def test_the_real_le2019_bundle_imports_after_the_demo_report_data(le2019_bundle: Path) -> None:
    """The bug of issue 28: the demo's made-up raters took le2019's annotators' names."""
    Command(stdout=io.StringIO())._demo_report_data()
    assert User.objects.filter(username__startswith=RATER_PREFIX).count() == (
        REPORT_DEMO_SHAPE.annotators
    )
    with le2019_bundle.open("rb") as f:
        summary = bundle_import(source=f, dataset_name="defects4j-le2019", actor=None)
    assert summary.counts["label"].created == 950
