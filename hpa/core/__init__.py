"""The pure core: arithmetic and decisions with no I/O, no clock reads and no logging.

Everything here is stdlib-only; time, history and observations go in as arguments and frozen
values come out. The import contract in ``.importlinter`` and ``tests/hpa/core/test_purity.py``
enforce this.
"""
