"""Quality ladders (REFINE, paper 002): patches of known, decreasing quality from a bug's fix."""
