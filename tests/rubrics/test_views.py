import json

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.urls import reverse

from rubrics.models import Dataset, Patch
from sejury_web.diffs import normalized_diff_hash, parse_diff
from tests.judging.factories import AnnotationFactory, UserFactory
from tests.rubrics.bundles import bug, jsonl, label, patch
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def dataset() -> Dataset:
    dataset = DatasetFactory(name="Demo", slug="demo")
    for i in range(3):
        b = BugFactory(dataset=dataset, key=f"BUG-{i}", language=["python", "java", "go"][i])
        PatchFactory(bug=b, key=f"P-{i}")
    return dataset


def urls(dataset: Dataset) -> list[str]:
    bug = dataset.bugs.first()
    p = dataset.patches.first()
    return [
        reverse("rubrics:dataset_list"),
        reverse("rubrics:dataset_detail", args=[dataset.slug]),
        reverse("rubrics:bug_detail", args=[dataset.slug, bug.key]),
        reverse("rubrics:patch_detail", args=[dataset.slug, p.key]),
    ]


def test_every_page_redirects_anonymous_users_to_login(client: Client, dataset: Dataset) -> None:
    for url in [
        *urls(dataset),
        reverse("rubrics:bundle_upload"),
        reverse("rubrics:dataset_export", args=["demo"]),
        reverse("user_list"),
        reverse("judging:my_labels"),
        reverse("home"),
    ]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login")), url


def test_leads_and_reviewers_browse_annotators_get_403(
    lead_client: Client, reviewer_client: Client, annotator_client: Client, dataset: Dataset
) -> None:
    for url in urls(dataset):
        assert lead_client.get(url).status_code == 200, url
        assert reviewer_client.get(url).status_code == 200, url
        assert annotator_client.get(url).status_code == 403, url


def test_import_export_and_user_pages_are_for_leads_only(
    reviewer_client: Client, annotator_client: Client, dataset: Dataset
) -> None:
    for client in (reviewer_client, annotator_client):
        for url in (
            reverse("rubrics:bundle_upload"),
            reverse("rubrics:dataset_export", args=["demo"]),
            reverse("user_list"),
        ):
            assert client.get(url).status_code == 403, url


def test_home_shows_each_role_its_part(
    lead_client: Client, annotator_client: Client, client: Client
) -> None:
    # What each part holds: tests/sejury_web/test_home.py.
    assert 'data-home-role="lead"' in lead_client.get("/").content.decode()
    assert 'data-home-role="annotator"' in annotator_client.get("/").content.decode()
    client.force_login(UserFactory(username="nobody"))
    assert client.get("/").status_code == 403


def test_dataset_page_lists_bugs_with_patch_and_label_counts(
    lead_client: Client, dataset: Dataset
) -> None:
    p = Patch.objects.get(key="P-1")
    AnnotationFactory(patch=p)
    AnnotationFactory(patch=p)
    PatchFactory(bug=p.bug, key="P-1b")
    response = lead_client.get(reverse("rubrics:dataset_detail", args=["demo"]))
    rows = {bug.key: (bug.patch_count, bug.label_count) for bug in response.context["page"]}
    assert rows == {"BUG-0": (1, 0), "BUG-1": (2, 2), "BUG-2": (1, 0)}
    assert response.context["label_count"] == 2


def test_dataset_search_matches_key_language_and_patch_key(
    lead_client: Client, dataset: Dataset
) -> None:
    url = reverse("rubrics:dataset_detail", args=["demo"])

    def keys(q: str) -> list[str]:
        return [bug.key for bug in lead_client.get(url, {"q": q}).context["page"]]

    assert keys("BUG-2") == ["BUG-2"]
    assert keys("java") == ["BUG-1"]
    assert keys("P-0") == ["BUG-0"]
    assert keys("nothing-like-this") == []


def test_htmx_search_returns_only_the_table(lead_client: Client, dataset: Dataset) -> None:
    response = lead_client.get(
        reverse("rubrics:dataset_detail", args=["demo"]),
        {"q": "BUG-1"},
        headers={"HX-Request": "true", "HX-Target": "bug-table"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="bug-table">')
    assert "<html" not in html
    assert "BUG-1" in html
    assert "BUG-2" not in html
    assert "HX-Request" in response["Vary"]


def test_dataset_page_pages_through_bugs(lead_client: Client) -> None:
    dataset = DatasetFactory(slug="big")
    BugFactory.create_batch(120, dataset=dataset)
    url = reverse("rubrics:dataset_detail", args=["big"])
    page3 = lead_client.get(url, {"page": 3}).context["page"]
    assert (page3.number, len(page3.object_list), page3.paginator.num_pages) == (3, 20, 3)
    assert lead_client.get(url, {"page": 99}).context["page"].number == 3


def test_bug_page_renders_description_reference_and_candidate_diffs(
    reviewer_client: Client, dataset: Dataset
) -> None:
    html = reviewer_client.get(
        reverse("rubrics:bug_detail", args=["demo", "BUG-0"])
    ).content.decode()
    assert "f() returns 1 instead of 2." in html
    assert html.count('class="diff-table"') == 2  # reference + one candidate
    assert '<tr class="removed">' in html
    assert '<tr class="added">' in html
    assert "src/app.py" in html
    assert 'class="code"' in html
    assert '<span class="' in html


def test_user_text_is_escaped_everywhere(lead_client: Client) -> None:
    dataset = DatasetFactory(slug="xss", name="<script>alert('name')</script>")
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    b = BugFactory(dataset=dataset, key="XSS-1", title=evil, description=evil)
    p = PatchFactory(
        bug=b,
        key="XSS-P",
        source=evil,
        diff=f"--- a/{evil}.py\n+++ b/{evil}.py\n@@ -1 +1 @@\n-a\n+{evil}\n",
    )
    AnnotationFactory(patch=p, note=evil)
    for url in [
        reverse("rubrics:dataset_list"),
        reverse("rubrics:dataset_detail", args=["xss"]),
        reverse("rubrics:bug_detail", args=["xss", "XSS-1"]),
        reverse("rubrics:patch_detail", args=["xss", "XSS-P"]),
    ]:
        html = lead_client.get(url).content.decode()
        assert "<script>alert" not in html, url
        assert "<img src=x" not in html, url


def test_patch_page_shows_labels_to_leads_only(
    lead_client: Client, reviewer_client: Client, dataset: Dataset
) -> None:
    p = Patch.objects.get(key="P-0")
    AnnotationFactory(patch=p, annotator=UserFactory(username="rater-x"), note="secret note")
    url = reverse("rubrics:patch_detail", args=["demo", "P-0"])
    assert "secret note" in lead_client.get(url).content.decode()
    html = reviewer_client.get(url).content.decode()
    assert "secret note" not in html
    assert "rater-x" not in html


def test_patch_page_points_at_duplicates(lead_client: Client, dataset: Dataset) -> None:
    original = Patch.objects.get(key="P-0")
    PatchFactory(bug=original.bug, key="P-0-again", diff=original.diff.replace("\n", "\r\n"))
    html = lead_client.get(reverse("rubrics:patch_detail", args=["demo", "P-0"])).content.decode()
    assert "Same change as" in html
    assert "P-0-again" in html


def upload(client: Client, data: bytes, dataset: str = "Uploaded"):  # type: ignore[no-untyped-def]
    return client.post(
        reverse("rubrics:bundle_upload"),
        {"dataset": dataset, "file": SimpleUploadedFile("b.jsonl", data)},
        follow=True,
    )


def test_upload_imports_and_redirects_to_the_dataset(lead_client: Client, lead: User) -> None:
    response = upload(lead_client, jsonl(bug(), patch(), label()))
    assert response.redirect_chain[-1][0] == reverse("rubrics:dataset_detail", args=["uploaded"])
    assert "1 bug, 1 patch, 1 label created" in response.content.decode()
    imported = Dataset.objects.get(slug="uploaded").imports.get()
    assert imported.imported_by == lead
    assert imported.filename == "b.jsonl"


def test_upload_errors_are_listed_by_line_and_nothing_is_imported(lead_client: Client) -> None:
    response = upload(lead_client, jsonl(bug(), patch("P-1", "NOPE"), "{broken"))
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was imported" in html
    assert "unknown bug &#x27;NOPE&#x27;" in html
    assert "invalid JSON" in html
    errors = response.context["import_error"].errors
    assert [(e.line, e.field) for e in errors] == [(2, "bug"), (3, None)]
    assert not Dataset.objects.exists()


@override_settings(SEJURY_BUNDLE_MAX_BYTES=50)
def test_upload_over_the_size_limit_is_refused(lead_client: Client) -> None:
    response = upload(lead_client, jsonl(bug()))
    assert response.status_code == 400
    assert "over the size limit of 50 bytes" in response.content.decode()


def test_export_downloads_the_bundle(lead_client: Client) -> None:
    upload(lead_client, jsonl(bug(), patch(), label()))
    response = lead_client.get(reverse("rubrics:dataset_export", args=["uploaded"]))
    assert response["Content-Disposition"] == 'attachment; filename="uploaded.jsonl"'
    body = b"".join(response.streaming_content)  # type: ignore[attr-defined]
    assert [json.loads(line) for line in body.splitlines()] == [bug(), patch(), label(note="")]


def test_admin_edit_of_a_patch_validates_the_diff_and_rehashes_it(dataset: Dataset) -> None:
    admin = User.objects.create_superuser("root", password="x")
    client = Client()
    client.force_login(admin)
    p = Patch.objects.get(key="P-0")
    url = reverse("admin:rubrics_patch_change", args=[p.pk])
    form = {"bug": p.bug_id, "key": p.key, "source": "s", "tests_pass": "unknown", "metadata": "{}"}
    response = client.post(url, form | {"diff": "not a diff"})
    assert response.status_code == 200
    assert "not a unified diff" in response.content.decode()
    new_diff = p.diff.replace("x = 2", "x = 3")
    assert client.post(url, form | {"diff": new_diff}).status_code == 302
    p.refresh_from_db()
    assert p.diff == new_diff
    assert p.diff_hash == normalized_diff_hash(parse_diff(new_diff))
