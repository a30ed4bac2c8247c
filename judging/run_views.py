"""Pages of judging runs (being written: see issue 5)."""
