"""A network namespace and veth pair that give the lab's aggregated servers their own address.

Upstream counterpart: none in Kubernetes; kind gives every node a container address for the same
reason. kube-apiserver refuses Endpoints that point at loopback, so an aggregated server (the
test server, later the metrics adapter and the VPA webhook) must listen on a non-loopback address
that the API server can route to. Addressing (all inside 198.18.0.0/15, the benchmark range of
RFC 2544, never leaving this machine):

- 198.18.0.0/24 is cut into /30 slots. Slot k is 198.18.0.{4k}/30: the host end of the veth
  (`hpalab<k>h`) is .4k+1 and carries the API server's advertise and bind address; the namespace
  end (`hpalab<k>n`, in netns `hpalab<k>`) is .4k+2 and is where aggregated servers listen.
- 198.19.0.0/24 is the Service cluster IP range (`kubernetes` is 198.19.0.1).
- 198.19.128.0/17 holds kwok's fake pod IPs and 198.19.64.1 its fake node IP; nothing listens
  there.

A slot is owned through an exclusive `flock` on `$HPA_CACHE/lab-slots/<k>.lock`, held for the
lab's lifetime, so parallel labs do not collide. Whoever takes a slot first removes what a crashed
run left in it (namespace and links), then builds it anew; teardown removes it again.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO

SLOT_COUNT = 64
SLOT_NETWORK_PREFIX = "198.18.0."
SERVICE_CLUSTER_IP_RANGE = "198.19.0.0/24"
KUBERNETES_SERVICE_IP = "198.19.0.1"
POD_CIDR = "198.19.128.1/17"
FAKE_NODE_IP = "198.19.64.1"


class NetnsError(RuntimeError):
    pass


def _ip(*args: str, namespace: str | None = None, check: bool = True) -> None:
    argv = ["ip", "netns", "exec", namespace, "ip", *args] if namespace else ["ip", *args]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")


@dataclass
class Netns:
    """One slot: a namespace with an address reachable from the host (and the API server)."""

    slot: int
    lock_file: IO[str]

    @property
    def name(self) -> str:
        return f"hpalab{self.slot}"

    @property
    def host_link(self) -> str:
        return f"hpalab{self.slot}h"

    @property
    def namespace_link(self) -> str:
        return f"hpalab{self.slot}n"

    @property
    def host_ip(self) -> str:
        return f"{SLOT_NETWORK_PREFIX}{4 * self.slot + 1}"

    @property
    def namespace_ip(self) -> str:
        return f"{SLOT_NETWORK_PREFIX}{4 * self.slot + 2}"

    def exec_argv(self, argv: list[str]) -> list[str]:
        """`argv` wrapped to run inside the namespace."""
        return ["ip", "netns", "exec", self.name, *argv]

    def remove_links(self) -> None:
        """Delete the namespace and the host link; absent ones are fine (idempotent)."""
        _ip("link", "delete", self.host_link, check=False)
        _ip("netns", "delete", self.name, check=False)

    def create_links(self) -> None:
        self.remove_links()
        _ip("netns", "add", self.name)
        _ip("link", "add", self.host_link, "type", "veth", "peer", "name", self.namespace_link)
        _ip("link", "set", self.namespace_link, "netns", self.name)
        _ip("addr", "add", f"{self.host_ip}/30", "dev", self.host_link)
        _ip("link", "set", self.host_link, "up")
        _ip(
            "addr",
            "add",
            f"{self.namespace_ip}/30",
            "dev",
            self.namespace_link,
            namespace=self.name,
        )
        _ip("link", "set", self.namespace_link, "up", namespace=self.name)
        _ip("link", "set", "lo", "up", namespace=self.name)

    def set_namespace_link(self, *, up: bool) -> None:
        """Take the namespace end of the veth down (everything in the namespace is cut off from
        the host and the API server, a network partition) or up again (``tests/faults``)."""
        _ip("link", "set", self.namespace_link, "up" if up else "down", namespace=self.name)

    def close(self) -> None:
        self.remove_links()
        fcntl.flock(self.lock_file, fcntl.LOCK_UN)
        self.lock_file.close()


def acquire_netns(lock_dir: Path) -> Netns:
    """Take the first free slot, clean what a crashed run left in it, and build it."""
    if os.geteuid() != 0:
        raise NetnsError("the lab needs root for `ip netns` (the CI and dev machines run as root)")
    lock_dir.mkdir(parents=True, exist_ok=True)
    for slot in range(SLOT_COUNT):
        lock_file = (lock_dir / f"{slot}.lock").open("a+")
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock_file.close()
            continue
        netns = Netns(slot, lock_file)
        try:
            netns.create_links()
        except BaseException:
            netns.close()
            raise
        return netns
    raise NetnsError(f"all {SLOT_COUNT} lab network slots in {lock_dir} are taken")
