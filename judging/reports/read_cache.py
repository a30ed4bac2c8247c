"""A process's last few agreement report reads, kept while their data is unchanged.

A report page asks for its four sections at once, and a team reads the same report again and
again: each section and each view read the same records (every label of the dataset, every
verdict of its runs) and built the same arrays, which is most of a large report's time. The
reads are kept here, in memory, by what they read (dataset, campaign, runs, sampling), with
the data's *version*: a few aggregates (counts, newest change) cheap to ask for, that change
whenever a label, adjudication, patch, verdict or calibration does. A read whose version
changed, or older than ``SECONDS`` (which bounds what no version sees, a renamed annotator),
is read again. Each process keeps its own ``SIZE`` most recent reads, and the figures
computed from them (small) the same way.
"""

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

SIZE = 4  # reads: the records and arrays of a 10,000-patch report are about 20 MB
SECONDS = 300.0

T = TypeVar("T")
_lock = threading.Lock()
_kinds: dict[str, OrderedDict[Hashable, tuple[Hashable, float, Any]]] = {}


def remembered(
    key: Hashable,
    version: Hashable,
    compute: Callable[[], T],
    *,
    kind: str = "reads",
    size: int = SIZE,
) -> T:
    """What ``compute()`` gave for ``key`` at this ``version``, computing it if nothing is
    kept, or if what is kept is of another version or too old. Each ``kind`` keeps its
    ``size`` most recent values."""
    now = time.monotonic()
    with _lock:
        entries = _kinds.setdefault(kind, OrderedDict())
        entry = entries.get(key)
        if entry is not None and entry[0] == version and now - entry[1] < SECONDS:
            entries.move_to_end(key)
            kept: T = entry[2]
            return kept
    value = compute()
    with _lock:
        entries[key] = (version, now, value)
        entries.move_to_end(key)
        while len(entries) > size:
            entries.popitem(last=False)
    return value


def forget() -> None:
    """Drop every kept value."""
    with _lock:
        _kinds.clear()
