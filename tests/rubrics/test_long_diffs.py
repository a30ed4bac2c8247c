"""Long diffs: a page shows the first lines, the rest loads on demand, for the user the page
was rendered for only (annotators included, still blind)."""

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core import signing
from django.test import Client
from django.urls import reverse

from rubrics import long_diffs
from rubrics.bundle.read import MAX_DIFF
from rubrics.long_diffs import CHUNK_LINES, PAGE_LINES
from rubrics.models import Dataset, Patch
from tests.judging.factories import create_campaign
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory

pytestmark = pytest.mark.django_db
ROW = re.compile(r'<tr class="(?:added|removed|context|no_newline)">')
HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def cache_dir(settings: Any, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path
    return tmp_path / long_diffs.CACHE_DIR


def diff_of(lines: int, files: int = 1) -> str:
    """A diff of ``files`` new files with ``lines`` added lines in all."""
    parts, per_file = [], lines // files
    for f in range(files):
        body = "".join(f"+value_{f}_{n} = {n}  # SECRET-LINE-{f}-{n}.\n" for n in range(per_file))
        parts.append(f"--- /dev/null\n+++ b/pkg/file_{f}.py\n@@ -0,0 +1,{per_file} @@\n{body}")
    return "".join(parts)


@pytest.fixture
def long_patch() -> Patch:
    dataset = DatasetFactory(name="Long", slug="long")
    bug = BugFactory(dataset=dataset, key="LONG-1")
    return PatchFactory(bug=bug, key="long-p1", diff=diff_of(5000, files=2))


def patch_page(client: Client, patch: Patch) -> str:
    response = client.get(reverse("rubrics:patch_detail", args=[patch.dataset.slug, patch.key]))
    assert response.status_code == 200
    return response.content.decode()


def more_link(html: str) -> str:
    links = re.findall(r'hx-get="([^"]+diffs/more/[^"]+)"', html)
    assert len(links) == 1, links
    return links[0].replace("&amp;", "&")


def test_a_page_shows_the_first_lines_and_a_link_to_the_rest(
    lead_client: Client, long_patch: Patch
) -> None:
    html = patch_page(lead_client, long_patch)
    patch_diff = html[: html.index("Reference patch")] if "Reference patch" in html else html
    assert len(ROW.findall(patch_diff)) == PAGE_LINES
    assert "SECRET-LINE-0-399." in html
    assert "SECRET-LINE-0-400." not in html
    assert f"Show the next {CHUNK_LINES:,} of the remaining {5000 - PAGE_LINES:,} lines" in html
    assert "the first 400 of its 5,000 lines are shown" in html

    # The next 2,000 lines: file 0's lines 400–2,399 (it began on the page).
    chunk = lead_client.get(more_link(html), headers=HTMX)
    assert chunk.status_code == 200
    part = chunk.content.decode()
    assert "<html" not in part
    assert len(ROW.findall(part)) == CHUNK_LINES
    assert "SECRET-LINE-0-400." in part
    assert "SECRET-LINE-0-2399." in part
    assert "SECRET-LINE-0-2400." not in part
    assert re.search(r"pkg/file_0\.py.{0,80}\(continued\)", part, re.DOTALL)
    assert f"Show the next {CHUNK_LINES:,} of the remaining 2,600 lines" in part

    # Then file 0's last 100 lines and file 1's first 1,900.
    part = lead_client.get(more_link(part), headers=HTMX).content.decode()
    assert len(ROW.findall(part)) == CHUNK_LINES
    assert "SECRET-LINE-0-2499." in part
    assert "SECRET-LINE-1-1899." in part
    assert part.count("(continued)") == 2  # file 0's header and its hunk's; file 1 is new
    assert "Show the remaining 600 lines" in part

    last = lead_client.get(more_link(part), headers=HTMX).content.decode()
    assert len(ROW.findall(last)) == 600
    assert "SECRET-LINE-1-2499." in last
    assert "diffs/more/" not in last  # nothing left


def test_a_short_diff_is_shown_whole(lead_client: Client, long_patch: Patch) -> None:
    Patch.objects.filter(pk=long_patch.pk).update(diff=diff_of(PAGE_LINES))
    html = patch_page(lead_client, long_patch)
    assert "diffs/more/" not in html
    assert "SECRET-LINE-0-399." in html


def test_a_1_mb_diff_makes_a_small_page(lead_client: Client, long_patch: Patch) -> None:
    big = diff_of(27_000)
    big = big[: big.rindex("+value", 0, MAX_DIFF)]
    count = big.count("\n+value")
    big = big.replace("@@ -0,0 +1,27000 @@", f"@@ -0,0 +1,{count} @@")
    assert MAX_DIFF - 100 < len(big) <= MAX_DIFF
    Patch.objects.filter(pk=long_patch.pk).update(diff=big)
    html = patch_page(lead_client, long_patch)
    assert len(html.encode()) < 150_000  # the whole diff would be about 4 MB of HTML
    assert f"Show the next {CHUNK_LINES:,} of the remaining" in html


def test_the_link_works_only_for_the_user_it_was_made_for(
    lead_client: Client, reviewer_client: Client, annotator_client: Client, long_patch: Patch
) -> None:
    link = more_link(patch_page(lead_client, long_patch))
    assert lead_client.get(link, headers=HTMX).status_code == 200
    assert reviewer_client.get(link, headers=HTMX).status_code == 403
    assert annotator_client.get(link, headers=HTMX).status_code == 403
    assert Client().get(link).status_code == 302  # to the login page


@pytest.mark.parametrize(
    "query",
    [{}, {"t": "forged", "from": "400"}, {"from": "400"}, {"t": "x:y:z", "from": "x"}],
)
def test_no_token_or_a_forged_one_is_not_found(lead_client: Client, query: dict[str, str]) -> None:
    assert lead_client.get(reverse("rubrics:diff_more"), query).status_code == 404


def test_a_token_signed_for_something_else_is_refused(lead_client: Client, lead: User) -> None:
    other = signing.TimestampSigner(salt="another.purpose").sign_object({"h": "0" * 64, "u": 1})
    response = lead_client.get(reverse("rubrics:diff_more"), {"t": other, "from": 400})
    assert response.status_code == 404


def test_an_expired_link_or_a_forgotten_diff_asks_to_reload(
    lead_client: Client, long_patch: Patch, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    link = more_link(patch_page(lead_client, long_patch))
    monkeypatch.setattr(long_diffs, "TOKEN_MAX_AGE", -1)
    expired = lead_client.get(link, headers=HTMX).content.decode()
    assert "expired: reload the page" in expired
    monkeypatch.undo()
    for path in cache_dir.iterdir():
        path.unlink()
    assert "reload the page" in lead_client.get(link, headers=HTMX).content.decode()


def test_without_htmx_the_link_opens_a_page(lead_client: Client, long_patch: Patch) -> None:
    response = lead_client.get(more_link(patch_page(lead_client, long_patch)))
    html = response.content.decode()
    assert "<html" in html
    assert "Diff lines 401–2,400" in html


def test_an_annotator_loads_the_rest_of_their_own_patch_and_the_link_names_no_patch(
    annotator: User, annotator_client: Client, lead_client: Client, long_patch: Patch
) -> None:
    dataset = Dataset.objects.get(slug="long")
    campaign = create_campaign(dataset, [annotator], overlap=1)
    page = annotator_client.get(reverse("judging:annotate", args=[campaign.pk, 1]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "SECRET-LINE-0-399." in html
    assert "SECRET-LINE-0-400." not in html
    link = more_link(html)
    # The token holds a hash of the text and the annotator's id: no key, no patch or bug id.
    token = parse_qs(urlsplit(link).query)["t"][0]
    payload = signing.TimestampSigner(salt="rubrics.long_diffs").unsign_object(token)
    assert payload == {"h": payload["h"], "u": annotator.pk}
    assert long_patch.key not in link
    assert long_patch.bug.key not in link
    rest = annotator_client.get(link, headers=HTMX)
    assert rest.status_code == 200
    assert "SECRET-LINE-0-400." in rest.content.decode()
    assert lead_client.get(link, headers=HTMX).status_code == 403
    # A lead's link to the same diff is the lead's alone.
    lead_link = more_link(patch_page(lead_client, long_patch))
    assert annotator_client.get(lead_link, headers=HTMX).status_code == 403


def test_old_cached_diffs_are_forgotten(
    lead_client: Client, long_patch: Patch, cache_dir: Path
) -> None:
    cache_dir.mkdir(parents=True)
    stale = cache_dir / f"{'a' * 64}.diff"
    stale.write_text("old")
    os.utime(stale, (0, 0))
    patch_page(lead_client, long_patch)
    assert not stale.exists()
    assert len(list(cache_dir.iterdir())) == 1
