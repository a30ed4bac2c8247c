"""REFINE on quality ladders: the evaluator tester (paper 002)."""
