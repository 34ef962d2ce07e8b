"""The controller's informers, run in the test process, compared object by object with a fresh
LIST from the API server (test-only code).

``InformerMirror`` runs ``hpa.kube.informer.Informer`` over the controller's own collections
(``hpa.app.controller``: HPAs, pods, and every scalable workload kind) with the controller's
parse functions, through a kubeconfig of the test's choosing (the fault proxy's, or the lab's
while kube-apiserver or etcd restarts), on its own event loop in a thread. ``differences()``
lists every object whose key or resourceVersion differs between a store and a LIST made now;
``converge()`` waits until there are none.
"""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path
from typing import Any

from hpa.app.controller import HPA_PATH, POD_PATH, WORKLOAD_PATHS
from hpa.kube.client import ClientSettings, KubeClient, load_client
from hpa.kube.clock import SystemClock
from hpa.kube.informer import Informer
from hpa.kube.records import parse_hpa, parse_pod, parse_workload
from tests.e2e.controller_lab import ApiReader
from tests.loopthread import LoopThread

__all__ = ["InformerMirror"]


class InformerMirror:
    def __init__(self, kubeconfig: Path, *, namespace: str) -> None:
        self._kubeconfig = kubeconfig
        self.namespace = namespace
        self._loop = LoopThread()
        self._client: KubeClient | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.informers: dict[str, Informer[Any]] = {}

    def start(self) -> None:
        self._loop.start()
        self._loop.run(self._start(), timeout=60)

    async def _start(self) -> None:
        client = await load_client(ClientSettings(kubeconfig_path=str(self._kubeconfig)))
        self._client = client
        clock = SystemClock()
        self.informers[HPA_PATH] = Informer(client, HPA_PATH, parse=parse_hpa, clock=clock)
        self.informers[POD_PATH] = Informer(client, POD_PATH, parse=parse_pod, clock=clock)
        for kind, path in WORKLOAD_PATHS.items():
            parse = functools.partial(parse_workload, kind=kind)
            self.informers[path] = Informer(client, path, parse=parse, clock=clock)
        self._tasks = [asyncio.create_task(i.run()) for i in self.informers.values()]
        await asyncio.wait_for(
            asyncio.gather(*(i.wait_synced() for i in self.informers.values())), 60
        )

    def stop(self) -> None:
        self._loop.stop(self._stop())

    async def _stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._client is not None:
            await self._client.close()

    async def _snapshot(self) -> dict[str, dict[str, str]]:
        return {
            path: {
                f"{r.namespace}/{r.name}": r.resource_version
                for r in informer.store
                if r.namespace == self.namespace
            }
            for path, informer in self.informers.items()
        }

    def differences(self, reader: ApiReader) -> list[str]:
        """Objects of ``namespace`` that differ between a store and a LIST made after it."""
        stores = self._loop.run(self._snapshot(), timeout=10)
        found = []
        for path, store in stores.items():
            group, _, resource = path.rpartition("/")
            listed = reader.get(f"{group}/namespaces/{self.namespace}/{resource}")
            server = {
                f"{self.namespace}/{item['metadata']['name']}": item["metadata"]["resourceVersion"]
                for item in listed.get("items") or ()
            }
            for key in sorted(server.keys() | store.keys()):
                if server.get(key) != store.get(key):
                    found.append(
                        f"{resource} {key}: cache {store.get(key)}, server {server.get(key)}"
                    )
        return found

    def converge(self, reader: ApiReader, *, timeout_seconds: float) -> float:
        """Seconds until the stores equal a LIST (objects change under the controller, so a
        store may trail a LIST for the length of one watch event); raises AssertionError with
        the differences when they persist."""
        started = time.monotonic()
        while True:
            left = self.differences(reader)
            if not left:
                return time.monotonic() - started
            if time.monotonic() - started > timeout_seconds:
                raise AssertionError(f"informers did not converge: {left[:10]}")
            time.sleep(0.2)
