"""The reaper removes a dead lab's stray processes and work dir (no binaries needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.lab import reaper


def test_reap_kills_processes_naming_the_work_dir_and_removes_it(tmp_path: Path) -> None:
    work_dir = tmp_path / "hpa-lab-dead"
    work_dir.mkdir()
    (work_dir / "prometheus.yml").write_text("global: {}\n")
    stray = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--config.file={work_dir}/x"]
    )
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert stray.pid in reaper.processes_mentioning(str(work_dir))
        reaper.reap(
            work_dir=work_dir, netns="hpalabtest", host_link="hpalabtesth", keep_work_dir=False
        )
        assert stray.wait(timeout=10) == -9
        assert bystander.poll() is None
        assert not work_dir.exists()
    finally:
        stray.kill()
        bystander.kill()
        stray.wait()
        bystander.wait()
