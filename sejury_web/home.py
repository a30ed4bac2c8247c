"""The home page's parts: what needs each role, registered by the apps that know it.

``/`` shows each of the user's roles its part (lead, reviewer, annotator, in that order): the
items that need that role, each a count, a link to where the role acts on them and a few rows.
This package knows no domain, so the apps register a ``HomeSection`` per role from their
``AppConfig.ready()`` (as they register ``JobKind``s in ``sejury_web.durable``); a section's
``items`` is a selector that costs a fixed number of queries, whatever the data's size.

A role's part lists the items with something waiting first, then the empty ones, each in one
line.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib.auth.models import User

from sejury_web.roles import Role, user_roles

# Each item shows this many rows at most, and links to the page with the rest.
HOME_ROWS = 5
ROLE_ORDER = (Role.LEAD, Role.REVIEWER, Role.ANNOTATOR)


@dataclass(frozen=True)
class HomeRow:
    """One thing waiting: what it is, where to act on it, and what is left of it."""

    text: str
    url: str
    detail: str = ""  # "12 of 24 judged", "3 disagreements"
    percent: int | None = None  # a progress bar when given
    action: str = ""  # a button's label ("Continue"), else the text is the link


@dataclass(frozen=True)
class HomeItem:
    """What a section counts for a user: ``count`` things, their first rows, and the page where
    the role acts on all of them."""

    key: str  # for the page and tests: ``data-home-item``
    title: str  # "Rubrics awaiting review"
    count: int
    url: str
    link_text: str  # "Review queue"
    empty: str  # the one line shown when ``count`` is 0: "No rubric awaits review."
    rows: tuple[HomeRow, ...] = ()
    note: str = ""  # one line under the title when something waits
    # How many rows there are in all, when a row is not one of the things counted (a dataset
    # with its patches waiting); else the count.
    rows_total: int | None = None

    @property
    def more(self) -> int:
        """How many rows are not among those shown."""
        total = self.count if self.rows_total is None else self.rows_total
        return max(total - len(self.rows), 0)


@dataclass(frozen=True)
class HomeSection:
    """An app's contribution to one role's part of the home page."""

    role: Role
    name: str  # unique per role
    items: Callable[[User], list[HomeItem]]
    order: int = 100  # lower first, before the waiting-first sort (a tie-breaker)


@dataclass(frozen=True)
class HomePart:
    role: Role
    waiting: list[HomeItem] = field(default_factory=list)  # count > 0, first
    empty: list[HomeItem] = field(default_factory=list)

    @property
    def title(self) -> str:
        return str(self.role.label)

    @property
    def empty_lines(self) -> list[tuple[HomeItem, bool]]:
        """The empty items, each with whether its line links: only the first line of a page."""
        seen: set[str] = set()
        lines = []
        for item in self.empty:
            path = item.url.split("#")[0]
            lines.append((item, path not in seen))
            seen.add(path)
        return lines


_sections: dict[tuple[str, str], HomeSection] = {}


def home_section_register(section: HomeSection) -> None:
    """Add ``section`` to its role's part of the home page (from an app's ``ready()``)."""
    _sections[section.role, section.name] = section


def home_sections(role: Role) -> list[HomeSection]:
    return sorted(
        (section for section in _sections.values() if section.role == role),
        key=lambda section: section.order,
    )


def home_parts(*, user: User) -> list[HomePart]:
    """Each of ``user``'s roles' part: its sections' items, those with something waiting
    first (in section order), then the empty ones; an item of the same key as one of an
    earlier part is left out."""
    roles = user_roles(user)
    parts = []
    shown: set[str] = set()  # an item two roles share (flagged rubrics) shows in the first
    for role in ROLE_ORDER:
        if role not in roles:
            continue
        items = [item for section in home_sections(role) for item in section.items(user)]
        items = [item for item in items if item.key not in shown]
        shown.update(item.key for item in items)
        parts.append(
            HomePart(
                role,
                waiting=[item for item in items if item.count],
                empty=[item for item in items if not item.count],
            )
        )
    return parts
