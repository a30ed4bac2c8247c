"""A reference fix's ladder: each level asked for, built by its operator or skipped.

Level 0, *reference fix*, is the reference diff unchanged; levels 1 to 4 are built by
:mod:`.equivalent_rewrite`, :mod:`.partial_fix`, :mod:`.wrong_fix` and :mod:`.no_fix`.
"""

from collections.abc import Callable, Iterable

from .equivalent_rewrite import equivalent_rewrite
from .no_fix import no_fix
from .partial_fix import partial_fix
from .reference import Reference
from .rungs import LEVELS, Rung, Skipped
from .wrong_fix import wrong_fix

NO_CHANGE = "the reference changes no line: there is nothing to degrade"
UNKNOWN_LEVELS = "unknown ladder levels {levels}: the levels are 0 to 4"


def reference_fix(reference: Reference) -> Rung:
    """Level 0: the reference diff, unchanged."""
    return Rung(0, reference.text, ())


_BUILDERS: dict[int, Callable[[Reference], Rung | Skipped]] = {
    0: reference_fix,
    1: equivalent_rewrite,
    2: partial_fix,
    3: wrong_fix,
    4: no_fix,
}


def build_ladder(
    reference_diff: str, *, levels: Iterable[int] = (0, 1, 2, 3, 4)
) -> list[Rung | Skipped]:
    """The rungs of ``reference_diff``'s ladder at ``levels``, in level order.

    Raises :class:`sejury_web.diffs.DiffError` if the reference does not parse, and
    ``ValueError`` for a level that is not one of :data:`LEVELS`.
    """
    wanted = sorted(set(levels))
    unknown = [level for level in wanted if level not in LEVELS]
    if unknown:
        raise ValueError(UNKNOWN_LEVELS.format(levels=", ".join(map(str, unknown))))
    reference = Reference(reference_diff)
    if not reference.changes:
        return [
            reference_fix(reference) if level == 0 else Skipped(level, NO_CHANGE)
            for level in wanted
        ]
    return [_BUILDERS[level](reference) for level in wanted]
