"""The ``label`` record kind of the bundle: annotators' labels of patches."""

from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db.models import F

from judging.annotations.dimensions import ratings_problem
from judging.models import Annotation, AnnotationRevision, Label
from rubrics.bundle.base import ImportContext, KindCounts, RecordKind
from rubrics.bundle.bugs import upsert
from rubrics.bundle.read import KEY_FIELD, MAX_NOTE, BundleError, FieldSpec, Record, shorten
from rubrics.models import Dataset
from sejury_web.users import annotator_role_grant, annotators_ensure, non_annotators

# A label that is not a ``Label``, as a bundle, a Label Studio export and the labelling page's
# service (``annotation_record``) all say it.
UNKNOWN_LABEL = "unknown label {value!r}; expected one of: {choices}"
BAD_ANNOTATOR = "an annotator name may hold letters, digits and @ . + - _ only"
# An existing user named as an annotator who lacks the role: said once per user, on the
# first line naming them, with how many lines do (``{lines}``: "this line" or "25 lines,
# this the first").
NOT_AN_ANNOTATOR = (
    "{name!r} ({lines}) is an existing user without the annotator role; import with the"
    " option to give the annotator role to the existing users the file names as annotators,"
    " or give it to them on the Users page"
)
NOT_AN_ANNOTATOR_LEAD = (
    "{name!r} ({lines}) is a {roles} without the annotator role, which an import never gives"
    " to a lead or a reviewer: annotators must stay blind to the judge's verdicts and to other"
    " people's labels, which a {roles} sees; name someone else in the file, or, if they are"
    " meant to label, a lead gives them the role on the Users page"
)
# ``detail`` of the audit events of a role given by an import.
GRANTED_BY_IMPORT = "named as an annotator by an imported bundle"
GRANTED_NOTE = (
    "Gave the annotator role to {count} existing user{s} the file names as annotators: {names}."
)


def _lines_naming(count: int) -> str:
    return "named by this line" if count == 1 else f"named by {count} lines, this the first"


_username = UnicodeUsernameValidator()


def _check_label(value: str) -> str | None:
    if value not in Label.values:
        return UNKNOWN_LABEL.format(value=shorten(value), choices=", ".join(Label.values))
    return None


def _check_annotator(value: str) -> str | None:
    try:
        _username(value)
    except ValidationError:
        return BAD_ANNOTATOR
    return None


def _revisions_record(annotations: Iterable[Annotation], idents: set[tuple[int, int]]) -> None:
    """Append the current value of the imported labels ``idents`` (patch id, annotator id)
    to their history, as ``annotation_record`` does for labels given in the app."""
    AnnotationRevision.objects.bulk_create(
        [
            AnnotationRevision(annotation_id=a.pk, label=a.label, note=a.note, ratings=a.ratings)
            for a in annotations
            if (a.patch_id, a.annotator_id) in idents
        ],
        batch_size=500,
    )


def _batch_annotations(
    wanted: Iterable[tuple[int, int]],
) -> dict[tuple[int, int], Annotation]:
    """The existing labels among ``wanted`` (patch id, annotator id): only this batch's."""
    idents = set(wanted)
    patch_ids = {patch_id for patch_id, _ in idents}
    annotator_ids = {annotator_id for _, annotator_id in idents}
    rows = Annotation.objects.filter(patch_id__in=patch_ids, annotator_id__in=annotator_ids)
    return {
        (a.patch_id, a.annotator_id): a
        for a in rows.only("id", "patch_id", "annotator_id", "label", "note", "ratings", "origin")
        if (a.patch_id, a.annotator_id) in idents
    }


class LabelKind(RecordKind):
    name = "label"
    order = 30
    fields = {
        "patch": KEY_FIELD,
        "annotator": FieldSpec(
            (str,), required=True, non_empty=True, max_length=150, check=_check_annotator
        ),
        "label": FieldSpec((str,), required=True, check=_check_label),
        "note": FieldSpec((str,), max_length=MAX_NOTE),
        # A campaign's rated dimensions ({name: rating}); a record without them leaves the
        # label's ratings as they are.
        "ratings": FieldSpec((dict,), check=ratings_problem),
    }

    def identity(self, data: dict[str, Any]) -> tuple[str, str]:
        # User names are case-insensitive: "Rater-1" and "rater-1" are one annotator.
        return "annotator", f"of patch {data['patch']!r} by {data['annotator'].lower()!r}"

    def check(self, record: Record, ctx: ImportContext) -> None:
        if message := ctx.reference_error("patch", record.data["patch"]):
            ctx.error(record, "patch", message)
        # Importing labels never hands the annotator role to an existing lead or reviewer;
        # to a user without any role only when the lead asks (``grant_annotator_role``).
        others = ctx.cached("non_annotators", non_annotators)
        user = others.get(record.data["annotator"].lower())
        if user is None:
            return
        if not user.roles and ctx.grant_annotator_role:
            to_grant: dict[str, str] = ctx.cached("annotators_to_grant", dict)
            to_grant[user.username.lower()] = user.username
            return
        # Said once per user (``checked``), not once per line: nothing is written meanwhile.
        refused: dict[str, list[int]] = ctx.cached("annotators_refused", dict)
        first_and_count = refused.setdefault(user.username.lower(), [record.line, 0])
        first_and_count[1] += 1
        ctx.errors_pending = True

    def checked(self, ctx: ImportContext) -> None:
        refused: dict[str, list[int]] = ctx.cached("annotators_refused", dict)
        if not refused:
            return
        others = ctx.cached("non_annotators", non_annotators)
        for folded, (line, count) in refused.items():
            user = others[folded]
            lines = _lines_naming(count)
            if user.roles:
                roles = " and ".join(user.roles)
                message = NOT_AN_ANNOTATOR_LEAD.format(name=user.username, lines=lines, roles=roles)
            else:
                message = NOT_AN_ANNOTATOR.format(name=user.username, lines=lines)
                ctx.grantable.append(user.username)
            ctx.errors.append(BundleError(line, "annotator", message))

    def write(self, records: list[Record], ctx: ImportContext) -> KindCounts:
        dataset = ctx.dataset
        assert dataset is not None
        if not records:
            return KindCounts()
        names = {r.data["annotator"] for r in records}
        self._grant(names, ctx)
        users = annotators_ensure(usernames=names)
        # Patches are written before labels: their ids are looked up once per import.
        patch_ids = ctx.cached(
            "label_patch_ids", lambda: dict(dataset.patches.values_list("key", "id"))
        )
        wanted: dict[tuple[int, int], dict[str, Any]] = {
            (patch_ids[r.data["patch"]], users[r.data["annotator"]].pk): {
                "label": r.data["label"],
                "note": r.data.get("note", ""),
                **({"ratings": r.data["ratings"]} if "ratings" in r.data else {}),
            }
            for r in records
        }
        existing = _batch_annotations(wanted)
        # Labels the import creates or changes: each new value joins the label's history.
        changing = {
            ident
            for ident, values in wanted.items()
            if ident not in existing
            or any(getattr(existing[ident], name) != value for name, value in values.items())
        }
        # The campaign a label was last given in stays: an import does not move it.
        counts = upsert(
            model=Annotation,
            existing=existing,
            wanted=wanted,
            build=lambda ident, values: Annotation(
                patch_id=ident[0],
                annotator_id=ident[1],
                origin=Annotation.Origin.IMPORTED,
                **values,
            ),
            on_update={"origin": Annotation.Origin.IMPORTED},
        )
        if changing:
            _revisions_record(_batch_annotations(changing).values(), changing)
        return counts

    def _grant(self, names: set[str], ctx: ImportContext) -> None:
        """Give the annotator role, audited, to the users of this batch the lead asked to."""
        to_grant: dict[str, str] = ctx.cached("annotators_to_grant", dict)
        granted: list[str] = ctx.cached("annotators_granted", list)
        folded = {name.lower() for name in names} & to_grant.keys()
        if not folded:
            return
        assert ctx.dataset is not None
        granted += annotator_role_grant(
            usernames=[to_grant.pop(name) for name in sorted(folded)],
            actor=ctx.actor,
            detail={"why": GRANTED_BY_IMPORT, "dataset": ctx.dataset.name},
        )

    def finish(self, ctx: ImportContext) -> None:
        granted: list[str] = ctx.cached("annotators_granted", list)
        if granted:
            names = ", ".join(sorted(granted)[:10]) + (", …" if len(granted) > 10 else "")
            s = "" if len(granted) == 1 else "s"
            ctx.notes.append(GRANTED_NOTE.format(count=len(granted), s=s, names=names))

    def export(self, dataset: Dataset) -> Iterator[dict[str, Any]]:
        annotations = (
            Annotation.objects.filter(patch__dataset=dataset)
            .annotate(patch_key=F("patch__key"), annotator_name=F("annotator__username"))
            .order_by("patch__sort_key", "annotator__username")
        )
        for a in annotations.iterator(chunk_size=1000):
            record = {
                "patch": a.patch_key,
                "annotator": a.annotator_name,
                "label": a.label,
                "note": a.note,
            }
            if a.ratings:  # by name: PostgreSQL's jsonb keeps no order of its own
                record["ratings"] = dict(sorted(a.ratings.items()))
            yield record
