"""Label Studio's JSON export of our tasks back in, as bundle ``label`` records.

:func:`labelstudio_import` reads Label Studio's JSON export of the tasks
:mod:`.export` wrote (``[{"id", "data", "annotations": [{"completed_by", "result",
"was_cancelled", …}]}]``). Each annotation that was not cancelled (skipped) becomes a label
of its annotator: the choice of ``label`` and the text of ``note``. Predictions and drafts
are not labels.

The annotator is ``completed_by``. Label Studio's *Export › JSON* (its UI, and
``GET /api/projects/{id}/export``) writes the user's bare id, which says nothing of who that
is here: a users file (:func:`users_mapping`: Label Studio's ``GET /api/users``, or
``{id: name}``) gives each id's user name and e-mail. An export snapshot with user details
(``POST /api/projects/{id}/exports`` with ``annotations__completed_by.only_id`` false)
writes an object with the id and e-mail instead, and needs no users file. The names known
of a Label Studio user, its user name first, then its e-mail, are matched to a user here by
user name, then by e-mail, ignoring case: Label Studio's ``annotator2`` is our
``annotator2``, whatever its e-mail. A user that matches nobody becomes a new annotator, as
in a bundle, named by its e-mail (Label Studio's user names are its own; an e-mail names the
same person everywhere).

A patch imported twice into a Label Studio project is two tasks: the same annotator's
identical labels of both are one label; different ones are refused, naming both tasks.
The labels are then imported as bundle ``label`` records
(``rubrics.bundle.services.bundle_import``): the same checks, all or nothing, re-importing
changes nothing. Every error names the task (its place in the file and Label Studio's id)
and the annotation.
"""

import dataclasses
import io
import json
from collections.abc import Iterable
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q

from judging.annotations.bundle import UNKNOWN_LABEL
from judging.models import Campaign, Label
from rubrics.bundle.base import BundleImportError, KindCounts
from rubrics.bundle.read import MAX_NOTE, BundleError
from rubrics.bundle.services import bundle_import
from rubrics.models import Dataset, Patch
from sejury_web.audit import audit_record
from sejury_web.json_reader import json_loads

from .names import CAMPAIGN_FIELD, CHOICES_NAME, DATASET_FIELD, NOTE_NAME, PATCH_FIELD

LABELS = ", ".join(Label.values)

NOT_JSON = "not JSON: {error} (line {line}, column {column})"
NOT_A_LIST = "a Label Studio JSON export is a list of tasks, got {type}"
NOT_AN_OBJECT = "expected a JSON object, got {type}"
NOT_A_TASK = (
    "not a task of Label Studio's JSON export (JSON-MIN, CSV and TSV exports are not read): "
    "a task has data and annotations"
)
NOT_OURS = "the task's data has no {field}: it is not a task exported by SE-Jury"
UNKNOWN_PATCH_ID = "no patch {id} in dataset {dataset!r}: the task was exported from elsewhere"
OTHER_DATASET = "the task is of dataset {task!r}, not {dataset!r}"
OTHER_CAMPAIGN = "the task is of {task}, not of campaign {campaign}"
NOT_A_LIST_OF = "expected a list of {what}, got {type}"
NO_CHOICE = "the annotation chose nothing: give it a label in Label Studio or skip it"
MANY_CHOICES = "the annotation chose {choices}: a label is one of VALID, INVALID, UNSURE"
TWO_RESULTS = "the annotation has two {name!r} results"
BAD_NOTE = "the note's text is not a list of strings"
NO_ANNOTATOR = "the annotation names no annotator (completed_by)"
NO_USERS_FILE = (
    "the annotators are Label Studio user ids only ({ids}), as its Export › JSON writes them: "
    'give the users file (Label Studio\'s GET /api/users saved as JSON, or {{"id": "user '
    'name"}}), or import an export snapshot with user details instead '
    "(docs: Imports › Label Studio)"
)
NOT_IN_USERS = "completed_by is Label Studio's user id {id}, which the users file does not name"
BAD_COMPLETED_BY = "completed_by is {type}; expected Label Studio's user id or user object"
TWICE = (
    "{name} labelled this patch differently in {first} ({theirs}, here {mine}): the patch is "
    "in the Label Studio project twice; make the two labels the same or delete one"
)
NO_LABELS = "the file holds no annotation to import ({skipped} skipped or cancelled)"
TOO_LARGE = "the file is larger than {limit:,} bytes"
BAD_USERS = (
    "the users file must be a JSON object {{id: user name or e-mail}} or Label Studio's list "
    "of users: {error}"
)
# The ids of users shown in NO_USERS_FILE, at most.
SHOWN_IDS = 10
# Where a bundle field's error is in a Label Studio annotation.
FIELDS = {
    "patch": f"data.{PATCH_FIELD}",
    "annotator": "completed_by",
    "label": f"result ({CHOICES_NAME})",
    "note": f"result ({NOTE_NAME})",
}


@dataclasses.dataclass(frozen=True, order=True)
class LabelStudioError:
    """What is wrong, and where: the task's place in the file (1-based) and Label Studio's
    id for it, the annotation's place in the task, the field."""

    task: int = 0
    annotation: int = 0
    task_id: str = ""
    field: str = ""
    message: str = ""

    def __str__(self) -> str:
        where = []
        if self.task:
            where.append(f"task {self.task}" + (f" (id {self.task_id})" if self.task_id else ""))
        if self.annotation:
            where.append(f"annotation {self.annotation}")
        if self.field:
            where.append(self.field)
        return f"{', '.join(where)}: {self.message}" if where else self.message


class LabelStudioImportError(Exception):
    """The file cannot be imported; nothing was written."""

    def __init__(self, errors: list[LabelStudioError], *, more: int = 0) -> None:
        self.errors = errors
        self.more = more
        lines = [str(e) for e in errors]
        if more:
            lines.append(f"… and {more} more errors")
        super().__init__("\n".join(lines))


@dataclasses.dataclass
class LabelStudioSummary:
    counts: KindCounts
    skipped: int  # cancelled (skipped) annotations
    new_annotators: list[str]
    duplicates: int = 0  # an annotator's identical labels of a patch in two tasks, after one

    @property
    def unchanged(self) -> bool:
        return not (self.counts.created or self.counts.updated)

    def __str__(self) -> str:
        c = self.counts
        text = f"{c.created} labels created, {c.updated} updated, {c.unchanged} unchanged"
        if self.skipped:
            text += f"; {self.skipped} skipped or cancelled annotations left out"
        if self.duplicates:
            text += (
                f"; {self.duplicates} identical annotations of a patch in two tasks counted once"
            )
        if self.new_annotators:
            text += f"; new annotators: {', '.join(self.new_annotators)}"
        return text


@dataclasses.dataclass(frozen=True)
class Who:
    """What is known of a Label Studio user: its user name, its e-mail, or both."""

    username: str = ""
    email: str = ""

    @classmethod
    def named(cls, name: str) -> "Who":
        """A user name or an e-mail, as a lead writes it in a users file."""
        name = name.strip()
        return cls(email=name) if "@" in name else cls(username=name)

    @property
    def names(self) -> list[str]:
        """The names to match a user by, the user name first."""
        return [n for n in (self.username, self.email) if n]

    @property
    def new_name(self) -> str:
        """The user name of a new annotator made for it: its e-mail, else its name."""
        return self.email or self.username


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def users_mapping(raw: bytes) -> dict[str, Who]:
    """A users file by Label Studio user id: ``{"<id>": "<user name or e-mail>"}``, or
    Label Studio's list of users (``GET /api/users``: ``[{"id", "username", "email", …}]``,
    also as a page ``{"results": [...]}``)."""
    try:
        data = json_loads(raw.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as error:
        message = BAD_USERS.format(error=error)
        raise LabelStudioImportError([LabelStudioError(message=message)]) from None
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data = data["results"]
    if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
        return {str(k): Who.named(v) for k, v in data.items() if v.strip()}
    if isinstance(data, list) and all(isinstance(u, dict) and "id" in u for u in data):
        users = {str(u["id"]): Who(_text(u.get("username")), _text(u.get("email"))) for u in data}
        return {ident: who for ident, who in users.items() if who.names}
    problem = "expected an object of strings or a list of users with ids"
    raise LabelStudioImportError([LabelStudioError(message=BAD_USERS.format(error=problem))])


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


@dataclasses.dataclass
class _Annotation:
    """One annotation read as a label, before its annotator is matched."""

    where: LabelStudioError  # its place (message empty)
    patch: str  # the patch's id as read, then its key
    who: Who
    label: str
    note: str


class _Reader:
    """Reads the export's tasks and annotations; collects the errors with their place."""

    def __init__(
        self, dataset: Dataset, campaign: Campaign | None, users: dict[str, Who] | None
    ) -> None:
        self.dataset = dataset
        self.campaign = campaign
        self.users = users
        self.errors: list[LabelStudioError] = []
        self.annotations: list[_Annotation] = []
        self.skipped = 0
        # Bare Label Studio user ids, when no users file was given: one error says them all.
        self.bare_ids: set[int] = set()

    def error(self, where: LabelStudioError, message: str, field: str = "") -> None:
        self.errors.append(dataclasses.replace(where, field=field, message=message))

    def read(self, tasks: Any) -> None:
        if not isinstance(tasks, list):
            self.error(LabelStudioError(), NOT_A_LIST.format(type=_type(tasks)))
            return
        for number, task in enumerate(tasks, start=1):
            self.task(number, task)
        if self.bare_ids:
            ids = sorted(self.bare_ids)
            shown = ", ".join(map(str, ids[:SHOWN_IDS])) + (", …" if len(ids) > SHOWN_IDS else "")
            self.error(LabelStudioError(), NO_USERS_FILE.format(ids=shown), FIELDS["annotator"])

    def task(self, number: int, task: Any) -> None:
        where = LabelStudioError(task=number)
        if not isinstance(task, dict):
            self.error(where, NOT_AN_OBJECT.format(type=_type(task)))
            return
        where = dataclasses.replace(where, task_id=str(task.get("id", ""))[:40])
        data = task.get("data")
        if not isinstance(data, dict):
            self.error(where, NOT_A_TASK)
            return
        patch = data.get(PATCH_FIELD)
        if isinstance(patch, str) and patch.isdigit():
            patch = int(patch)
        if not isinstance(patch, int) or isinstance(patch, bool):
            self.error(where, NOT_OURS.format(field=PATCH_FIELD), f"data.{PATCH_FIELD}")
            return
        if data.get(DATASET_FIELD) != self.dataset.slug:
            message = OTHER_DATASET.format(task=data.get(DATASET_FIELD), dataset=self.dataset.slug)
            self.error(where, message, f"data.{DATASET_FIELD}")
            return
        task_campaign = data.get(CAMPAIGN_FIELD)
        if self.campaign is not None and task_campaign != self.campaign.pk:
            of = "no campaign" if task_campaign is None else f"campaign {task_campaign}"
            message = OTHER_CAMPAIGN.format(task=of, campaign=self.campaign.pk)
            self.error(where, message, f"data.{CAMPAIGN_FIELD}")
            return
        annotations = task.get("annotations", [])
        if not isinstance(annotations, list):
            self.error(
                where,
                NOT_A_LIST_OF.format(what="annotations", type=_type(annotations)),
                "annotations",
            )
            return
        for index, annotation in enumerate(annotations, start=1):
            self.annotation(dataclasses.replace(where, annotation=index), patch, annotation)

    def annotation(self, where: LabelStudioError, patch: int, annotation: Any) -> None:
        if not isinstance(annotation, dict):
            self.error(where, NOT_AN_OBJECT.format(type=_type(annotation)))
            return
        if annotation.get("was_cancelled"):
            self.skipped += 1
            return
        result = annotation.get("result", [])
        if not isinstance(result, list) or not all(isinstance(r, dict) for r in result):
            self.error(where, NOT_A_LIST_OF.format(what="results", type=_type(result)), "result")
            return
        mine: dict[str, list[dict[str, Any]]] = {CHOICES_NAME: [], NOTE_NAME: []}
        for item in result:
            if item.get("from_name") in mine:
                mine[item["from_name"]].append(item)
        for name, items in mine.items():
            if len(items) > 1:
                self.error(where, TWO_RESULTS.format(name=name), f"result ({name})")
                return
        label = self._choice(where, mine[CHOICES_NAME])
        note = self._note(where, mine[NOTE_NAME])
        who = self._who(where, annotation.get("completed_by"))
        if label is None or note is None or who is None:
            return
        self.annotations.append(_Annotation(where, str(patch), who, label, note))

    def resolve_patches(self) -> None:
        """The annotations' patch ids as keys of the dataset's patches (an unknown id is an
        error of each annotation that names it)."""
        ids = {int(a.patch) for a in self.annotations}
        keys = dict(Patch.objects.filter(dataset=self.dataset, pk__in=ids).values_list("pk", "key"))
        resolved = []
        for a in self.annotations:
            key = keys.get(int(a.patch))
            if key is None:
                message = UNKNOWN_PATCH_ID.format(id=a.patch, dataset=self.dataset.slug)
                self.error(a.where, message, f"data.{PATCH_FIELD}")
            else:
                resolved.append(dataclasses.replace(a, patch=key))
        self.annotations = resolved

    def _choice(self, where: LabelStudioError, items: list[dict[str, Any]]) -> str | None:
        field = FIELDS["label"]
        value = items[0].get("value") if items else None
        choices = value.get("choices") if isinstance(value, dict) else None
        if not items or choices == []:
            self.error(where, NO_CHOICE, field)
            return None
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            self.error(where, NOT_A_LIST_OF.format(what="choices", type=_type(choices)), field)
            return None
        if len(choices) > 1:
            self.error(where, MANY_CHOICES.format(choices=", ".join(choices)), field)
            return None
        if choices[0] not in Label.values:
            self.error(where, UNKNOWN_LABEL.format(value=choices[0][:80], choices=LABELS), field)
            return None
        return choices[0]

    def _note(self, where: LabelStudioError, items: list[dict[str, Any]]) -> str | None:
        if not items:
            return ""
        value = items[0].get("value")
        text = value.get("text") if isinstance(value, dict) else None
        if isinstance(text, str):
            text = [text]
        if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
            self.error(where, BAD_NOTE, FIELDS["note"])
            return None
        return "\n".join(text).strip()

    def _who(self, where: LabelStudioError, completed_by: Any) -> Who | None:
        """What is known of the annotation's author: from the users file by its id, else
        from the user details of a snapshot export."""
        field = FIELDS["annotator"]
        if completed_by is None:
            self.error(where, NO_ANNOTATOR, field)
            return None
        if isinstance(completed_by, dict):
            ident = completed_by.get("id")
            if self.users and ident is not None and str(ident) in self.users:
                return self.users[str(ident)]
            who = Who(_text(completed_by.get("username")), _text(completed_by.get("email")))
            if who.names:
                return who
            completed_by = ident
        if isinstance(completed_by, int) and not isinstance(completed_by, bool):
            if not self.users:
                self.bare_ids.add(completed_by)
                return None
            if str(completed_by) in self.users:
                return self.users[str(completed_by)]
            self.error(where, NOT_IN_USERS.format(id=completed_by), field)
            return None
        self.error(where, BAD_COMPLETED_BY.format(type=_type(completed_by)), field)
        return None


def _usernames(people: Iterable[Who]) -> dict[Who, str]:
    """The user name each Label Studio user goes by here, ignoring case: the user named as
    one of its names (its user name first, then its e-mail), else the one user with one of
    them as e-mail, else a new annotator (as in a bundle) named :attr:`Who.new_name`."""
    people = set(people)
    folded = {name.lower() for who in people for name in who.names}
    by_name: dict[str, str] = {}
    by_email: dict[str, list[str]] = {}
    query = Q(username__in=[]) | Q(email__in=[])
    for name in folded:
        query |= Q(username__iexact=name) | Q(email__iexact=name)
    for username, email in User.objects.filter(query).values_list("username", "email"):
        by_name[username.lower()] = username
        if email:
            by_email.setdefault(email.lower(), []).append(username)
    resolved = {}
    for who in people:
        keys = [name.lower() for name in who.names]
        named = [by_name[key] for key in keys if key in by_name]
        mailed = [by_email[key][0] for key in keys if len(by_email.get(key, [])) == 1]
        resolved[who] = (named + mailed + [who.new_name])[0]
    return resolved


class _RollBack(Exception):
    pass


def _read_at_most(source: IO[bytes], size: int) -> bytes:
    """Up to ``size`` bytes of ``source``, from where it stands (``read(size)`` would first
    allocate them all, however short the file)."""
    try:
        here = source.tell()
        left = source.seek(0, io.SEEK_END) - here
        source.seek(here)
    except (AttributeError, OSError, ValueError):  # not a file that seeks
        return source.read(size)
    return source.read(min(left, size))


def _load(source: IO[bytes] | bytes) -> tuple[Any, list[LabelStudioError]]:
    """The export's JSON. Given a file (not bytes), its bytes go once decoded: the text and
    then what it parsed are held, 2 × the file's size, not also the bytes (issue 27)."""
    limit = settings.SEJURY_BUNDLE_MAX_BYTES
    raw = source if isinstance(source, bytes) else _read_at_most(source, limit + 1)
    if len(raw) > limit:
        return None, [LabelStudioError(message=TOO_LARGE.format(limit=limit))]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return None, [LabelStudioError(message=f"not UTF-8 text (byte {error.start})")]
    del raw
    try:
        return json_loads(text), []
    except json.JSONDecodeError as error:
        message = NOT_JSON.format(error=error.msg, line=error.lineno, column=error.colno)
        return None, [LabelStudioError(message=message)]


def labelstudio_import(
    *,
    source: IO[bytes] | bytes,
    dataset: Dataset,
    campaign: Campaign | None = None,
    users: dict[str, Who] | None = None,
    actor: User | None,
    filename: str = "",
    grant_annotator_role: bool = False,
) -> LabelStudioSummary:
    """Import the annotations of Label Studio's JSON export ``source`` as labels of
    ``dataset``'s patches (of ``campaign``'s tasks, if given), all or nothing.

    ``users`` is the users file, by Label Studio user id (:func:`users_mapping`).
    ``grant_annotator_role``: as ``bundle_import``'s (existing users without any role whom the
    annotations name get the annotator role, audited; never a lead or a reviewer).
    Raises :class:`LabelStudioImportError` with every problem; then nothing was written.
    """
    tasks, errors = _load(source)
    if errors:
        raise LabelStudioImportError(errors)
    reader = _Reader(dataset, campaign, users)
    reader.read(tasks)
    reader.resolve_patches()
    errors = reader.errors
    if not reader.annotations and not errors:
        raise LabelStudioImportError(
            [LabelStudioError(message=NO_LABELS.format(skipped=reader.skipped))]
        )
    usernames = _usernames({a.who for a in reader.annotations})
    existing = {
        name.lower()
        for name in User.objects.filter(username__in=set(usernames.values())).values_list(
            "username", flat=True
        )
    }
    new_annotators = sorted({u for u in usernames.values() if u.lower() not in existing})
    annotations, duplicates = _once_each(reader, usernames)
    # A note over the label's limit is cut to one character past it: the bundle refuses it
    # as it would the whole, without the lines holding a huge note again (issue 27).
    lines = [
        json.dumps(
            {
                "kind": "label",
                "patch": a.patch,
                "annotator": usernames[a.who],
                "label": a.label,
                "note": a.note[: MAX_NOTE + 1],
            },
            ensure_ascii=False,
        )
        for a in annotations
    ]
    summary = None
    if not lines:  # only errors: nothing for the bundle to check
        raise _import_error(errors)
    bundle = io.BytesIO(("\n".join(lines) + "\n").encode())
    try:
        with transaction.atomic():
            result = bundle_import(
                source=bundle,
                dataset_name=dataset.name,
                actor=actor,
                filename=f"Label Studio: {filename}"[:255],
                grant_annotator_role=grant_annotator_role,
            )
            if errors:
                raise _RollBack
            summary = LabelStudioSummary(
                counts=result.counts["label"],
                skipped=reader.skipped,
                new_annotators=new_annotators,
                duplicates=duplicates,
            )
            audit_record(
                actor=actor,
                action="labelstudio_import",
                target=campaign if campaign is not None else dataset,
                detail={"file": filename[:255], **vars(summary.counts), "skipped": reader.skipped},
            )
    except BundleImportError as exc:
        errors = errors + [_located(e, annotations) for e in exc.errors]
        if exc.more:
            errors.append(LabelStudioError(message=f"… and {exc.more} more errors in the labels"))
    except _RollBack:
        pass
    if errors or summary is None:
        raise _import_error(errors)
    return summary


def _import_error(errors: list[LabelStudioError]) -> LabelStudioImportError:
    """The errors by place, the first ``SEJURY_BUNDLE_MAX_ERRORS`` of them."""
    keep = settings.SEJURY_BUNDLE_MAX_ERRORS
    ordered = sorted(errors)
    return LabelStudioImportError(ordered[:keep], more=max(0, len(ordered) - keep))


def _once_each(reader: _Reader, usernames: dict[Who, str]) -> tuple[list[_Annotation], int]:
    """The annotations, one per annotator and patch (a label is one), and how many were
    left out as the same label again: a patch imported twice into a Label Studio project is
    two tasks, and an annotator labelling both the same way gave one label. Labelling them
    differently is an error, at the second, naming the first."""
    first: dict[tuple[str, str], _Annotation] = {}
    kept = []
    duplicates = 0
    for a in reader.annotations:
        seen = first.setdefault((a.patch, usernames[a.who].lower()), a)
        if seen is a:
            kept.append(a)
        elif (seen.label, seen.note) == (a.label, a.note):
            duplicates += 1
        else:
            message = TWICE.format(
                name=usernames[a.who], first=_place(seen.where), theirs=_said(seen), mine=_said(a)
            )
            reader.error(a.where, message, FIELDS["annotator"])
    return kept, duplicates


def _said(a: _Annotation) -> str:
    """An annotation's label and note, briefly."""
    if not a.note:
        return f"{a.label}, no note"
    note = a.note if len(a.note) <= 40 else a.note[:39] + "…"
    return f"{a.label}, note {note!r}"


def _place(where: LabelStudioError) -> str:
    return str(dataclasses.replace(where, field="", message="")).rstrip(": ")


def _located(error: BundleError, annotations: list[_Annotation]) -> LabelStudioError:
    """A bundle error (by line of the bundle made from the export) at its annotation."""
    if error.line is None or not 1 <= error.line <= len(annotations):
        return LabelStudioError(message=error.message)
    where = annotations[error.line - 1].where
    message = error.message.replace(f"line {error.line}", "this annotation")
    return dataclasses.replace(
        where, field=FIELDS.get(error.field or "", error.field or ""), message=message
    )
