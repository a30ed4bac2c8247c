"""``{% judge_test_card version as card %}``: the *Test this judge* card's context, read by its
selector (``judging.judges.trust.test_card``), so that the judge's page includes the card
(``judging/judges/_test_card.html``) with the version alone and the card's own view (its
progress while a test runs) renders the same template."""

from django import template

from judging.judges.trust import TestCard, test_card
from judging.models import JudgeVersion

register = template.Library()


@register.simple_tag
def judge_test_card(version: JudgeVersion) -> TestCard:
    return test_card(version)
