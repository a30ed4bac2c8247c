"""Benchmarks, run by hand (``make bench``): each prints its figures and their ratio to
its target."""
