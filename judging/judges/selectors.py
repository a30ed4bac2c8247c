"""Reading written judges: a version by the name a team gives (``minimalism`` for the newest
trusted version, ``minimalism@3`` for one), as a model row or as a strategy, and a version as
the JSON that ``judge_define`` reads back."""

import re
from typing import Any

from judging.models import JudgeVersion, WrittenJudge

from .answers import AnswerSpec, answer_spec
from .strategy import JudgeSpec, WrittenStrategy, written_strategy

VERSIONED = re.compile(r"^(?P<name>[^@\s]+)@(?P<number>\d{1,9})$")

UNKNOWN_JUDGE = "no written judge is named {name!r}"
UNKNOWN_VERSION = "judge {name!r} has no version {number}; its versions are 1 to {newest}"
NONE_TRUSTED = (
    "judge {name!r} has no trusted version yet: name a version with its number, "
    "e.g. {label} ({status})"
)
# The fields of a judge's JSON (``judge_export``, ``judge_define``), in their order.
EXPORT_FIELDS = ("name", "title", "template", "kind", "dimensions", "overall", "note")


class JudgeNotFound(ValueError):
    """No written judge or version answers to the name."""


def _parse(text: str) -> tuple[str, int | None]:
    match = VERSIONED.match(text.strip())
    if match:
        return match["name"], int(match["number"])
    return text.strip(), None


def judge_version_find(text: str) -> JudgeVersion | None:
    """The version ``text`` names (``name@3``, or ``name``: the newest trusted), or None when
    no judge has that name; ``JudgeNotFound`` when one has, but not that version, or no
    trusted one for a bare name."""
    name, number = _parse(text)
    versions = JudgeVersion.objects.filter(judge__name=name).select_related("judge")
    if number is not None:
        found = versions.filter(number=number).first()
        if found is not None:
            return found
    else:
        trusted = versions.filter(status=JudgeVersion.Status.TRUSTED).order_by("-number").first()
        if trusted is not None:
            return trusted
    newest = versions.order_by("-number").first()
    if newest is None:
        return None
    if number is not None:
        raise JudgeNotFound(UNKNOWN_VERSION.format(name=name, number=number, newest=newest.number))
    status = newest.get_status_display().lower()
    raise JudgeNotFound(NONE_TRUSTED.format(name=name, label=newest.label, status=status))


def judge_version_get(text: str) -> JudgeVersion:
    """``judge_version_find``, raising ``JudgeNotFound`` when no judge has the name."""
    version = judge_version_find(text)
    if version is None:
        raise JudgeNotFound(UNKNOWN_JUDGE.format(name=_parse(text)[0]))
    return version


def version_answer_spec(version: JudgeVersion) -> AnswerSpec:
    return answer_spec(version.kind, version.dimensions, version.overall)


def version_spec(version: JudgeVersion) -> JudgeSpec:
    return JudgeSpec(
        label=version.label,
        title=version.title,
        template=version.template,
        answer=version_answer_spec(version),
        status=version.status,
    )


def judge_export(text: str) -> dict[str, Any]:
    """The version ``text`` names (``name``: its newest version, trusted or not; ``name@3``)
    as the JSON ``judge_define`` reads: what it says, and which version it was."""
    name, number = _parse(text)
    if number is None:
        newest = (
            JudgeVersion.objects.filter(judge__name=name)
            .select_related("judge")
            .order_by("-number")
            .first()
        )
        if newest is None:
            raise JudgeNotFound(UNKNOWN_JUDGE.format(name=name))
        version = newest
    else:
        version = judge_version_get(text)
    return {
        "name": version.judge.name,
        "title": version.title,
        "template": version.template,
        "kind": version.kind,
        "dimensions": version.dimensions,
        "overall": version.overall,
        "note": version.note,
        "exported_from": {
            "version": version.number,
            "status": version.status,
            "author": version.author.get_username() if version.author else None,
            "created_at": version.created_at.isoformat(),
        },
    }


class WrittenJudges:
    """The ``StrategySource`` of written judges (``judging.strategies.registry``)."""

    def strategy(self, name: str) -> WrittenStrategy | None:
        version = judge_version_find(name)
        return None if version is None else written_strategy(version_spec(version))

    def names(self) -> list[str]:
        return list(WrittenJudge.objects.order_by("name").values_list("name", flat=True))
