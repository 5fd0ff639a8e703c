"""Benchmarks (``vismem bench``): speed and memory targets live here, not in timed tests."""
