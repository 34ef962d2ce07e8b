"""Benchmarks: run as ``python -m bench.<name>``; they report ratios, never assert timings."""
