"""Reading the agreement report page as a browser does: the shell, then each section it
loads through htmx."""

import re
from html import unescape
from typing import TypeVar

from django.test import Client

from judging.reports.selectors import SECTIONS

T = TypeVar("T")
SECTION_URL = re.compile(r'hx-get="([^"]*section=[a-z_]+[^"]*)"')


def whole_page(client: Client, url: str) -> str:
    """The shell of ``url`` with every section it loads put in place of its placeholder."""
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    page = response.content.decode()
    loads = SECTION_URL.findall(page)
    assert loads, "the page loads no section"
    assert len(loads) <= len(SECTIONS)
    parts = [page]
    base = url.split("?")[0]
    for query in loads:
        section = client.get(base + unescape(query))
        assert section.status_code == 200, (query, section.status_code)
        parts.append(section.content.decode())
    return "\n".join(parts)


def present(section: T | None) -> T:
    """A section the report was asked for (``agreement_report`` leaves the others None)."""
    assert section is not None, "the report has no such section"
    return section
