"""No 500, whatever the input: every URL of the URLconf and every operation of the API's
served document answer below 500 to hostile values in every place a value goes.

Pages: every pattern of Django's resolver (named or not), as an annotator and as a lead.
Each path argument is given a value its converter lets through but no object has (a number
past 64 bits, a long string with a NUL and right-to-left text); then, with good arguments
(the world below), if the role may open the page at all: each query parameter the view's
module reads (found in its source) or the page's links and forms name is given, alone, the
values that trap an id (past 64 bits, a digit ``int()`` refuses, one it takes that is not
ASCII), and all of them together each other hostile value in turn; each form of the page is
posted with every field hostile (Django validates every field, so together is enough) and
hostile files; every URL is posted a JSON body nested 50,000 deep and bytes that are not
text.

The API: every operation of ``/api/v1/openapi.json``, with a lead's token and an annotator's,
each path and query parameter alone given the id traps, then all of them each other hostile
value; a body nested 50,000 deep, one that is not JSON, one of the wrong content type, and
one whose every field is hostile.

Django's test client, not a server; one test per role (the lead's page walk in two halves), so
that pytest-xdist spreads them. A failure lists every request that answered 5xx, with
its exception.
"""

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import QueryDict
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.urls.converters import get_converters
from django.utils.datastructures import MultiValueDict

from api.tokens import token_create
from judging.judges.services import judge_define
from judging.models import Label
from rubrics.models import BundleUpload, DraftBatch, Patch, Rubric
from sejury_web.ids import MAX_ID
from tests.judging.factories import create_campaign, finished_run, make_golden
from tests.rubrics.factories import BugFactory, DatasetFactory, PatchFactory, make_diff

pytestmark = pytest.mark.django_db

# A written judge, for the Judges pages' ``judge_name`` and version ``number``.
STARTER = {
    "name": "walked",
    "title": "Walked judge",
    "template": "{{ bug }}\n{{ candidate_patch }}",
    "kind": "dimensions",
    "dimensions": [{"name": "security", "low": 1, "high": 5, "description": "holes"}],
}

ROOT = Path(__file__).resolve().parent.parent
PAST_INT64 = str(2**63)
DEEP = "[" * 50_000 + "]" * 50_000
# Each alone in each parameter: what breaks an id on its way to a query.
ID_TRAPS = [PAST_INT64, "²", "٣"]  # past 64 bits; isdigit() but not int(); int() but not ASCII
# All parameters at once, one value after another.
HOSTILE = [
    "99999999999999999999",
    "-1",
    "0",
    "1.5",
    "1e999",
    "abc",
    "",
    "\u202e漢字\x00",
    "x" * 5000,
    "[" * 2000,
]
# In a path, one value a converter lets through: digits for ``int``/``id``, text otherwise.
PATH_HOSTILE = {"int": PAST_INT64, "slug": "a" * 500, "str": quote("\u202e漢字\x00" + "x" * 500)}
HOSTILE_FILES = [
    ("deep.jsonl", DEEP.encode()),
    ("deep.json", ("[\n" + DEEP + "]").encode()),
    ("numbers.json", b'[{"id": 99999999999999999999, "x": 1e999, "y": NaN}]'),
    ("latin1.jsonl", b"\xff\xfe\x00{"),
]
# What the URL walk leaves out: logging out ends the walk's session; the admin (Django's,
# for staff only) and the API's document are walked by their own tests.
NOT_WALKED = {"logout", "api-v1:openapi-json"}
READ = re.compile(
    r"""(?:request\.(?:GET|POST|FILES)|\b(?:data|query|params))"""
    r"""(?:\.get|\.getlist|\.pop)?[\(\[]\s*["']([A-Za-z0-9_-]+)["']"""
)
ARGUMENT = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


@dataclass
class Form:
    method: str
    action: str
    values: dict[str, str] = field(default_factory=dict)  # each field's value as shown
    files: set[str] = field(default_factory=set)


class Page(HTMLParser):
    """A page's forms: method, action, and each field with the value the page gives it (a
    select's chosen or first option, a checked box's)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._open: Form | None = None
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        form, name = self._open, found.get("name", "")
        if tag == "form":
            self._open = Form(found.get("method", "get").lower() or "get", found.get("action", ""))
            self.forms.append(self._open)
        elif form is None:
            return
        elif tag == "input" and name:
            if found.get("type") == "file":
                form.files.add(name)
            elif found.get("type") not in ("checkbox", "radio") or "checked" in found:
                form.values[name] = found.get("value", "")
            else:
                form.values.setdefault(name, "")
        elif tag == "select" and name:
            self._select = name
            form.values.setdefault(name, "")
        elif tag == "option" and self._select:
            if "selected" in found or not form.values.get(self._select):
                form.values[self._select] = found.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            form.values[name] = ""

    def handle_data(self, data: str) -> None:
        if self._open is not None and self._textarea:
            self._open.values[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._open = None
        elif tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None


class Reading:
    """The names a request's handling read from its query, form and files (by name: a
    view that iterates them all reads those the page sent)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: set[str] = set()
        getitem, getlist = MultiValueDict.__getitem__, MultiValueDict._getlist

        def read_item(data: MultiValueDict, key: str) -> Any:
            self.note(data, key)
            return getitem(data, key)

        def read_list(data: MultiValueDict, key: str, *args: Any, **kwargs: Any) -> Any:
            self.note(data, key)
            return getlist(data, key, *args, **kwargs)

        def contains(data: MultiValueDict, key: object) -> bool:
            self.note(data, key)
            return dict.__contains__(data, key)

        monkeypatch.setattr(MultiValueDict, "__getitem__", read_item)
        monkeypatch.setattr(MultiValueDict, "_getlist", read_list)
        monkeypatch.setattr(MultiValueDict, "__contains__", contains, raising=False)

    def note(self, data: MultiValueDict, key: object) -> None:
        if isinstance(data, QueryDict) and isinstance(key, str):
            self.names.add(key)

    def take(self) -> set[str]:
        names, self.names = self.names, set()
        return names


@dataclass(frozen=True)
class Route:
    pieces: tuple[str, ...]  # the route of each level, ``<int:run_id>`` kept
    name: str
    callback: Any
    regex: bool  # a regular expression somewhere (the admin's): not walked

    @property
    def arguments(self) -> list[tuple[str, str]]:
        """``(name, converter)`` of each argument."""
        return [
            (m.group("name"), m.group("converter") or "str")
            for m in ARGUMENT.finditer("".join(self.pieces))
        ]

    def url(self, values: dict[str, str]) -> str:
        return "/" + ARGUMENT.sub(lambda m: values[m.group("name")], "".join(self.pieces))


def routes(
    resolver: URLResolver, prefix: tuple[str, ...] = (), namespace: str = ""
) -> Iterator[Route]:
    for pattern in resolver.url_patterns:
        piece = str(pattern.pattern)
        regex = not hasattr(pattern.pattern, "_route")
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            for route in routes(pattern, (*prefix, piece), inner):
                yield Route(route.pieces, route.name, route.callback, route.regex or regex)
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}{pattern.name or ''}"
            yield Route((*prefix, piece), name, pattern.callback, regex)


def kind(converter: str) -> str:
    """What a converter lets through: ``int`` for digits only."""
    registered = get_converters().get(converter)
    if registered is not None and registered.regex == "[0-9]+":
        return "int"
    return converter if converter in PATH_HOSTILE else "str"


def names_read(callback: Any) -> set[str]:
    """The query and form parameters the view's module reads by name."""
    view = inspect.unwrap(getattr(callback, "view_class", callback))
    module = inspect.getmodule(view)
    if module is None or not module.__name__.startswith(("sejury_web", "rubrics", "judging")):
        return set()
    return set(READ.findall(inspect.getsource(module)))


@pytest.fixture
def world(lead: User, annotator: User) -> dict[str, str]:
    """Good values of every path argument: a dataset with bugs and patches, a golden rubric,
    a finished run, a campaign of the annotator, an upload, a draft batch, a token."""
    dataset = DatasetFactory(name="Hostile", slug="hostile")
    bugs = [BugFactory(dataset=dataset, key=f"HOST-{n}") for n in (1, 2)]
    patches = [
        PatchFactory(bug=bug, key=f"{bug.key}-{n}", diff=make_diff(new=f"x = {n + 3}"))
        for bug in bugs
        for n in (0, 1)
    ]
    make_golden(bugs[0])
    verdicts: dict[Patch, tuple[str, dict[str, dict[str, Any]]]] = {
        patch: (Label.VALID if n % 2 else Label.INVALID, {}) for n, patch in enumerate(patches)
    }
    run = finished_run(dataset, verdicts, team=["rubric"])
    campaign = create_campaign(dataset, [annotator], overlap=1)
    upload = BundleUpload.objects.create(
        dataset_name=dataset.name, filename="b.jsonl", path="uploads/none", size=1
    )
    batch = DraftBatch.objects.create(dataset=dataset, variant=Rubric.Variant.TEMPLATED)
    token = token_create(actor=None, user=lead, name="walk").record
    judge = judge_define(data=STARTER, actor=lead)[0]
    judgment = run.judgments.order_by("pk").first()
    assert judgment is not None
    return {
        "slug": str(dataset.slug),
        "name": str(dataset.slug),
        "bug_key": str(bugs[0].key),
        "patch_key": str(patches[0].key),
        "variant": Rubric.Variant.TEMPLATED,
        "run_id": str(run.pk),
        "judgment_id": str(judgment.pk),
        "patch_id": str(patches[0].pk),
        "campaign_id": str(campaign.pk),
        "position": "1",
        "calibration_id": "1",
        "upload_id": str(upload.pk),
        "batch_id": str(batch.pk),
        "rubric_id": str(Rubric.objects.get(bug=bugs[0]).pk),
        "user_id": str(annotator.pk),
        "token_id": str(token.pk),
        "judge_name": judge.judge.name,
        "number": str(judge.number),
    }


@dataclass
class Walk:
    client: Client
    failures: list[str] = field(default_factory=list)
    sent: int = 0
    done: set[tuple[str, str, str]] = field(default_factory=set)  # (method, URL, name) walked

    def send(self, method: str, url: str, **kwargs: Any) -> Any:
        self.sent += 1
        response = getattr(self.client, method)(url, **kwargs)
        if response.status_code >= 500:
            exc_info = getattr(response, "exc_info", None)
            error = repr(exc_info[1])[:300] if exc_info else ""
            data = str(kwargs.get("data", ""))[:120]
            self.failures.append(
                f"{method.upper()} {url[:160]} {data}: {response.status_code} {error}"
            )
        return response


NASTY = "\u202e漢字\x00" + "x" * 3000 + "[" * 1000  # NUL, right-to-left, CJK, long, unbalanced
# Each alone in each parameter: past 64 bits; isdigit() but not int(); in an "id:count"; text.
VALUES = [PAST_INT64, "²", f"{PAST_INT64}:²", NASTY]
# A posted form is validated field by field (Django's forms check every field): each field
# alone with these, then all fields at once with each of TOGETHER.
POSTED = [PAST_INT64, NASTY]
TOGETHER = ["²", "-1", "1e999", ""]
REFUSED = (302, 403, 404)
LOGOUT = "/accounts/logout/"
CSRF = "csrfmiddlewaretoken"  # the test client does not check it


def walk_route(walk: Walk, reading: Reading, route: Route, world: dict[str, str]) -> None:
    url = route.url(world)
    reading.take()
    page = walk.send("get", url)
    method = "get"
    if page.status_code == 405:  # a form's target
        method = "post"
        page = walk.send("post", url)
    read = reading.take()
    if page.status_code in REFUSED and not route.name.startswith("api-v1:"):
        return  # the role may not open it: refused before any parameter is read
    for argument, converter in route.arguments:
        walk.send(method, route.url({**world, argument: PATH_HOSTILE[kind(converter)]}))
    found = Page()
    if page.status_code == 200 and "html" in page.get("Content-Type", ""):
        found.feed(page.content.decode())
    targets: list[tuple[str, str, dict[str, str], set[str]]] = [(method, url, {}, set())]
    targets += [
        (form.method, form.action or url, form.values, form.files)
        for form in found.forms
        if (form.method == "post" or form.action not in ("", url)) and form.action != LOGOUT
    ]
    for how, target, good, files in targets:
        if (how, target) != (method, url):
            reading.take()
            walk.send(how, target, data=good)
            read = reading.take()
        pattern = resolve(urlsplit(target).path).route  # one form, whichever page shows it
        queue = sorted(
            n for n in read | set(good) if (how, pattern, n) not in walk.done and n != CSRF
        )
        while queue:
            name = queue.pop()
            walk.done.add((how, pattern, name))
            for value in VALUES if how == "get" else POSTED:
                walk.send(how, target, data={**good, name: value})
            new = reading.take() - {n for h, r, n in walk.done if (h, r) == (how, pattern)}
            queue += sorted(new - set(queue) - {CSRF})
        if how == "post" and (how, pattern, "") not in walk.done:
            walk.done.add((how, pattern, ""))
            names = [n for h, r, n in sorted(walk.done) if (h, r) == (how, pattern) and n]
            for value in TOGETHER:
                walk.send(how, target, data={**good, **dict.fromkeys(names, value)})
        for name in sorted(files):
            for filename, content in HOSTILE_FILES:
                walk.send(
                    "post", target, data={**good, name: SimpleUploadedFile(filename, content)}
                )
    if method == "post" or any(form.method == "post" for form in found.forms):
        walk.send("post", url, data=DEEP, content_type="application/json")
        walk.send("post", url, data=b"\xff\xfe\x00", content_type="text/plain")


# django-axes counts the walk's posts to the login page as failed logins.
# One test per role, each on a world of its own (the lead's walk may close the campaign or
# change roles); the lead's, three times longer, in two halves of the URLconf (every other
# route). So pytest-xdist runs them side by side.
@override_settings(AXES_ENABLED=False)
@pytest.mark.parametrize(
    ("role", "half", "least"),
    [("annotator", None, 150), ("lead", 0, 250), ("lead", 1, 250)],
)
def test_no_page_answers_5xx_to_hostile_input(
    world: dict[str, str],
    role: str,
    half: int | None,
    least: int,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user: User = request.getfixturevalue(role)
    reading = Reading(monkeypatch)
    client = Client(raise_request_exception=False)
    walk = Walk(client)
    walked = [
        route
        for route in routes(get_resolver())
        if not (route.regex or route.name in NOT_WALKED or route.name.startswith("admin:"))
    ]
    for route in walked if half is None else walked[half::2]:
        client.force_login(user)
        walk_route(walk, reading, route, world)
    failures, sent = walk.failures, walk.sent
    assert sent > least
    assert not failures, f"{len(failures)} of {sent} requests answered 5xx:\n" + "\n".join(failures)


def api_walk(
    client: Client, document: dict[str, Any], world: dict[str, str], values: list[str]
) -> Walk:
    """Path, query and header parameters are validated together (pydantic reports every
    error at once): each hostile value is given to all of a kind at once, then each query
    parameter alone."""
    walk = Walk(client)
    schemas = document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            parameters = operation.get("parameters", [])
            kinds = {p["name"]: p["in"] for p in parameters}
            good = {name: world.get(name, "1") for name, where in kinds.items() if where == "path"}
            url = path.format(**good)
            queried = [name for name, where in kinds.items() if where == "query"]
            headers = [name for name, where in kinds.items() if where == "header"]
            for value in values:
                if good:
                    hostile = quote(value, safe="") or "%20"
                    walk.send(method, path.format(**dict.fromkeys(good, hostile)))
                if queried or headers:
                    sent = {
                        "HTTP_" + name.upper().replace("-", "_"): value
                        for name in headers
                        if "\x00" not in value and len(value) < 1000  # no header carries those
                    }
                    walk.send(method, f"{url}?{urlencode(dict.fromkeys(queried, value))}", **sent)
            # Valid, a parameter may still be refused by the operation before it reads the
            # next one: each alone with the id traps.
            for name in queried if len(queried) > 1 else []:
                for value in VALUES:
                    walk.send(method, f"{url}?{urlencode({name: value})}")
            bodies = operation.get("requestBody", {}).get("content", {})
            if not bodies:
                continue
            fields: list[str] = []
            for body in bodies.values():
                reference = body.get("schema", {}).get("$ref", "")
                fields += schemas.get(reference.rpartition("/")[2], {}).get("properties", {})
            for content_type in [*bodies, "text/plain"]:
                for data in (DEEP, "{not json", b"\xff\xfe\x00"):
                    walk.send(method, url, data=data, content_type=content_type)
            for value in values:
                number = int(value) if value.isascii() and value.lstrip("-").isdigit() else value
                body = dict.fromkeys(fields, number)
                walk.send(method, url, data=body, content_type="application/json")
            for filename, content in HOSTILE_FILES:
                walk.send(method, url, data={"file": SimpleUploadedFile(filename, content)})
    return walk


@override_settings(
    SEJURY_API={"RATE": 10**6, "RATE_WINDOW": 60, "AUTH_FAILURES": 10**6, "AUTH_FAILURE_WINDOW": 60}
)
@pytest.mark.parametrize(("role", "least"), [("annotator", 100), ("lead", 200)])
def test_no_api_operation_answers_5xx_to_hostile_input(
    world: dict[str, str], role: str, least: int, request: pytest.FixtureRequest
) -> None:
    user: User = request.getfixturevalue(role)
    document = Client().get(reverse("api-v1:openapi-json")).json()
    token = token_create(actor=None, user=user, name="hostile").token
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Bearer {token}")
    # An annotator is refused after validation: the id traps are enough to cross it.
    walk = api_walk(client, document, world, VALUES if role == "annotator" else VALUES + HOSTILE)
    failures, sent = walk.failures, walk.sent
    assert sent > least
    assert not failures, f"{len(failures)} of {sent} requests answered 5xx:\n" + "\n".join(failures)


def test_every_id_in_a_path_is_refused_past_64_bits_by_its_converter() -> None:
    """Django's ``<int:…>`` takes any number of digits: the URLs use ``<id:…>``, which
    matches nothing (a 404) past the largest row id, before any view or query."""

    def takes(converter: str, text: str) -> bool:
        try:
            get_converters()[converter].to_python(text)
        except ValueError:
            return False
        return True

    ids = [
        (route.name, argument, converter)
        for route in routes(get_resolver())
        for argument, converter in route.arguments
        if kind(converter) == "int"
    ]
    assert len(ids) > 20
    assert [i for i in ids if takes(i[2], PAST_INT64) or not takes(i[2], str(MAX_ID))] == []
