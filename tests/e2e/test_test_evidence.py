"""SWE-bench's test evidence in a real browser (issue 27 item 7): a lead imports the
harness's run report and a zip of its logs folder on the Import page; the patch page shows
each patch's tests, FAIL_TO_PASS and PASS_TO_PASS, and why a patch was not evaluated, to the
lead and to a reviewer; an annotator labelling the same patch sees none of it."""

import io
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.models import Assignment
from rubrics.models import Dataset, Patch
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import fresh_session, log_in, screenshot
from tests.helpers import PASSWORD
from tests.judging.factories import create_campaign
from tests.rubrics.swebench.helpers import FIXTURES

# Screenshots of each role's view are left in the test's tmp_path (see --basetemp).

HARNESS = FIXTURES / "harness"
FAILING_TEST = "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"


def logs_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((HARNESS / "logs").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(HARNESS).as_posix())
    return buffer.getvalue()


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_the_patch_page_shows_the_harness_tests_to_leads_and_reviewers_not_annotators(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    page = e2e_page
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    user_create(actor=None, username="rey", password=PASSWORD, roles=[Role.REVIEWER])
    ann = user_create(actor=None, username="ann", password=PASSWORD, roles=[Role.ANNOTATOR])

    log_in(page, live_server, "lena")
    page.goto(f"{live_server.url}/datasets/import/swebench/")
    form = page.locator("form[action$='/import/swebench/']")
    form.locator("input[name=dataset]").fill("SWE-bench Lite")
    form.locator("input[name=instances]").set_input_files(str(FIXTURES / "instances.parquet"))
    form.locator("input[name=predictions]").set_input_files(str(FIXTURES / "preds_gpt4.jsonl"))
    form.locator("input[name=results]").set_input_files(
        [
            {
                "name": "gpt-4-0613.run-1.json",
                "mimeType": "application/json",
                "buffer": (HARNESS / "gpt-4-0613.run-1.json").read_bytes(),
            },
            {"name": "logs.zip", "mimeType": "application/zip", "buffer": logs_zip()},
        ]
    )
    form.get_by_role("button", name="Import").click()
    expect(page.locator(".messages")).to_contain_text("not evaluated for 1 (infra_failure_ids 1)")
    dataset = Dataset.objects.get(name="SWE-bench Lite")

    failing = Patch.objects.get(bug__key="django__django-11099")
    page.goto(f"{live_server.url}{failing.get_absolute_url()}")
    evidence = page.locator("#test-evidence")
    f2p = evidence.locator("tr[data-list=FAIL_TO_PASS]")
    expect(f2p).to_contain_text("1 of 2")
    expect(f2p.locator(".test-names.failing")).to_have_text(FAILING_TEST)
    expect(evidence.locator("tr[data-list=PASS_TO_PASS]")).to_contain_text("1 of 1")
    screenshot(page, tmp_path / "lead-failing.png", full_page=True)

    not_evaluated = Patch.objects.get(bug__key="psf__requests-2317")
    page.goto(f"{live_server.url}{not_evaluated.get_absolute_url()}")
    expect(page.locator("#test-evidence .test-note")).to_have_text(
        "Not evaluated: infra_failure_ids of gpt-4-0613.run-1.json (out_of_memory)"
    )
    expect(page.locator(".stats:not(.consensus)")).to_contain_text("tests unknown")
    screenshot(page, tmp_path / "lead-not-evaluated.png", full_page=True)

    fresh_session(page)
    log_in(page, live_server, "rey")
    page.goto(f"{live_server.url}{failing.get_absolute_url()}")
    expect(page.locator("#test-evidence tr[data-list=FAIL_TO_PASS]")).to_contain_text("1 of 2")
    screenshot(page, tmp_path / "reviewer-failing.png", full_page=True)

    campaign = create_campaign(dataset, [ann], name="Round 1", overlap=1)
    place = Assignment.objects.get(campaign=campaign, annotator=ann, patch=failing)
    fresh_session(page)
    log_in(page, live_server, "ann")
    page.goto(f"{live_server.url}/annotate/{campaign.pk}/{place.position}/")
    expect(page.locator("#annotate-diff")).to_be_visible()
    content = page.content()
    for hidden in ("test-evidence", "FAIL_TO_PASS", "test_ascii_validator (", "tests unknown"):
        assert hidden not in content
