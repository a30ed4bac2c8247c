"""The round trip through a real Label Studio (``scripts/label_studio_local.py``): a project
made from our labelling config through its API, our tasks imported (one patch twice, as a
project that got the tasks twice has it), annotations made by two of its users, both of its
exports (Export › JSON, whose ``completed_by`` is a bare id, with its list of users; and the
snapshot with user details) imported here, equal to what was annotated. And the diffs in
monospace on its labelling page, in a real browser."""

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from playwright.sync_api import sync_playwright

from judging.annotations.labelstudio.export import labelling_config
from judging.annotations.labelstudio.import_ import (
    LabelStudioImportError,
    labelstudio_import,
    users_mapping,
)
from judging.annotations.labelstudio.names import PATCH_FIELD
from judging.models import Annotation, Campaign
from rubrics.models import Dataset
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.helpers import PASSWORD
from tests.judging.annotations import test_labelstudio as shared
from tests.judging.factories import create_campaign
from tests.label_studio.conftest import LabelStudio, LabelStudioApi

pytestmark = pytest.mark.label_studio

dataset = shared.dataset  # four patches, P-0 … P-3, of two bugs
labels_of = shared.labels_of

# Label Studio's second user: it signs up with this e-mail and sets this user name.
ANNOTATOR2_EMAIL = "annotator2@example.org"
ANNOTATOR2_PASSWORD = "sejury-ls-annotator2"
EXPORT_WAIT_S = 60

NOTE_1 = "Same fix as the developer's."
NOTE_2 = "Skips the guard.\nAlso breaks the loop."


def result(label: str | None, note: str = "") -> list[dict[str, Any]]:
    """An annotation's result as Label Studio's labelling page submits it."""
    items: list[dict[str, Any]] = []
    if label:
        value = {"choices": [label]}
        items.append({"from_name": "label", "to_name": "diff", "type": "choices", "value": value})
    if note:
        value = {"text": [note]}
        items.append({"from_name": "note", "to_name": "diff", "type": "textarea", "value": value})
    return items


@pytest.fixture
def campaign(dataset: Dataset, label_studio: LabelStudio, lead: User) -> Campaign:
    """Our two annotators: ``annotator1`` has the e-mail of Label Studio's first user (whose
    Label Studio user name is empty); ``annotator2`` no e-mail at all: Label Studio's
    ``annotator2`` is found by user name."""
    people = [
        user_create(
            actor=None,
            username=name,
            email=email,
            password=PASSWORD,
            roles=[Role.ANNOTATOR],
        )
        for name, email in (("annotator1", label_studio.username), ("annotator2", ""))
    ]
    return create_campaign(dataset, people, name="Round LS", actor=lead)


def wait_for_snapshot(api: LabelStudioApi, project: int, snapshot: int) -> None:
    deadline = time.monotonic() + EXPORT_WAIT_S
    while (status := api.get(f"/api/projects/{project}/exports/{snapshot}")["status"]) not in (
        "completed",
        "failed",
    ):
        assert time.monotonic() < deadline, f"the export snapshot is still {status}"
        time.sleep(0.3)
    assert status == "completed"


def upload(content: bytes, name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/json")


@pytest.mark.django_db
def test_labels_made_in_label_studio_come_back_from_both_exports(
    label_studio: LabelStudio, campaign: Campaign, lead_client: Client
) -> None:
    lead = label_studio.api()
    annotator2, annotator2_id = label_studio.user(
        ANNOTATOR2_EMAIL, ANNOTATOR2_PASSWORD, "annotator2"
    )
    lead_id = lead.get("/api/current-user/whoami")["id"]

    # Our tasks and config, as a lead downloads them from the campaign page.
    urls = {
        what: reverse(f"judging:campaign_labelstudio{what}", args=[campaign.pk])
        for what in ("", "_tasks", "_config")
    }
    tasks = json.loads(lead_client.get(urls["_tasks"]).content)
    config = lead_client.get(urls["_config"]).content.decode()
    project = lead.post(
        "/api/projects", {"title": f"SE-Jury {uuid.uuid4().hex[:8]}", "label_config": config}
    )["id"]
    # The tasks imported, then the first again: P-0 is in the project twice.
    lead.post(f"/api/projects/{project}/import", tasks)
    lead.post(f"/api/projects/{project}/import", tasks[:1])
    listed = lead.get("/api/tasks", params={"project": project, "page_size": 100})["tasks"]
    by_patch: dict[int, list[int]] = {}
    for task in sorted(listed, key=lambda t: t["id"]):
        by_patch.setdefault(task["data"][PATCH_FIELD], []).append(task["id"])
    p0, p1, p2, p3 = (by_patch[t["data"][PATCH_FIELD]] for t in tasks)
    assert (len(p0), len(p1), len(p2), len(p3)) == (2, 1, 1, 1)

    # Its two users annotate, each with their own token.
    def annotate(api: LabelStudioApi, task: int, label: str | None, note: str = "") -> None:
        body = {"result": result(label, note), "was_cancelled": label is None, "lead_time": 12.5}
        api.post(f"/api/tasks/{task}/annotations/", body)

    annotate(lead, p0[0], "VALID", NOTE_1)
    annotate(lead, p1[0], "INVALID", NOTE_2)
    annotate(lead, p2[0], None)  # skipped
    annotate(annotator2, p0[0], "VALID")
    annotate(annotator2, p0[1], "VALID")  # the same patch again, labelled alike
    annotate(annotator2, p1[0], "UNSURE")
    annotate(annotator2, p2[0], "INVALID", "Overfits.")
    annotate(annotator2, p3[0], "INVALID", "Deletes the test's path")
    expected = {
        ("P-0", "annotator1"): ("VALID", NOTE_1),
        ("P-1", "annotator1"): ("INVALID", NOTE_2),
        ("P-0", "annotator2"): ("VALID", ""),
        ("P-1", "annotator2"): ("UNSURE", ""),
        ("P-2", "annotator2"): ("INVALID", "Overfits."),
        ("P-3", "annotator2"): ("INVALID", "Deletes the test's path"),
    }

    # Export › JSON, as its UI downloads it: completed_by is the bare user id.
    exported = lead.call("GET", f"/api/projects/{project}/export", params={"exportType": "JSON"})
    bare = exported.json()
    assert {a["completed_by"] for t in bare for a in t["annotations"]} == {lead_id, annotator2_id}
    users = lead.call("GET", "/api/users/").content
    assert {"annotator2", ""} <= {u["username"] for u in json.loads(users)}

    # Without the users file: refused, naming the ids and the two ways out.
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(source=exported.content, dataset=campaign.dataset, actor=None)
    ids = ", ".join(map(str, sorted({lead_id, annotator2_id})))
    assert f"Label Studio user ids only ({ids})" in str(raised.value)
    assert "export snapshot with user details" in str(raised.value)

    # With it, on the campaign page.
    response = lead_client.post(
        urls[""],
        {"file": upload(exported.content, "export.json"), "users": upload(users, "users.json")},
        follow=True,
    )
    assert response.redirect_chain == [(campaign.get_absolute_url(), 302)], response.content[:3000]
    page = response.content.decode()
    assert "6 labels created, 0 updated, 0 unchanged; 1 skipped" in page
    assert "1 identical annotations of a patch in two tasks counted once" in page
    assert labels_of(campaign.dataset) == expected
    assert not User.objects.filter(username__contains="@").exists()  # nobody new

    # The snapshot with user details: completed_by has the e-mail, no user name, so our
    # annotator2 is found by e-mail now.
    User.objects.filter(username="annotator2").update(email=ANNOTATOR2_EMAIL)
    options = {"annotations__completed_by": {"only_id": False}}
    snapshot = lead.post(
        f"/api/projects/{project}/exports/", {"title": "SE-Jury", "serialization_options": options}
    )["id"]
    wait_for_snapshot(lead, project, snapshot)
    detailed = lead.call(
        "GET",
        f"/api/projects/{project}/exports/{snapshot}/download",
        params={"exportType": "JSON"},
    ).content
    people = {
        (a["completed_by"]["id"], a["completed_by"]["email"])
        for t in json.loads(detailed)
        for a in t["annotations"]
    }
    assert people == {(lead_id, label_studio.username.lower()), (annotator2_id, ANNOTATOR2_EMAIL)}
    Annotation.objects.all().delete()
    summary = labelstudio_import(
        source=detailed, dataset=campaign.dataset, campaign=campaign, actor=None
    )
    assert (summary.counts.created, summary.skipped, summary.duplicates) == (6, 1, 1)
    assert summary.new_annotators == []
    assert labels_of(campaign.dataset) == expected

    # The same patch labelled differently in its two tasks: refused, naming both.
    annotation = lead.get(f"/api/tasks/{p0[1]}/annotations/")[0]["id"]
    annotator2.patch(f"/api/annotations/{annotation}/", {"result": result("INVALID")})
    changed = lead.call("GET", f"/api/projects/{project}/export", params={"exportType": "JSON"})
    with pytest.raises(LabelStudioImportError) as raised:
        labelstudio_import(
            source=changed.content,
            dataset=campaign.dataset,
            users=users_mapping(users),
            actor=None,
        )
    (error,) = raised.value.errors
    assert f"(id {p0[1]})" in str(error)
    assert f"annotator2 labelled this patch differently in task 1 (id {p0[0]})" in str(error)


@pytest.fixture
def labelling_page(label_studio: LabelStudio) -> Iterator[str]:
    """A project of our config with one task, in Label Studio: the URL of its labelling page."""
    lead = label_studio.api()
    config = labelling_config(with_rubric=True)
    project = lead.post(
        "/api/projects", {"title": f"SE-Jury font {uuid.uuid4().hex[:8]}", "label_config": config}
    )["id"]
    diff = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n-    x = 1\n+    x = 2\n"
    data = {
        "title": "BUG-A: Totals skip the first item",
        "description": "The first item is skipped.",
        "reference_patch": diff,
        "rubric": "The loop starts at 0.",
        "diff": diff.replace("x = 2", "x = 3  # CANDIDATE"),
        "sejury_dataset": "ls-demo",
        "sejury_patch_id": 1,
        "sejury_campaign": None,
    }
    lead.post(f"/api/projects/{project}/import", [{"data": data}])
    (task,) = lead.get("/api/tasks", params={"project": project})["tasks"]
    yield f"{label_studio.url}projects/{project}/data?task={task['id']}"
    lead.call("DELETE", f"/api/projects/{project}/")


# The candidate diff's line as the page renders it: its font and its text as shown.
RENDERED = """() => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node; (node = walker.nextNode()); ) {
        const element = node.parentElement;
        if (!node.textContent.includes('CANDIDATE') || element.closest('.lsf-table')) continue;
        const object = element.closest('.lsf-richtext');
        return {font: getComputedStyle(element).fontFamily, shown: object && object.innerText};
    }
    return null;
}"""


def test_the_diff_shows_in_monospace_on_label_studios_labelling_page(
    label_studio: LabelStudio, labelling_page: str
) -> None:
    if not CHROMIUM.is_file():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, chromium_sandbox=False, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)
            page.goto(f"{label_studio.url}user/login/")
            page.fill("input[name=email]", label_studio.username)
            page.fill("input[name=password]", label_studio.password)
            page.click("button[type=submit], input[type=submit]")
            page.wait_for_url(lambda url: "/user/login" not in url)
            page.goto(labelling_page)
            rendered = page.wait_for_function(RENDERED, timeout=60_000).json_value()
        finally:
            browser.close()
    assert rendered["font"] == "monospace"
    # The diff's lines whole, their leading spaces kept.
    assert "-    x = 1\n+    x = 3  # CANDIDATE" in rendered["shown"]
