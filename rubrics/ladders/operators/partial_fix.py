"""Level 2, *partial fix*: roughly the later half of the changes is reverted.

``max(1, changes // 2)`` of them are reverted, the last in diff order, but never the first
change of a file, nor the change of a created or deleted file, so the rung touches the same
files. Skipped when every changed file has one change.
"""

from .reference import Edits, Reference
from .rungs import Rung, Skipped

ONE_CHANGE = "the fix is one change: no part of it can be dropped"
ONE_CHANGE_PER_FILE = (
    "each of the {files} changed files has one change: dropping one would leave its file untouched"
)


def partial_fix(reference: Reference) -> Rung | Skipped:
    """Level 2: the later half of the changes that can be dropped, reverted."""
    firsts = {reference.file_changes(f)[0].number for f in reference.changed_files()}
    droppable = [
        change
        for change in reference.changes
        if change.number not in firsts
        and not reference.files[change.file].is_new
        and not reference.files[change.file].is_deleted
    ]
    if not droppable:
        if len(reference.changes) == 1:
            return Skipped(2, ONE_CHANGE)
        return Skipped(2, ONE_CHANGE_PER_FILE.format(files=len(reference.changed_files())))
    dropped = droppable[-min(len(droppable), max(1, len(reference.changes) // 2)) :]
    edits = Edits(reverted={change.number for change in dropped})
    return Rung(2, reference.render(edits), tuple(reference.reverted(c) for c in dropped))
