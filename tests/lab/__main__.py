"""`make lab`: start the whole lab in the foreground, print where it is, stop on Ctrl-C.

Upstream counterpart: `hack/local-up-cluster.sh`, which also runs until interrupted and prints
how to reach the cluster. Deviation: nothing is installed system-wide; all state is in a temp dir.
"""

from __future__ import annotations

import argparse
import signal

from tests.lab.controlplane import ControlPlaneConfig
from tests.lab.lab import Lab, LabConfig


def parse_config(argv: list[str] | None = None) -> LabConfig:
    parser = argparse.ArgumentParser(prog="python -m tests.lab", description=__doc__)
    defaults = ControlPlaneConfig()
    parser.add_argument("--nodes", type=int, default=defaults.node_count)
    parser.add_argument(
        "--startup-delay-seconds", type=float, default=defaults.startup_delay_seconds
    )
    parser.add_argument(
        "--readiness-delay-seconds", type=float, default=defaults.readiness_delay_seconds
    )
    parser.add_argument(
        "--hpa-controller",
        action="store_true",
        help="also run kube-controller-manager's own HPA controller (side-by-side comparisons)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the work dir (PKI, logs) after exit"
    )
    args = parser.parse_args(argv)
    return LabConfig(
        control_plane=ControlPlaneConfig(
            node_count=args.nodes,
            startup_delay_seconds=args.startup_delay_seconds,
            readiness_delay_seconds=args.readiness_delay_seconds,
            hpa_controller_enabled=args.hpa_controller,
        ),
        keep_work_dir=args.keep,
    )


def main(argv: list[str] | None = None) -> int:
    config = parse_config(argv)
    try:
        with Lab(config) as lab:
            print(lab.describe(), flush=True)
            print("lab is up; Ctrl-C stops it", flush=True)
            while True:
                signal.pause()
    except KeyboardInterrupt:
        print("lab stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
