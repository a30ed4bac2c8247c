"""The streamlined rubric review (being written: see issue 5)."""
