"""What Label Studio writes: its JSON export of tasks it imported from us, annotated.

``labelstudio_export`` builds exactly the structure of Label Studio's *Export › JSON*
(https://labelstud.io/guide/export#Label-Studio-JSON-format-of-annotated-tasks, and
``label_studio/data_export/serializers.py``): each task with Label Studio's own ids and
timestamps, its ``data`` as imported, its predictions as stored, and its annotations, each
with ``completed_by`` (the user's id, or with user details an object with id and e-mail),
``result`` (one item per control tag), ``was_cancelled`` (a skipped task), ``lead_time``.
"""

import dataclasses
import itertools
import uuid
from typing import Any

from rubrics.models import Patch

CREATED = "2025-05-12T09:14:03.512044Z"
UPDATED = "2025-05-12T09:20:41.004513Z"
PROJECT = 7


@dataclasses.dataclass(frozen=True)
class LSUser:
    """A Label Studio user: its own id and e-mail."""

    id: int
    email: str


@dataclasses.dataclass(frozen=True)
class Given:
    """One annotation given in Label Studio: a choice (or none) and a note; or skipped."""

    user: LSUser
    choice: str | None = None
    note: str = ""
    cancelled: bool = False
    choices: list[str] | None = None  # several choices, as a hand-edited file may have


def _result(given: Given, serial: int) -> list[dict[str, Any]]:
    result = []
    choices = given.choices if given.choices is not None else [given.choice] if given.choice else []
    if choices and not given.cancelled:
        result.append(
            {
                "value": {"choices": choices},
                "id": f"ch{serial:06d}",
                "from_name": "label",
                "to_name": "diff",
                "type": "choices",
                "origin": "manual",
            }
        )
    if given.note and not given.cancelled:
        result.append(
            {
                "value": {"text": given.note.split("\n")},
                "id": f"nt{serial:06d}",
                "from_name": "note",
                "to_name": "diff",
                "type": "textarea",
                "origin": "manual",
            }
        )
    return result


def labelstudio_export(
    tasks: list[dict[str, Any]],
    given: dict[int, list[Given]],
    *,
    user_details: bool = True,
    first_task_id: int = 501,
) -> list[dict[str, Any]]:
    """Label Studio's JSON export of ``tasks`` (as we exported them) once annotated:
    ``given`` holds the annotations of the task at each index (0-based)."""
    annotation_ids = itertools.count(9001)
    prediction_ids = itertools.count(4001)
    exported = []
    for index, task in enumerate(tasks):
        task_id = first_task_id + index
        annotations = []
        for g in given.get(index, []):
            serial = next(annotation_ids)
            completed_by: Any = (
                {"id": g.user.id, "email": g.user.email, "first_name": "", "last_name": ""}
                if user_details
                else g.user.id
            )
            annotations.append(
                {
                    "id": serial,
                    "completed_by": completed_by,
                    "result": _result(g, serial),
                    "was_cancelled": g.cancelled,
                    "ground_truth": False,
                    "created_at": CREATED,
                    "updated_at": UPDATED,
                    "draft_created_at": None,
                    "lead_time": 37.912,
                    "prediction": {},
                    "result_count": 0,
                    "unique_id": str(uuid.UUID(int=serial)),
                    "import_id": None,
                    "last_action": None,
                    "bulk_created": False,
                    "task": task_id,
                    "project": PROJECT,
                    "updated_by": g.user.id,
                    "parent_prediction": None,
                    "parent_annotation": None,
                    "last_created_by": None,
                }
            )
        predictions = [
            {
                "id": next(prediction_ids),
                "result": p["result"],
                "model_version": p["model_version"],
                "created_ago": "2 hours, 3 minutes",
                "score": p.get("score"),
                "cluster": None,
                "neighbors": None,
                "mislabeling": 0.0,
                "created_at": CREATED,
                "updated_at": CREATED,
                "model": None,
                "model_run": None,
                "task": task_id,
                "project": PROJECT,
            }
            for p in task.get("predictions", [])
        ]
        exported.append(
            {
                "id": task_id,
                "annotations": annotations,
                "file_upload": "3f2a91c0-labelstudio-tasks.json",
                "drafts": [],
                "predictions": predictions,
                "data": task["data"],
                "meta": {},
                "created_at": CREATED,
                "updated_at": UPDATED,
                "inner_id": index + 1,
                "total_annotations": sum(not g.cancelled for g in given.get(index, [])),
                "cancelled_annotations": sum(g.cancelled for g in given.get(index, [])),
                "total_predictions": len(predictions),
                "comment_count": 0,
                "unresolved_comment_count": 0,
                "last_comment_updated_at": None,
                "project": PROJECT,
                "updated_by": None,
                "comment_authors": [],
            }
        )
    return exported


def patch_ids(keys: list[str]) -> list[int]:
    """The ids of the patches keyed ``keys``, in that order (tasks carry ids, not keys)."""
    ids = dict(Patch.objects.filter(key__in=keys).values_list("key", "pk"))
    return [ids[key] for key in keys]
