"""Blind by construction: an annotator can open no URL that shows a judge's verdict, model
output other than the golden rubric, a draft rubric, or another annotator's label or note,
nor a patch's key (keys can name the repair tool that wrote the patch): annotators are told
a patch's bug and its place in their queue.

Every named URL of the URLconf is visited as an annotator, its arguments filled with the
keys and ids of every object the test made. Each answer must refuse (403, 404, 405), send
elsewhere (a redirect), or be a page without any of the secret strings below. A privileged
user's crawl of the same URLs must find every secret, so that the strings really are on
some page and the annotator's crawl can fail.
"""

import dataclasses
import itertools
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, User
from django.core.paginator import Page
from django.db.models import Manager, Model, QuerySet
from django.forms import BaseForm
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.converters import IntConverter
from django.urls.exceptions import NoReverseMatch

from judging.annotations.services import annotation_record
from judging.dimensions import Dimension
from judging.judges.services import judge_define
from judging.models import (
    Adjudication,
    Annotation,
    Campaign,
    JudgingRun,
    PatchJudgment,
    RejectionTheme,
    StrategyResult,
)
from rubrics.models import Bug, Dataset, Patch, Rubric
from sejury_web.ids import IdConverter
from sejury_web.llm.models import LLMCall
from sejury_web.roles import Role
from sejury_web.users import user_create
from tests.helpers import PASSWORD
from tests.judging.factories import create_campaign
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff, rubric_for

pytestmark = pytest.mark.django_db

# What an annotator must never see. Each is unique, so that finding it means a leak.
JUDGE_REASONING = "JUDGE-REASONING-qv7x: the candidate keeps the off-by-one"
JUDGE_RUN_NAME = "JUDGE-RUN-NAME-kd4p"
JUDGE_ERROR = "JUDGE-ERROR-ty2m"
LLM_OUTPUT = "LLM-RAW-OUTPUT-wz9c"
LLM_PROMPT = "LLM-PROMPT-hn3b"
DRAFT_RUBRIC = "DRAFT-RUBRIC-TEXT-mf6r"
PENDING_RUBRIC = "PENDING-EDIT-TEXT-cu8j"
OTHER_NOTE = "OTHER-ANNOTATOR-NOTE-pa5e"
OTHER_NAME = "other-rater-gl1s"
ADJUDICATION_NOTE = "ADJUDICATION-NOTE-rb0y"
REJECTION_RATIONALE = "REJECTION-THEME-RATIONALE-xe4k"
# The harness's test evidence (issue 27 item 7): the tests a patch failed, and why it was not
# evaluated, are for leads and reviewers; an annotator judges the patch without them.
FAILING_TEST = "TEST-EVIDENCE-FAILING-test_vd3q"
TESTS_NOTE = "TEST-EVIDENCE-NOTE-not-evaluated-jm2s"
# A written judge (issue 29) rating the campaign's dimension: its criteria and its ratings
# are a judge's, never shown to an annotator, who rates the same dimension blind.
WRITTEN_JUDGE = "blind-judge"
WRITTEN_TEMPLATE = "WRITTEN-JUDGE-TEMPLATE-c8vn"
WRITTEN_RATING_REASON = "WRITTEN-JUDGE-RATING-REASON-u1ke"
WRITTEN_RATING = 4
SECRETS = [
    JUDGE_REASONING,
    JUDGE_RUN_NAME,
    JUDGE_ERROR,
    LLM_OUTPUT,
    LLM_PROMPT,
    DRAFT_RUBRIC,
    PENDING_RUBRIC,
    OTHER_NOTE,
    OTHER_NAME,
    ADJUDICATION_NOTE,
    REJECTION_RATIONALE,
    FAILING_TEST,
    TESTS_NOTE,
    WRITTEN_TEMPLATE,
    WRITTEN_RATING_REASON,
]
# What the privileged crawl must find: today's pages show these to leads and reviewers
# (an adjudication's note may have no page yet; the annotator must not see it either way).
SHOWN_TO_LEADS = [s for s in SECRETS if s != ADJUDICATION_NOTE]
# A dimension the campaign rates: the other annotator's rating is never the page's checked one.
DIMENSION, OTHER_RATING, OWN_RATING = "maintainability", 5, 2
RATED = 'value="{value}" id="rating-maintainability-{value}" checked'
# Patch keys, unique too: an annotator's page and URL must show none.
PATCH_KEY = "PATCH-KEY-tool-zt3w-{n}"
GOLDEN_RUBRIC = "GOLDEN-RUBRIC-TEXT-ok"  # the one model-derived text annotators may read
REFUSED = {403, 404, 405}
REDIRECTS = {301, 302}
MAX_COMBINATIONS = 400
FIRST_PLACES = range(1, 6)  # a campaign's queue positions, as the annotator's pages link them
PROJECT_APPS = {"rubrics", "judging", "llm"}
# Context from the context processors and the template engine, the same on every page.
CONTEXT_PROCESSOR_KEYS = {
    "user",
    "perms",
    "request",
    "messages",
    "DEFAULT_MESSAGE_LEVELS",
    "csrf_token",
    "user_roles",
    "is_lead",
    "is_reviewer",
    "is_annotator",
    "block",
    "forloop",
    "True",
    "False",
    "None",
}


@pytest.fixture
def world(annotator: User) -> dict[str, Any]:
    """A dataset with a finished judging run, model calls, rubric drafts and a pending edit,
    another annotator's labels and notes, an adjudication, and a campaign for ``annotator``."""
    dataset = DatasetFactory(name="Blind demo", slug="blind-demo")
    first = BugFactory(dataset=dataset, key="BLIND-1")
    second = BugFactory(dataset=dataset, key="BLIND-2")
    rubric_for(
        first,
        draft=f"## Root cause\n\n{DRAFT_RUBRIC}",
        golden=GOLDEN_RUBRIC,
        pending=PENDING_RUBRIC,
    )
    rubric_for(second, draft=f"## Requirements\n\n1. {DRAFT_RUBRIC} again")
    patches = [
        PatchFactory(
            bug=bug,
            key=PATCH_KEY.format(n=n),
            diff=make_diff(new=f"x = {n + 7}"),
            tests_status={
                "FAIL_TO_PASS": {"success": [], "failure": [FAILING_TEST]},
                "PASS_TO_PASS": {"success": ["test_kept"], "failure": []},
            },
            tests_note=TESTS_NOTE,
        )
        for n, bug in enumerate([first, first, second, second])
    ]
    call = LLMCall.objects.create(
        purpose="judge.rubric",
        provider="openai",
        model="gpt-test",
        request_hash="0" * 64,
        messages=[{"role": "user", "content": f"Judge this. {LLM_PROMPT}"}],
        status=LLMCall.Status.OK,
        raw_text=f'{{"verdict": "INVALID", "thought": "{LLM_OUTPUT}"}}',
        answer={"verdict": "INVALID", "thought": LLM_OUTPUT},
    )
    written = judge_define(
        data={
            "name": WRITTEN_JUDGE,
            "title": "Blind judge",
            "template": f"{WRITTEN_TEMPLATE}\n{{{{ candidate_patch }}}}",
            "kind": "dimensions",
            "dimensions": [{"name": DIMENSION, "low": 1, "high": 5}],
        },
        actor=None,
    )[0]
    run = JudgingRun.objects.create(
        dataset=dataset,
        name=JUDGE_RUN_NAME,
        strategies=["rubric", written.label],
        context="golden",
        provider="openai",
        model="gpt-test",
        status=JudgingRun.Status.FINISHED,
    )
    for n, patch in enumerate(patches):
        failed = n == 3
        judgment = PatchJudgment.objects.create(
            run=run,
            patch=patch,
            status=PatchJudgment.Status.FAILED if failed else PatchJudgment.Status.DONE,
            score=None if failed else 12.0,
            verdict="" if failed else "INVALID",
            error=JUDGE_ERROR if failed else "",
        )
        StrategyResult.objects.create(
            judgment=judgment,
            strategy="rubric",
            status="failed" if failed else "done",
            score=None if failed else 0,
            verdict="" if failed else "INVALID",
            reasoning=JUDGE_REASONING,
            prompt_version="test",
            call_ids=[call.pk],
            provider_calls=1,
            cost_usd=Decimal("0.001"),
        )
        StrategyResult.objects.create(
            judgment=judgment,
            strategy=written.label,
            status="failed" if failed else "done",
            score=None if failed else 75,
            reasoning=JUDGE_REASONING,
            answers={
                "judge": {
                    "dimensions": {
                        DIMENSION: {"rating": WRITTEN_RATING, "reason": WRITTEN_RATING_REASON}
                    },
                    "reasoning": JUDGE_REASONING,
                }
            },
            prompt_version=f"written:{written.label}",
        )
        if not failed:  # why a test-passing patch was rejected (paper 004 §7)
            RejectionTheme.objects.create(
                judgment=judgment,
                status=RejectionTheme.Status.DONE,
                theme=RejectionTheme.Theme.ROOT_CAUSE,
                rationale=REJECTION_RATIONALE,
                strategy="rubric",
                justification=JUDGE_REASONING,
                prompt_version="test",
            )
    other = user_create(actor=None, username=OTHER_NAME, password=None, roles=[Role.ANNOTATOR])
    # The campaign rates a dimension too: the other annotator's ratings are never shown.
    campaign = create_campaign(
        dataset, [annotator, other], name="Blind round", purpose="calibration",
        dimensions=[Dimension(DIMENSION, 1, 5)],
    )  # fmt: skip
    for patch in patches:
        annotation_record(
            campaign=campaign, annotator=other, patch=patch, label="INVALID", note=OTHER_NOTE,
            ratings={DIMENSION: OTHER_RATING},
        )  # fmt: skip
    annotation_record(
        campaign=campaign, annotator=annotator, patch=patches[0], label="VALID",
        ratings={DIMENSION: OWN_RATING},
    )  # fmt: skip
    # Another campaign of the other annotator alone, and a patch labelled outside campaigns.
    create_campaign(dataset, [other], name="Theirs only", overlap=1, show_rubric=False)
    extra = PatchFactory(bug=second, key=PATCH_KEY.format(n="extra"), diff=make_diff(new="x = 99"))
    Annotation.objects.create(
        patch=extra, annotator=other, label="VALID", note=OTHER_NOTE, origin="imported"
    )
    Adjudication.objects.create(patch=patches[1], label="INVALID", note=ADJUDICATION_NOTE)
    return {"dataset": dataset, "campaign": campaign}


def _named_patterns(
    resolver: URLResolver, namespace: str = "", inherited: frozenset[str] = frozenset()
) -> Iterator[tuple[str, list[str], set[str]]]:
    """Every named URL pattern: its reversible name, its argument names, and which are ints."""
    for pattern in resolver.url_patterns:
        groups = set(pattern.pattern.regex.groupindex)
        ints = {
            name
            for name, converter in getattr(pattern.pattern, "converters", {}).items()
            if isinstance(converter, IntConverter | IdConverter)
        }
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            for name, arguments, int_names in _named_patterns(pattern, inner, inherited | groups):
                yield name, arguments, int_names | ints
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}{pattern.name}", sorted(inherited | groups), ints


def _project_models() -> list[type[Any]]:
    """The kinds of objects the project's pages may show: its apps' models, users, groups."""
    return [
        model
        for model in apps.get_models()
        if model._meta.app_label in PROJECT_APPS or model in (User, Group)
    ]


def _ids(models: list[type[Any]]) -> list[int]:
    return sorted(
        {pk for model in models for pk in model._default_manager.values_list("pk", flat=True)}
    )


def _int_pool(name: str, every_id: list[int]) -> list[int]:
    """Ids of the model the argument names (``run_id``: runs, ``judgment_id``: patch
    judgments), or when it names none (``position``) the first places and the ids of every
    kind of object (on PostgreSQL, ids do not start again at 1 in each test)."""
    if name == "number":  # a written judge's version: the world's judge has one
        return [1, 2]
    stem = name.removesuffix("_id").replace("_", "")
    names = {model: model._meta.model_name or "" for model in _project_models()}
    models = [m for m, n in names.items() if n == stem] or [
        m for m, n in names.items() if n.endswith(stem)
    ]
    if not models:
        return sorted({*FIRST_PLACES, *every_id})
    # A kind without objects in this test still gets its URL visited, with any id.
    return _ids(models) or every_id


def _str_pool(name: str) -> list[str]:
    pools: dict[str, list[str]] = {
        "slug": list(Dataset.objects.values_list("slug", flat=True)),
        "bug_key": list(Bug.objects.values_list("key", flat=True)),
        "patch_key": list(Patch.objects.values_list("key", flat=True)),
        "variant": list(Rubric.Variant.values),
        "app_label": sorted({model._meta.app_label for model in apps.get_models()}),
        "judge_name": [WRITTEN_JUDGE],
    }
    return pools.get(name, ["1"])


def every_url() -> Iterator[tuple[str, str]]:
    """(pattern name, URL) for every named pattern and every way to fill its arguments."""
    every_id = _ids(_project_models())
    unreachable = []
    for name, arguments, ints in _named_patterns(get_resolver()):
        pools = [_int_pool(a, every_id) if a in ints else _str_pool(a) for a in arguments]
        reached = False
        for values in itertools.islice(itertools.product(*pools), MAX_COMBINATIONS):
            try:
                url = reverse(name, kwargs=dict(zip(arguments, values, strict=True)))
            except NoReverseMatch:
                continue
            reached = True
            yield name, url
        if not reached:
            unreachable.append(name)
    # Only the admin's catch-alls may be impossible to fill; every app page must be visited.
    assert all(name.startswith("admin:") for name in unreachable), unreachable


def _model_values(value: Any, depth: int = 0) -> Iterator[Any]:
    """Model instances, querysets and managers reachable from a context value through
    dataclasses, containers, pages and forms' fields."""
    if depth > 6 or isinstance(value, str | int | float | bool | None):
        return
    if isinstance(value, Model | QuerySet | Manager):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _model_values(getattr(value, field.name), depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _model_values(item, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _model_values(item, depth + 1)
    elif isinstance(value, Page):
        yield from _model_values(list(value.object_list), depth + 1)
    elif isinstance(value, BaseForm):
        for form_field in value.fields.values():
            yield from _model_values(getattr(form_field, "queryset", None), depth + 1)


def _context(response: Any) -> dict[str, Any]:
    """Every variable of every template the response rendered (the first value of each)."""
    context = response.context
    if hasattr(context, "flatten"):
        return dict(context.flatten())
    return {key: context[key] for key in context.keys()}  # noqa: SIM118 - a ContextList


def _body(response: Any) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return str(response.content.decode())


# Whole pages, and the fragments htmx asks for: two tests, which pytest-xdist runs side by side.
@pytest.mark.parametrize("headers", [{}, {"HTTP_HX_REQUEST": "true"}], ids=["page", "htmx"])
def test_an_annotator_sees_no_verdict_no_model_output_and_no_other_label(
    world: dict[str, Any], annotator: User, headers: dict[str, str]
) -> None:
    client = Client()
    client.force_login(annotator)
    visited: dict[str, int] = {}
    pages = []
    keys = list(Patch.objects.values_list("key", flat=True))
    for name, url in every_url():
        response = client.get(url, **headers)
        visited[url] = response.status_code
        if response.status_code in REFUSED | REDIRECTS:
            continue
        assert response.status_code == 200, (name, url, response.status_code)
        html = _body(response)
        leaked = [secret for secret in SECRETS if secret in html]
        leaked += [
            RATED.format(value=v)
            for v in (OTHER_RATING, WRITTEN_RATING)
            if RATED.format(value=v) in html
        ]
        assert not leaked, f"{url} ({name}) shows {leaked}"
        named = [key for key in keys if key in html or key in url]
        assert not named, f"{url} ({name}) names the patches {named}"
        if name.startswith("judging:"):
            # By construction: the page's own context holds plain values, from which no
            # template could reach another annotator's label or a verdict.
            found = {
                key: list(_model_values(value))
                for key, value in _context(response).items()
                if key not in CONTEXT_PROCESSOR_KEYS
            }
            assert not any(found.values()), (url, {k: v for k, v in found.items() if v})
        pages.append(html)
    # The crawl reached the annotator's own pages, the labelling pages among them.
    campaign: Campaign = world["campaign"]
    own = reverse("judging:annotate", args=[campaign.pk, 1])
    assert visited[own] == 200
    # The labelling pages showed the dimension's scale, and the annotator's own rating.
    assert any(RATED.format(value=OWN_RATING) in html for html in pages)
    assert sum('id="rating-maintainability-5"' in html for html in pages) >= 4
    assert visited[reverse("judging:my_labels")] == 200
    assert any(GOLDEN_RUBRIC in html for html in pages)
    # Each patch is told by its bug and its place instead.
    assert any("Bug BLIND-" in html and "patch 1 of 4 in Blind round" in html for html in pages)
    assert len(visited) > 100


def test_the_secrets_are_on_pages_that_others_may_open(world: dict[str, Any]) -> None:
    """Without this, the annotator's crawl could pass because no page shows the strings."""
    boss = User.objects.create_user(username="boss", password=PASSWORD, is_superuser=True)
    client = Client()
    client.force_login(boss)
    missing = {*SHOWN_TO_LEADS, PATCH_KEY.format(n=0)}
    for _name, url in every_url():
        if not missing:
            break
        response = client.get(url)
        if response.status_code == 200:
            html = _body(response)
            missing -= {secret for secret in missing if secret in html}
    assert not missing
