"""The README is a front door and the documentation site under ``docs/`` is the manual.

``make test`` builds the site with ``mkdocs build --strict``, which fails on a broken link
between pages; these checks keep what it does not see: README stays short, every page is in
the nav (so a reader can walk to it) and every nav entry is a page, and README's links into
the repository lead somewhere.
"""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README_MAX_LINES = 250

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _nav_pages(entries: Any) -> Iterator[str]:
    """Every page path named in a MkDocs nav, however deeply nested."""
    if isinstance(entries, str):
        yield entries
    elif isinstance(entries, list):
        for entry in entries:
            yield from _nav_pages(entry)
    elif isinstance(entries, dict):
        for value in entries.values():
            yield from _nav_pages(value)


def _nav() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return list(_nav_pages(config["nav"]))


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, (
        f"README.md has {lines} lines; keep it under {README_MAX_LINES} and move the rest to a "
        "page under docs/"
    )


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    nav = _nav()
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert sorted(pages - set(nav)) == [], "pages missing from the nav of mkdocs.yml"
    assert sorted(set(nav) - pages) == [], "nav entries of mkdocs.yml with no page"
    assert len(nav) == len(set(nav)), "a page listed twice in the nav"


def test_readme_links_lead_somewhere() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if not t.startswith(("http://", "https://"))]
    assert targets, "README.md links to no page"
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert missing == [], f"README.md links to files that do not exist: {missing}"
