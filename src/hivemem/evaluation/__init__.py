"""Measurement: the evaluation suites, the benchmarks and ``doctor``."""
