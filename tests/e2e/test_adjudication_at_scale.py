"""Adjudication at scale in a real browser (issue 16 item 13): the queue is paged, each patch
shows its diff inline (collapsible), its label counts and its majority, and the lead works
through it with the keyboard as annotators label (n/p move, v/i choose, digits tick themes,
s records, d folds the diff); adjudicating a page skips none of the next."""

import re
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect
from pytest_django.live_server_helper import LiveServer

from judging.consensus.views import PER_PAGE
from judging.models import Adjudication, DisagreementTheme, Label
from rubrics.models import Dataset
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.e2e.helpers import log_in, screenshot
from tests.helpers import PASSWORD
from tests.judging.factories import AnnotationFactory, UserFactory
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

VALID, INVALID = Label.VALID, Label.INVALID
DISPUTES = PER_PAGE + 3
# The first theme listed, which the key 1 ticks.
FIRST_THEME = DisagreementTheme.values[0]


def disputed_dataset() -> Dataset:
    """``DISPUTES`` patches, each on its own bug, labelled VALID, INVALID, INVALID."""
    dataset = DatasetFactory(name="Many disputes", slug="many-disputes")
    raters = [UserFactory(username=f"rater-{n}") for n in range(3)]
    for n in range(DISPUTES):
        patch = PatchFactory(
            bug=BugFactory(dataset=dataset, key=f"D-{n:02d}"),
            key=f"D-{n:02d}-p",
            diff=make_diff(new=f"x = {n}  # line-{n:02d}"),
        )
        for rater, label in zip(raters, (VALID, INVALID, INVALID), strict=True):
            AnnotationFactory(patch=patch, annotator=rater, label=label)
    return dataset


def current(page: Page) -> str | None:
    return page.locator("article.adjudication.current").get_attribute("data-patch-key")


@pytest.mark.e2e
@pytest.mark.django_db(transaction=True)
def test_the_lead_adjudicates_a_paged_queue_with_the_keyboard(
    live_server: LiveServer, e2e_page: Page, tmp_path: Path
) -> None:
    page = e2e_page
    dataset = disputed_dataset()
    user_create(actor=None, username="lena", password=PASSWORD, roles=[Role.LEAD])
    log_in(page, live_server, "lena")
    url = f"{live_server.url}{reverse('judging:adjudication_queue', args=[dataset.slug])}"
    page.goto(url)
    expect(page.locator(".adjudication-list[data-shortcuts=on]")).to_have_count(1)

    # One page of PER_PAGE cards, each with its counts, majority and open diff.
    cards = page.locator("article.adjudication")
    expect(cards).to_have_count(PER_PAGE)
    expect(page.locator("#adjudication-range")).to_have_text(f"1–{PER_PAGE}")
    first = cards.first
    expect(first).to_have_attribute("data-majority", INVALID)
    tally = first.locator(".adjudication-tally")
    expect(tally.locator("[data-label=VALID] b")).to_have_text("1")
    expect(tally.locator("[data-label=INVALID] b")).to_have_text("2")
    expect(tally).to_contain_text("2 of 3 decisive")
    expect(first.locator("details.adjudication-diff")).to_have_attribute("open", "")
    expect(first.locator("details.adjudication-diff")).to_contain_text("line-00")
    # The shortcuts are on the page.
    page.locator("#adjudication-keys summary").click()
    expect(page.locator("#adjudication-keys")).to_contain_text("record the consensus")

    # The keyboard: the first card is highlighted; d folds its diff; n moves on.
    assert current(page) == "D-00-p"
    page.keyboard.press("d")
    expect(first.locator("details.adjudication-diff")).not_to_have_attribute("open", "")
    page.keyboard.press("d")
    expect(first.locator("details.adjudication-diff")).to_have_attribute("open", "")
    page.keyboard.press("n")
    assert current(page) == "D-01-p"
    page.keyboard.press("p")
    page.keyboard.press("ArrowRight")
    assert current(page) == "D-01-p"

    # v, 1, s: VALID with the first theme, recorded by htmx; on to the next patch.
    second = page.locator("article.adjudication[data-patch-key='D-01-p']")
    page.keyboard.press("v")
    expect(second.locator("input[name=label][value=VALID]")).to_be_checked()
    page.keyboard.press("1")
    expect(second.locator(f"input[name=themes][value={FIRST_THEME}]")).to_be_checked()
    page.keyboard.press("s")
    expect(second.locator(".flash.ok")).to_be_visible()
    expect(second).to_have_attribute("data-state", "adjudicated")
    expect(page.locator("#count-adjudicated")).to_have_text("1")
    # The tabs' counts follow (issue 28 item 5), without a reload.
    expect(page.locator("#adjudication-tab-adjudicated .count")).to_have_text("1")
    expect(page.locator("#adjudication-tab-waiting .count")).to_have_text(str(DISPUTES - 1))
    # So does the range line: the page's patches still waiting, of how many.
    expect(page.locator("#adjudication-range-line")).to_have_text(
        f"Patches 1–{PER_PAGE - 1} of {DISPUTES - 1} waiting"
    )
    expect(page.locator("#adjudication-pager-range")).to_have_text(
        f"1–{PER_PAGE - 1} of {DISPUTES - 1}"
    )
    top = {"x": 0, "y": 0, "width": 1280, "height": 800}
    screenshot(page, tmp_path / "adjudication-recorded.png", full_page=True, clip=top)
    expect(page.locator("article.adjudication.current")).to_have_attribute(
        "data-patch-key", "D-02-p"
    )
    adjudication = Adjudication.objects.get()
    assert (adjudication.patch.key, adjudication.label, adjudication.themes) == (
        "D-01-p",
        VALID,
        [FIRST_THEME],
    )
    # An empty submit is refused for both its faults at once: no label, no theme.
    third = page.locator("article.adjudication[data-patch-key='D-02-p']")
    page.keyboard.press("s")
    expect(third.locator(".themes").first).to_contain_text("pick the consensus label")
    expect(third.locator(".themes").nth(1)).to_contain_text("at least one theme")
    screenshot(third, tmp_path / "adjudication-empty-submit.png")
    screenshot(page.locator(".adjudication-tabs"), tmp_path / "adjudication-tabs.png")
    # Refused without a theme: the card says why and stays highlighted.
    page.keyboard.press("i")
    page.keyboard.press("s")
    expect(third.locator(".themes").first).not_to_contain_text("pick the consensus label")
    expect(third.locator(".errorlist, .field-error, .error").first).to_be_visible()
    assert current(page) == "D-02-p"

    # n past the last card: the next page, which begins after the last patch seen, though one
    # patch of this page left the waiting list.
    for _ in range(PER_PAGE - 3):
        page.keyboard.press("n")
    assert current(page) == f"D-{PER_PAGE - 1:02d}-p"
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"\?after=\d+"))
    expect(cards).to_have_count(DISPUTES - PER_PAGE)
    keys = [cards.nth(n).get_attribute("data-patch-key") for n in range(DISPUTES - PER_PAGE)]
    assert keys == [f"D-{n:02d}-p" for n in range(PER_PAGE, DISPUTES)]
    expect(page.locator("#adjudication-range")).to_have_text(f"{PER_PAGE}–{DISPUTES - 1}")
    # p before the first card: back to the previous page, here the first one again (full),
    # which lists the waiting patches only.
    page.keyboard.press("p")
    page.wait_for_url(re.compile(r"\?before=\d+"))
    expect(cards).to_have_count(PER_PAGE)
    expect(page.locator("#adjudication-range")).to_have_text(f"1–{PER_PAGE}")
    expect(page.locator("article.adjudication[data-patch-key='D-01-p']")).to_have_count(0)

    # The adjudicated, on their own tab, with their diff folded.
    page.locator("#adjudication-tab-adjudicated").click()
    expect(cards).to_have_count(1)
    expect(cards.first).to_have_attribute("data-patch-key", "D-01-p")
    expect(cards.first.locator("details.adjudication-diff")).not_to_have_attribute("open", "")
