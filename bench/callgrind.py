"""Instructions of a ``python -m MODULE ARGS`` run counted by callgrind (``valgrind``): a measure
that the machine's load does not move. Used by ``bench.sim_instructions`` and ``bench.vpa_model``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile


def module_instructions(module: str, *arguments: str) -> int:
    """Instructions of one ``python -m MODULE ARGUMENTS`` run under callgrind."""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={os.path.join(scratch, 'callgrind.out')}",
                sys.executable,
                "-m",
                module,
                *arguments,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{done.stderr[-2000:]}")
    return int(found.group(1))
