"""The lab's reaper: if the Python process that owns a lab dies without tearing it down
(`kill -9`, an OOM kill), remove what the lab left.

Upstream counterpart: none; kind and the integration framework leave this to the caller.
The control-plane processes already die with their parent (`PR_SET_PDEATHSIG`), but Prometheus
and the workload exporter run in sessions of their own. So the lab starts this small process,
without a death signal, inside its process group: a normal teardown simply kills it; when the
owner disappears instead, it SIGKILLs every process whose command line mentions the lab's work
dir, deletes the lab's network namespace and host link, and removes the work dir.

    python -m tests.lab.reaper --owner PID --work-dir DIR --netns NAME --host-link LINK
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

POLL_SECONDS = 0.5


def processes_mentioning(text: str) -> list[int]:
    """PIDs (other than ours) whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace"
            ):
                found.append(int(entry.name))
    return found


def reap(*, work_dir: Path, netns: str, host_link: str, keep_work_dir: bool) -> None:
    for pid in processes_mentioning(str(work_dir)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    subprocess.run(["ip", "link", "delete", host_link], capture_output=True, check=False)
    subprocess.run(["ip", "netns", "delete", netns], capture_output=True, check=False)
    if not keep_work_dir:
        shutil.rmtree(work_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.lab.reaper")
    parser.add_argument("--owner", type=int, required=True)
    parser.add_argument("--work-dir", type=Path, required=True)
    parser.add_argument("--netns", required=True)
    parser.add_argument("--host-link", required=True)
    parser.add_argument("--keep-work-dir", action="store_true")
    args = parser.parse_args(argv)
    while os.getppid() == args.owner:
        time.sleep(POLL_SECONDS)
    reap(
        work_dir=args.work_dir,
        netns=args.netns,
        host_link=args.host_link,
        keep_work_dir=args.keep_work_dir,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
