"""The ``rubric`` record kind of the bundle: a rubric's revisions, from its draft to golden.

A record holds a rubric's whole history: ``revisions[0]`` is the draft, each later one an
edit with its author, justification and themes; ``confirmed_by`` names the second reviewer
who made the last revision golden. Texts are stored exactly as given (edit distances are
measured on them). Authors and confirmers are names: they are linked to the user of that
name when there is one (ignoring case), and no user or role is ever created for them.

A bundle never rewrites history. Re-importing a rubric whose revisions the dataset already
holds changes nothing; a file that continues them appends the new revisions; a file whose
revision differs from the dataset's revision of the same number is refused. An edit without
a justification is imported as given, and counted in the import's notes.
"""

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import astuple, dataclass, fields
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Prefetch

from rubrics.bundle.base import BundleImportError, ImportContext, KindCounts, RecordKind
from rubrics.bundle.bugs import dataset_bug_ids
from rubrics.bundle.read import (
    KEY_FIELD,
    MAX_NOTE,
    BundleError,
    FieldSpec,
    Record,
    fields_errors,
    json_type,
    shorten,
)
from rubrics.models import Dataset, Rubric, RubricEvent, RubricRevision, Theme
from rubrics.rubric_text import MAX_TEXT, structure_from_markdown
from sejury_web.users import users_by_folded_name

UNKNOWN_VARIANT = "unknown variant {value!r}; expected one of: {choices}"
NO_REVISIONS = "a rubric needs at least one revision: the first is the draft"
# Real histories hold a draft and a few edits; a thousand is no history but a flood.
MAX_REVISIONS = 1000
TOO_MANY_REVISIONS = "more than {limit:,} revisions"
REVISION_NOT_AN_OBJECT = "a revision must be a JSON object, got {type}"
UNKNOWN_REVISION_FIELD = "unknown field for a revision (allowed: {allowed})"
THEME_NOT_A_STRING = "a theme is a string, got {type}"
UNKNOWN_THEME = "unknown theme {value!r}; expected one of: {choices}"
HISTORY_CONFLICT = (
    "revision {number} differs from revision {number} of this rubric in the dataset "
    "({fields}); a bundle never rewrites a rubric's history: drop this line, or import it "
    "into another dataset"
)
CHANGED_DURING_IMPORT = (
    "the rubric for bug {bug!r} ({variant}) changed in the app during the import; "
    "import the file again"
)
UNJUSTIFIED_NOTE = (
    "{count} of {total} edits (revisions after the draft) have no justification; "
    "they were imported as given"
)
SELF_CONFIRMED_NOTE = (
    "{count} rubrics were confirmed by one of their own editors ({bugs}); paper 004 asks "
    "for a second reviewer"
)
DATASET_AHEAD_NOTE = (
    "{count} rubrics have more revisions in the dataset than in the file ({bugs}); "
    "they were left as they are"
)
IMPORTED_REVISION = "revision {first} imported from a bundle"
IMPORTED_REVISIONS = "revisions {first}–{last} imported from a bundle"
IMPORTED_CONFIRMATION = "confirmed by {name} (imported from a bundle)"
# A golden rubric whose confirming user was deleted exports with this confirmer.
UNKNOWN_CONFIRMER = "unknown"

_IMPORTED_CONFIRMATION = re.compile(
    "^" + re.escape(IMPORTED_CONFIRMATION).replace(re.escape("{name}"), "(?P<name>.+)") + "$",
    re.DOTALL,
)


def _check_variant(value: str) -> str | None:
    if value not in Rubric.Variant.values:
        choices = ", ".join(Rubric.Variant.values)
        return UNKNOWN_VARIANT.format(value=shorten(value), choices=choices)
    return None


def _check_revisions(value: list[Any]) -> str | None:
    if not value:
        return NO_REVISIONS
    if len(value) > MAX_REVISIONS:
        return TOO_MANY_REVISIONS.format(limit=MAX_REVISIONS)
    return None


def _check_themes(value: list[Any]) -> str | None:
    for theme in value:
        if not isinstance(theme, str):
            return THEME_NOT_A_STRING.format(type=json_type(theme))
        if theme not in Theme.values:
            choices = ", ".join(Theme.values)
            return UNKNOWN_THEME.format(value=shorten(theme), choices=choices)
    return None


REVISION_FIELDS = {
    "text": FieldSpec((str,), required=True, non_empty=True, max_length=MAX_TEXT),
    "author": FieldSpec((str,), required=True, non_empty=True, max_length=200),
    "justification": FieldSpec((str,), max_length=MAX_NOTE),
    "themes": FieldSpec((list,), check=_check_themes),
}


@dataclass(frozen=True)
class RevisionData:
    """A revision as the bundle carries it; equal ones are the same history."""

    text: str
    author: str
    justification: str
    themes: tuple[str, ...]  # sorted, without repeats, as the editor saves them

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> "RevisionData":
        return cls(
            text=data["text"],
            author=data["author"],
            justification=data.get("justification", ""),
            themes=tuple(sorted(set(data.get("themes", [])))),
        )

    @classmethod
    def from_row(cls, row: RubricRevision) -> "RevisionData":
        return cls(row.text, row.author, row.justification, tuple(sorted(set(row.themes))))

    def differences(self, other: "RevisionData") -> list[str]:
        """The names of the fields that differ from ``other``."""
        pairs = zip(fields(self), astuple(self), astuple(other), strict=True)
        return [f.name for f, mine, theirs in pairs if mine != theirs]


def _variant(data: dict[str, Any]) -> str:
    return str(data.get("variant", Rubric.Variant.TEMPLATED))


def _history_conflict(history: list[RevisionData], wanted: list[RevisionData]) -> str | None:
    """Why ``wanted`` cannot continue ``history`` (the first differing revision), or None."""
    for number, (old, new) in enumerate(zip(history, wanted, strict=False)):
        if differing := new.differences(old):
            return HISTORY_CONFLICT.format(number=number, fields=", ".join(differing))
    return None


def _dataset_histories(dataset: Dataset | None) -> dict[tuple[str, str], list[RevisionData]]:
    """The revisions of each rubric of ``dataset``, by (bug key, variant)."""
    histories: dict[tuple[str, str], list[RevisionData]] = defaultdict(list)
    if dataset is None:
        return histories
    rows = (
        RubricRevision.objects.filter(rubric__bug__dataset=dataset)
        .select_related("rubric__bug")
        .order_by("rubric_id", "number")
    )
    for row in rows.iterator(chunk_size=500):
        histories[(row.rubric.bug.key, row.rubric.variant)].append(RevisionData.from_row(row))
    return histories


def _listed(items: list[str], limit: int = 10) -> str:
    return ", ".join(items[:limit]) + (" …" if len(items) > limit else "")


class RubricKind(RecordKind):
    name = "rubric"
    order = 40
    fields = {
        "bug": KEY_FIELD,
        "variant": FieldSpec((str,), check=_check_variant),
        "revisions": FieldSpec((list,), required=True, check=_check_revisions),
        "confirmed_by": FieldSpec((str,), non_empty=True, max_length=200),
    }

    def identity(self, data: dict[str, Any]) -> tuple[str, str]:
        return "bug", f"for bug {data['bug']!r} ({_variant(data)})"

    def check(self, record: Record, ctx: ImportContext) -> None:
        data = record.data
        if message := ctx.reference_error("bug", data["bug"]):
            ctx.error(record, "bug", message)
        unknown = UNKNOWN_REVISION_FIELD.format(allowed=", ".join(REVISION_FIELDS))
        valid = True
        for number, revision in enumerate(data["revisions"]):
            where = f"revisions[{number}]"
            if not isinstance(revision, dict):
                ctx.error(record, where, REVISION_NOT_AN_OBJECT.format(type=json_type(revision)))
                valid = False
                continue
            for name, message in fields_errors(revision, REVISION_FIELDS, unknown=unknown):
                ctx.error(record, f"{where}.{name}", message)
                valid = False
        if not valid:
            return
        wanted = [RevisionData.from_record(revision) for revision in data["revisions"]]
        record.derived["revisions"] = wanted
        history = ctx.cached("rubric_histories", lambda: _dataset_histories(ctx.dataset))
        if message := _history_conflict(history.get((data["bug"], _variant(data)), []), wanted):
            ctx.error(record, "revisions", message)

    def write(self, records: list[Record], ctx: ImportContext) -> KindCounts:
        dataset = ctx.dataset
        assert dataset is not None
        counts = KindCounts()
        if not records:
            return counts
        self._count_notes(records, ctx)
        bug_ids = dataset_bug_ids(ctx)
        batch_bugs = {bug_ids[record.data["bug"]] for record in records}
        rubrics = {
            (rubric.bug_id, rubric.variant): rubric
            for rubric in Rubric.objects.select_for_update(of=("self",)).filter(
                bug__dataset=dataset, bug_id__in=batch_bugs
            )
        }
        histories: dict[int, list[RubricRevision]] = defaultdict(list)
        revisions = RubricRevision.objects.filter(rubric__in=list(rubrics.values()))
        for row in revisions.order_by("number"):
            histories[row.rubric_id].append(row)
        users = users_by_folded_name(_names(records))
        events: list[RubricEvent] = []
        ahead: list[str] = ctx.cached("rubrics_ahead", list)
        for record in records:
            key = (bug_ids[record.data["bug"]], _variant(record.data))
            rubric = rubrics.get(key)
            history = histories[rubric.pk] if rubric else []
            wanted: list[RevisionData] = record.derived["revisions"]
            if len(history) > len(wanted):
                ahead.append(record.data["bug"])
            outcome = self._write_rubric(
                record, rubric, history, key=key, users=users, events=events, ctx=ctx
            )
            setattr(counts, outcome, getattr(counts, outcome) + 1)
        RubricEvent.objects.bulk_create(events)
        return counts

    def finish(self, ctx: ImportContext) -> None:
        """Note the edits without a justification, the rubrics confirmed by an editor and
        those the dataset holds more of, over every batch."""
        stats = ctx.stats
        if unjustified := stats.get("unjustified_edits", 0):
            total = stats["edits"]
            ctx.notes.append(UNJUSTIFIED_NOTE.format(count=unjustified, total=total))
        self_confirmed: list[str] = ctx.cached("rubrics_self_confirmed", list)
        if self_confirmed:
            bugs = _listed(self_confirmed)
            ctx.notes.append(SELF_CONFIRMED_NOTE.format(count=len(self_confirmed), bugs=bugs))
        ahead: list[str] = ctx.cached("rubrics_ahead", list)
        if ahead:
            ctx.notes.append(DATASET_AHEAD_NOTE.format(count=len(ahead), bugs=_listed(ahead)))

    @staticmethod
    def _count_notes(records: list[Record], ctx: ImportContext) -> None:
        """Count a batch's edits without a justification and rubrics confirmed by an editor."""
        edits = [edit for r in records for edit in r.derived["revisions"][1:]]
        stats = ctx.stats
        stats["edits"] = stats.get("edits", 0) + len(edits)
        unjustified = sum(1 for edit in edits if not edit.justification.strip())
        stats["unjustified_edits"] = stats.get("unjustified_edits", 0) + unjustified
        self_confirmed: list[str] = ctx.cached("rubrics_self_confirmed", list)
        self_confirmed.extend(
            r.data["bug"]
            for r in records
            if r.data.get("confirmed_by", "").lower()
            in {edit.author.lower() for edit in r.derived["revisions"][1:]}
        )

    @staticmethod
    def _write_rubric(
        record: Record,
        rubric: Rubric | None,
        history: list[RubricRevision],
        *,
        key: tuple[int, str],
        users: dict[str, User],
        events: list[RubricEvent],
        ctx: ImportContext,
    ) -> str:
        """Create or continue one rubric; returns ``created``, ``updated`` or ``unchanged``."""
        wanted: list[RevisionData] = record.derived["revisions"]
        # Validation compared the file with the dataset; the app may have saved since.
        if _history_conflict([RevisionData.from_row(row) for row in history], wanted):
            bug, variant = record.data["bug"], key[1]
            message = CHANGED_DURING_IMPORT.format(bug=bug, variant=variant)
            raise BundleImportError([BundleError(record.line, "revisions", message)])
        created = rubric is None
        if rubric is None:
            rubric = Rubric.objects.create(
                bug_id=key[0], variant=key[1], status=Rubric.Status.IN_REVIEW
            )
        new = wanted[len(history) :]
        changed = bool(new)
        if new:
            added = RubricRevision.objects.bulk_create(
                _revision_rows(rubric, new, first=len(history), users=users)
            )
            history = [*history, *added]
            rubric.current_number = history[-1].number
            rubric.status = Rubric.Status.IN_REVIEW  # the golden revision, if any, stays
            rubric.submitted_by = None
            rubric.draft_error = ""
            rubric.draft_call_id = None
            first, last = added[0].number, added[-1].number
            comment = (IMPORTED_REVISION if first == last else IMPORTED_REVISIONS).format(
                first=first, last=last
            )
            events.append(
                RubricEvent(
                    rubric=rubric,
                    kind=RubricEvent.Kind.IMPORTED,
                    actor=ctx.actor,
                    revision=history[-1],
                    comment=comment,
                )
            )
        confirmer = record.data.get("confirmed_by")
        last_revision = history[-1]
        already_golden = (
            rubric.status == Rubric.Status.GOLDEN and rubric.golden_revision_id == last_revision.pk
        )
        if confirmer and len(history) == len(wanted) and not already_golden:
            rubric.status = Rubric.Status.GOLDEN
            rubric.golden_revision = last_revision
            changed = True
            events.append(
                RubricEvent(
                    rubric=rubric,
                    kind=RubricEvent.Kind.CONFIRMED,
                    actor=users.get(confirmer.lower()),
                    revision=last_revision,
                    comment=IMPORTED_CONFIRMATION.format(name=confirmer),
                )
            )
        if changed:
            rubric.save()
        if created:
            return "created"
        return "updated" if changed else "unchanged"

    def export(self, dataset: Dataset) -> Iterator[dict[str, Any]]:
        rubrics = (
            Rubric.objects.filter(bug__dataset=dataset, current_number__gte=0)
            .select_related("bug")
            .prefetch_related(
                Prefetch("revisions", queryset=RubricRevision.objects.order_by("number"))
            )
            .order_by("bug__sort_key", "variant")
        )
        confirmers = _confirmers(dataset)
        for rubric in rubrics.iterator(chunk_size=200):
            revisions = list(rubric.revisions.all())
            obj: dict[str, Any] = {
                "bug": rubric.bug.key,
                "variant": rubric.variant,
                "revisions": [
                    {
                        "text": revision.text,
                        "author": revision.author,
                        "justification": revision.justification,
                        "themes": list(revision.themes),
                    }
                    for revision in revisions
                ],
            }
            # Only a rubric golden at its last revision: an edit awaiting confirmation has
            # no confirmer, and the format has no place for an older golden revision.
            golden = rubric.golden_revision_id
            if rubric.status == Rubric.Status.GOLDEN and golden == revisions[-1].pk:
                obj["confirmed_by"] = confirmers.get(golden, UNKNOWN_CONFIRMER)
            yield obj


def _names(records: Iterable[Record]) -> set[str]:
    """The people a file names: the authors of revisions (not models) and confirmers."""
    names: set[str] = set()
    for record in records:
        names.update(r.author for r in record.derived["revisions"])
        if confirmer := record.data.get("confirmed_by"):
            names.add(confirmer)
    return {name for name in names if not name.startswith("llm:")}


def _revision_rows(
    rubric: Rubric, revisions: list[RevisionData], *, first: int, users: dict[str, User]
) -> list[RubricRevision]:
    templated = rubric.variant == Rubric.Variant.TEMPLATED
    return [
        RubricRevision(
            rubric=rubric,
            number=number,
            structure=structure_from_markdown(revision.text)
            if templated
            else {"text": revision.text},
            text=revision.text,
            author=revision.author,
            author_user=None
            if revision.author.startswith("llm:")
            else users.get(revision.author.lower()),
            justification=revision.justification,
            themes=list(revision.themes),
        )
        for number, revision in enumerate(revisions, start=first)
    ]


def _confirmers(dataset: Dataset) -> dict[int, str]:
    """Who confirmed each revision of the dataset (the latest confirmation), by revision id.

    The user who confirmed it in the app, or, for an import, the name the bundle gave.
    """
    confirmers: dict[int, str] = {}
    events = (
        RubricEvent.objects.filter(
            rubric__bug__dataset=dataset, kind=RubricEvent.Kind.CONFIRMED, revision__isnull=False
        )
        .select_related("actor")
        .order_by("created_at", "id")
    )
    for event in events.iterator(chunk_size=500):
        assert event.revision_id is not None
        if event.actor is not None:
            confirmers[event.revision_id] = event.actor.get_username()
        elif match := _IMPORTED_CONFIRMATION.match(event.comment):
            confirmers[event.revision_id] = match.group("name")
        else:
            confirmers.pop(event.revision_id, None)
    return confirmers
