"""Opening the SWE-bench fixtures (written from the published schemas) for an import."""

import io
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from rubrics.swebench.services import NamedFile, SwebenchSummary, swebench_import

FIXTURES = Path(__file__).parent / "fixtures"
INSTANCE_IDS = [
    "astropy__astropy-12907",
    "django__django-11099",
    "django__django-11133",
    "psf__requests-2317",
]


def named(name: str, data: bytes | None = None) -> NamedFile:
    """A fixture by its file name, or ``data`` under that name."""
    content = (FIXTURES / name).read_bytes() if data is None else data
    return NamedFile(name, io.BytesIO(content))


def run_import(
    *,
    instances: str | None = "instances.jsonl",
    predictions: tuple[str, ...] = (),
    results: tuple[str, ...] = (),
    dataset: str = "SWE-bench Lite",
    actor: User | None = None,
    given: dict[str, bytes] | None = None,
) -> SwebenchSummary:
    """Import fixtures by name (or, for a name in ``given``, the bytes given under it)."""

    def get(name: str) -> NamedFile:
        return named(name, (given or {}).get(name))

    return swebench_import(
        instances=get(instances) if instances else None,
        predictions=[get(name) for name in predictions],
        results=[get(name) for name in results],
        dataset_name=dataset,
        actor=actor,
    )


def as_text(errors: Any) -> list[str]:
    return [str(error) for error in errors]
