"""The agreement report tests' dataset, built fresh for each test."""

import pytest

from tests.judging.reports.factories import Small, build_small


@pytest.fixture
def small(db: None) -> Small:
    """The small hand-made dataset of ``factories``, with its two finished runs."""
    return build_small()
