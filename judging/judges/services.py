"""Writing written judges: a judge or a new version of it from its definition (a lead's form,
``manage.py judge_define``), and a version's status.

A definition is checked whole before anything is written: its name (a slug no built-in
strategy has), title, template (``template``), answer kind with its dimensions and overall
score (``answers``). A version is never changed once written (``JudgeVersion.save``): a
changed definition is a new version, numbered after the newest, with its author and note.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from judging.models import JudgeTest, JudgeVersion, WrittenJudge
from judging.strategies import STRATEGIES
from sejury_web.audit import audit_record

from .answers import AnswerSpec, AnswerSpecError, answer_spec
from .template import TemplateError, template_placeholders

# The starter judges leads copy and edit, as ``judge_define`` files (the demo defines them).
STARTERS = Path(__file__).resolve().parent / "starters"
NAME = re.compile(r"^[a-z][a-z0-9-]{0,23}$")
FIELDS = ("name", "title", "template", "kind", "dimensions", "overall", "note")
IGNORED = ("exported_from",)  # what ``judge_export`` adds, for the reader

NOT_AN_OBJECT = "a judge's definition is a JSON object with " + ", ".join(FIELDS)
UNKNOWN_FIELD = "unknown field {field!r}; a judge's definition has " + ", ".join(FIELDS)
MISSING = "{field}: missing"
NOT_TEXT = "{field}: must be text"
BAD_NAME = (
    "name: {name!r} must be 1 to 24 lowercase letters, digits or hyphens, starting with a "
    "letter (a team names it, as in 's1b,{example}')"
)
BUILT_IN = "name: {name!r} is a built-in strategy's; choose another"
# Names a judge cannot have: the Judges pages' own paths (``judges/new/``).
RESERVED = frozenset({"new"})
RESERVED_NAME = "name: {name!r} is reserved for a page; choose another"
LONG_TITLE = "title: at most 200 characters"
BAD_TEMPLATE = "template: {error}"
BAD_ANSWER = "{field}: {error}"
JUDGE_VERSION_STATUS = "judge_version_status"
UNTESTED_TRUST = "{label} is untested: a version is trusted only once it is tested"
UNMEASURED_TRUST = (
    "{label} is not measured yet: a version is trusted only once a test has measured it on"
    " the quality ladders and on the labelled patches"
)
TAKEN = "name: a judge named {name!r} exists; choose another, or edit it on its page"


class JudgeDefinitionError(ValueError):
    """A judge's definition that cannot be used; the message names the field."""


@dataclass(frozen=True)
class Definition:
    """A judge's definition, checked."""

    name: str
    title: str
    template: str
    answer: AnswerSpec
    note: str

    def same_as(self, version: JudgeVersion) -> bool:
        return (
            version.title == self.title
            and version.template == self.template
            and version.kind == self.answer.kind
            and version.dimensions == [d.as_json() for d in self.answer.dimensions]
            and version.overall == self.answer.overall
        )


def _text(data: dict[str, Any], field: str, *, required: bool = True) -> str:
    if field not in data:
        if required:
            raise JudgeDefinitionError(MISSING.format(field=field))
        return ""
    value = data[field]
    if not isinstance(value, str):
        raise JudgeDefinitionError(NOT_TEXT.format(field=field))
    return value


def definition_check(data: Any) -> Definition:
    """``data`` (a judge's JSON) checked; ``JudgeDefinitionError`` naming the first problem."""
    if not isinstance(data, dict):
        raise JudgeDefinitionError(NOT_AN_OBJECT)
    for field in data:
        if field not in FIELDS and field not in IGNORED:
            raise JudgeDefinitionError(UNKNOWN_FIELD.format(field=field))
    name = _text(data, "name").strip()
    if not NAME.match(name):
        raise JudgeDefinitionError(BAD_NAME.format(name=name, example="minimalism"))
    if name in STRATEGIES:
        raise JudgeDefinitionError(BUILT_IN.format(name=name))
    if name in RESERVED:
        raise JudgeDefinitionError(RESERVED_NAME.format(name=name))
    title = _text(data, "title").strip()
    if not title:
        raise JudgeDefinitionError(MISSING.format(field="title"))
    if len(title) > 200:
        raise JudgeDefinitionError(LONG_TITLE)
    template = _text(data, "template")
    try:
        template_placeholders(template)
    except TemplateError as error:
        raise JudgeDefinitionError(BAD_TEMPLATE.format(error=error)) from None
    kind = _text(data, "kind")
    overall = _text(data, "overall", required=False)
    dimensions = data.get("dimensions") or []
    if not isinstance(dimensions, list):
        raise JudgeDefinitionError(BAD_ANSWER.format(field="dimensions", error="must be a list"))
    try:
        answer = answer_spec(kind, dimensions, overall)
    except AnswerSpecError as error:
        field = "kind" if kind not in JudgeVersion.Kind.values else "dimensions"
        raise JudgeDefinitionError(BAD_ANSWER.format(field=field, error=error)) from None
    note = _text(data, "note", required=False).strip()
    return Definition(name, title, template, answer, note)


def judge_define(*, data: Any, actor: User | None, new: bool = False) -> tuple[JudgeVersion, bool]:
    """The judge ``data`` defines, as a new version (and the judge, if new), with ``actor``
    as its author; or its newest version unchanged (``False``) when that says the same.
    ``JudgeDefinitionError`` refuses a bad definition and writes nothing; with ``new``, also
    a name some judge has (a lead's *new judge* form: a copy never becomes another's version)."""
    definition = definition_check(data)
    with transaction.atomic():
        judge, created = WrittenJudge.objects.select_for_update().get_or_create(
            name=definition.name, defaults={"created_by": actor if actor and actor.pk else None}
        )
        if new and not created:
            raise JudgeDefinitionError(TAKEN.format(name=definition.name))
        newest = judge.versions.order_by("-number").first()
        if newest is not None and definition.same_as(newest):
            return newest, False
        version = JudgeVersion.objects.create(
            judge=judge,
            number=(newest.number if newest else 0) + 1,
            title=definition.title,
            template=definition.template,
            kind=definition.answer.kind,
            dimensions=[d.as_json() for d in definition.answer.dimensions],
            overall=definition.answer.overall,
            note=definition.note,
            author=actor if actor and actor.pk else None,
        )
    return version, True


def judge_version_status_set(*, version: JudgeVersion, status: str, actor: User | None) -> None:
    """Mark ``version`` untested, tested or trusted (audited). A version is trusted only once
    a test measured it on both the quality ladders and the labelled patches
    (``testing.judge_test_start``): untested, or without a measured test, it is refused."""
    if status not in JudgeVersion.Status.values:
        raise ValueError(f"unknown status {status!r}")
    if status == JudgeVersion.Status.TRUSTED and version.status == JudgeVersion.Status.UNTESTED:
        raise ValueError(UNTESTED_TRUST.format(label=version.label))
    if (
        status == JudgeVersion.Status.TRUSTED
        and not version.tests.filter(status=JudgeTest.Status.MEASURED).exists()
    ):
        raise ValueError(UNMEASURED_TRUST.format(label=version.label))
    with transaction.atomic():
        before = version.status
        version.status = status
        version.save(update_fields=["status"])
        audit_record(
            actor=actor,
            action=JUDGE_VERSION_STATUS,
            target=version,
            detail={"from": before, "to": status},
        )
