"""The ``label`` record kind of the bundle: annotators' labels of patches."""

from collections.abc import Iterator
from typing import Any

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db.models import F

from rubrics.bundle import KEY_FIELD, FieldSpec, ImportContext, KindCounts, Record, RecordKind
from rubrics.bundle_kinds import upsert
from rubrics.models import Dataset
from sejury_web.users import annotators_ensure

from .models import Annotation, Label

UNKNOWN_PATCH = "unknown patch {key!r}: neither in this file nor in the dataset"
UNKNOWN_LABEL = "unknown label {value!r}; expected one of: {choices}"
BAD_ANNOTATOR = "an annotator name may hold letters, digits and @ . + - _ only"

_username = UnicodeUsernameValidator()


def _check_label(value: str) -> str | None:
    if value not in Label.values:
        return UNKNOWN_LABEL.format(value=value, choices=", ".join(Label.values))
    return None


def _check_annotator(value: str) -> str | None:
    try:
        _username(value)
    except ValidationError:
        return BAD_ANNOTATOR
    return None


class LabelKind(RecordKind):
    name = "label"
    order = 30
    fields = {
        "patch": KEY_FIELD,
        "annotator": FieldSpec(
            (str,), required=True, non_empty=True, max_length=150, check=_check_annotator
        ),
        "label": FieldSpec((str,), required=True, check=_check_label),
        "note": FieldSpec((str,)),
    }

    def identity(self, data: dict[str, Any]) -> tuple[str, str]:
        return "annotator", f"of patch {data['patch']!r} by {data['annotator']!r}"

    def check(self, record: Record, ctx: ImportContext) -> None:
        patch_key = record.data["patch"]
        if not ctx.knows("patch", patch_key):
            ctx.error(record, "patch", UNKNOWN_PATCH.format(key=patch_key))

    def write(self, records: list[Record], ctx: ImportContext) -> KindCounts:
        dataset = ctx.dataset
        assert dataset is not None
        if not records:
            return KindCounts()
        users = annotators_ensure(usernames={r.data["annotator"] for r in records})
        patch_ids = dict(dataset.patches.values_list("key", "id"))
        wanted: dict[tuple[int, int], dict[str, Any]] = {
            (patch_ids[r.data["patch"]], users[r.data["annotator"]].pk): {
                "label": r.data["label"],
                "note": r.data.get("note", ""),
            }
            for r in records
        }
        existing: dict[tuple[int, int], Annotation] = {
            (a.patch_id, a.annotator_id): a
            for a in Annotation.objects.filter(
                patch__dataset=dataset, annotator__in=list(users.values())
            )
        }
        return upsert(
            model=Annotation,
            existing=existing,
            wanted=wanted,
            build=lambda ident, values: Annotation(
                patch_id=ident[0],
                annotator_id=ident[1],
                origin=Annotation.Origin.IMPORTED,
                **values,
            ),
        )

    def export(self, dataset: Dataset) -> Iterator[dict[str, Any]]:
        annotations = (
            Annotation.objects.filter(patch__dataset=dataset)
            .annotate(patch_key=F("patch__key"), annotator_name=F("annotator__username"))
            .order_by("patch__key", "annotator__username")
        )
        for a in annotations.iterator(chunk_size=1000):
            yield {
                "patch": a.patch_key,
                "annotator": a.annotator_name,
                "label": a.label,
                "note": a.note,
            }
