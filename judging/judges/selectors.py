"""Reading written judges: a version by the name a team gives (``minimalism`` for the newest
trusted version, ``minimalism@3`` for one), as a model row or as a strategy, and a version as
the JSON that ``judge_define`` reads back."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db.models import Prefetch

from judging.dimensions import Dimension, dimensions_of
from judging.models import JudgeVersion, JudgingRun, WrittenJudge
from judging.runs.cases import case_for
from judging.strategies import VERSIONED, StrategyError
from judging.strategies.prompts import SYSTEM
from rubrics.models import Bug, Dataset, Patch

from .answers import AnswerSpec, answer_spec
from .strategy import JudgeSpec, WrittenStrategy, written_strategy

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


def members_dimensions(team: list[str]) -> dict[str, list[Dimension]]:
    """The dimensions each written member of ``team`` (``name@N``, as a run records it)
    rates, in team order; members that rate none (other kinds, built-ins) left out. One
    query, none for a team without a written judge."""
    wanted = {parsed: member for member in team if (parsed := _parse(member))[1] is not None}
    if not wanted:
        return {}
    names = {name for name, _ in wanted}
    found: dict[str, list[Dimension]] = {}
    versions = JudgeVersion.objects.filter(
        judge__name__in=names, kind=JudgeVersion.Kind.DIMENSIONS
    ).values_list("judge__name", "number", "dimensions")
    for name, number, dimensions in versions:
        if (member := wanted.get((name, number))) is not None:
            found[member] = dimensions_of(dimensions)
    return {member: found[member] for member in team if member in found}


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


# -- The Judges pages --------------------------------------------------------------------------

# The starter templates a lead copies, in the order the Judges page offers them.
STARTER_NAMES = ("minimalism", "nonfunctional")
STARTERS_DIR = Path(__file__).resolve().parent / "starters"
# A preview's bug field suggests this many bugs of a dataset (the first, by key); any other
# is typed by its key, so a 10,000-bug dataset never puts 10,000 options in the page.
PREVIEW_BUGS = 200
UNKNOWN_PREVIEW_BUG = (
    "{dataset} has no bug {key!r} with a patch: type the key of one of its bugs "
    "(the list suggests the first {shown})"
)


@dataclass(frozen=True)
class JudgeRow:
    """A judge on the Judges page: its newest version and its newest trusted one."""

    judge: WrittenJudge
    newest: JudgeVersion
    trusted: JudgeVersion | None
    versions: int


def judges_overview() -> list[JudgeRow]:
    """Every written judge with a version, by name (two queries)."""
    judges = WrittenJudge.objects.order_by("name").prefetch_related(
        Prefetch("versions", queryset=JudgeVersion.objects.select_related("author"))
    )
    rows = []
    for judge in judges:
        versions = sorted(judge.versions.all(), key=lambda version: version.number)
        if not versions:
            continue
        trusted = [v for v in versions if v.status == JudgeVersion.Status.TRUSTED]
        rows.append(JudgeRow(judge, versions[-1], trusted[-1] if trusted else None, len(versions)))
    return rows


def judge_get(name: str) -> WrittenJudge:
    """The judge called ``name``; ``JudgeNotFound`` when none is."""
    judge = WrittenJudge.objects.filter(name=name).first()
    if judge is None:
        raise JudgeNotFound(UNKNOWN_JUDGE.format(name=name))
    return judge


def judge_versions(judge: WrittenJudge) -> list[JudgeVersion]:
    """The judge's versions, newest first, each with ``in_use`` (a run names it)."""
    versions = list(judge.versions.select_related("author", "judge").order_by("-number"))
    used = _used_labels(judge)
    for version in versions:
        version.in_use = version.label in used  # type: ignore[attr-defined]
    return versions


def _used_labels(judge: WrittenJudge) -> set[str]:
    """The labels of the judge's versions that judging runs name (one query)."""
    prefix = f"{judge.name}@"
    teams = JudgingRun.objects.filter(strategies__icontains=f'"{prefix}').values_list(
        "strategies", flat=True
    )
    return {member for team in teams for member in team or () if member.startswith(prefix)}


def judge_version_of(judge: WrittenJudge, number: int) -> JudgeVersion:
    """Version ``number`` of ``judge``; ``JudgeNotFound`` when it has none."""
    version = judge.versions.select_related("author", "judge").filter(number=number).first()
    if version is None:
        newest = judge.versions.order_by("-number").values_list("number", flat=True).first()
        raise JudgeNotFound(UNKNOWN_VERSION.format(name=judge.name, number=number, newest=newest))
    return version


def starter_definition(name: str) -> dict[str, Any] | None:
    """A starter template's definition (``judge_define``'s JSON), or None for no such starter."""
    if name not in STARTER_NAMES:
        return None
    data: dict[str, Any] = json.loads((STARTERS_DIR / f"{name}.json").read_text())
    return data


def starter_titles() -> list[tuple[str, str]]:
    """(name, title) of each starter template, in the page's order."""
    return [(name, (starter_definition(name) or {})["title"]) for name in STARTER_NAMES]


def team_judge_options() -> list[tuple[str, JudgeVersion]]:
    """The written judges a new run's team may name, as (what the team says, version): each
    judge's newest trusted version as its bare ``name``; and its newest version as ``name@N``
    when that one is not trusted (untested or tested, named only with its number)."""
    options = []
    for row in judges_overview():
        if row.trusted is not None:
            options.append((row.judge.name, row.trusted))
        if row.newest.status != JudgeVersion.Status.TRUSTED:
            options.append((row.newest.label, row.newest))
    return options


@dataclass(frozen=True)
class PromptPreview:
    """What a version asks of the model on one patch: the system and user messages as sent,
    and the answer schema its kind gives; or why the case cannot be shown (``problem``)."""

    system: str
    user: str
    schema: str
    problem: str = ""


def version_preview(version: JudgeVersion, patch: Patch, context: str) -> PromptPreview:
    """``version``'s prompt on ``patch`` (its ``bug`` loaded) in the run context ``context``:
    the messages a run would send, built by the run's own code (``case_for``, the strategy's
    ``user_message``)."""
    run = JudgingRun(dataset_id=patch.dataset_id, context=context)
    case = case_for(run, patch)
    strategy = written_strategy(version_spec(version))
    schema = json.dumps(strategy.spec.answer.schema, indent=2)
    try:
        user = strategy.user_message(case)
    except StrategyError as error:
        return PromptPreview(SYSTEM, "", schema, problem=str(error))
    return PromptPreview(SYSTEM, user, schema)


def preview_bugs(dataset: Dataset) -> list[Bug]:
    """The bugs of ``dataset`` that have patches, by key: the first ``PREVIEW_BUGS``, which
    the preview suggests (any other is typed by its key, ``preview_bug_problem``)."""
    return list(
        Bug.objects.filter(dataset=dataset, patches__isnull=False)
        .distinct()
        .order_by("sort_key")
        .only("id", "key", "dataset_id")[:PREVIEW_BUGS]
    )


def preview_bug_problem(dataset: Dataset, key: str) -> str:
    """Why the preview cannot show bug ``key`` of ``dataset`` (no such bug with a patch), or
    "" when it can."""
    if Patch.objects.filter(dataset=dataset, bug__key=key).exists():
        return ""
    return UNKNOWN_PREVIEW_BUG.format(dataset=dataset.name, key=key, shown=PREVIEW_BUGS)


def preview_patches(bug: Bug) -> list[Patch]:
    return list(bug.patches.order_by("sort_key").only("id", "key", "bug_id", "dataset_id"))


def preview_patch(dataset: Dataset, bug_key: str, patch_key: str) -> Patch | None:
    """The patch ``patch_key`` of ``dataset`` (of bug ``bug_key`` when given), or the first
    patch of ``bug_key`` (of the dataset's first bug with patches when none is given, or
    when the keys are another dataset's: the pickers changed dataset)."""
    patches = Patch.objects.filter(dataset=dataset).select_related("bug")
    ordered = patches.order_by("bug__sort_key", "sort_key")
    of_bug = ordered.filter(bug__key=bug_key) if bug_key else ordered
    if patch_key:
        found = of_bug.filter(key=patch_key).first()
        if found is not None:
            return found
    return of_bug.first() or ordered.first()


def version_text(version: JudgeVersion) -> str:
    """A version as the text two versions are diffed on: what it asks, then its template."""
    lines = [f"Title: {version.title}", f"Answer: {version.kind}"]
    for dimension in version.dimensions:
        lines.append(
            f"Dimension: {dimension['name']} {dimension['low']}–{dimension['high']} "
            f"{dimension.get('description', '')}".rstrip()
        )
    if version.kind == JudgeVersion.Kind.DIMENSIONS:
        lines.append(f"Overall score: {version.overall or 'the mean of every dimension'}")
    return "\n".join([*lines, "", version.template])
