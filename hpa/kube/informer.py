"""Informers: list + watch into an indexed store of slim records, with event handlers.

Upstream counterparts: client-go ``tools/cache`` — ``reflector.go`` (``ListAndWatch``: paginated
list with ``limit``/``continue``, watch from the list's resourceVersion with
``allowWatchBookmarks=true``, relist when the watch answers 410 Gone / "too old resource version",
reconnect with backoff 800 ms .. 30 s reset after 2 minutes without one, watch timeout random in
[5, 10) minutes),
``store.go``/``thread_safe_store.go`` with ``Indexers`` (we index by namespace and by label), and
``shared_informer.go`` (``AddEventHandler``, ``HasSynced``).

Deliberate deviations:
- records are produced by a per-kind parse function from orjson dicts (see ``hpa.kube.records``);
  an object that fails to parse is logged and skipped, never crashing the informer.
- a watch that ends within a second without any event counts as a failure and backs off, as the
  reflector's "very short watch" check does.
- every (re)list is a consistent read (no ``resourceVersion=0``), and a relist fires ``on_update``
  only for objects whose resourceVersion changed (upstream replays every object as an update);
  the work queue's periodic resync covers the rest.
- a watch silent for ``watch_idle_timeout_seconds`` (90 s) is taken for a dead connection (a
  half-open TCP connection: no answer, no error) and reopened from the last resourceVersion.
  kube-apiserver sends a bookmark about every minute on a watch that asks for them
  (``allowWatchBookmarks``; the watch cache's ``defaultBookmarkFrequency``), so a live watch is
  never that quiet. client-go finds a dead connection by HTTP/2 pings instead
  (``ReadIdleTimeout`` 30 s + ``PingTimeout`` 15 s); HTTP/1.1 has no ping, and without this bound
  a dead watch would only end at ``timeoutSeconds`` + 30 s (5.5 to 10.5 minutes), missing every
  change meanwhile.
- ``is_current`` tells readers whether the store follows the server: it is false from a failed
  list or watch until the next list or the next event (a bookmark counts) of a reopened watch.
  A reader that must not act on a stale copy (the HPA's ``/scale`` read) asks the API server
  instead while it is false; client-go has no such flag, and kube-controller-manager reads
  ``/scale`` from the API server at every sync.
- there is no DeltaFIFO: events are applied to the store and handlers are called inline, in
  order, in the informer's task. Handlers must be quick and must not block (enqueue a key).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog

from hpa.core.selector import Selector
from hpa.kube.client import (
    ApiError,
    ApiStatus,
    GoneError,
    KubeClient,
    TransportError,
    error_for_status,
)
from hpa.kube.clock import Clock
from hpa.kube.records import Record, object_key

log = structlog.get_logger("hpa.kube.informer")

R = TypeVar("R", bound=Record)

CONSUME_SLICE = 100
"""Items of a listed page parsed between two turns of the event loop."""
Parse = Callable[[Mapping[str, Any]], R]


_NO_KEYS: frozenset[str] = frozenset()


class Store(Generic[R]):
    """Records by ``namespace/name``, indexed by namespace and by ``label=value``.

    Each namespace has a version that changes whenever a record of it is put or deleted, so
    readers can keep answers derived from one namespace until it changes."""

    def __init__(self) -> None:
        self._items: dict[str, R] = {}
        self._by_namespace: dict[str, set[str]] = {}
        self._by_label: dict[tuple[str, str], set[str]] = {}
        self._versions: dict[str, int] = {}
        self._version_counter = 0

    def namespace_version(self, namespace: str) -> int:
        """A number that differs after any put or delete in ``namespace`` (0: never changed)."""
        return self._versions.get(namespace, 0)

    def _touch(self, namespace: str) -> None:
        self._version_counter += 1
        self._versions[namespace] = self._version_counter

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[R]:
        return iter(list(self._items.values()))

    def list_keys(self) -> list[str]:
        return list(self._items)

    def get(self, key: str) -> R | None:
        return self._items.get(key)

    def get_by_name(self, namespace: str, name: str) -> R | None:
        return self._items.get(object_key(namespace, name))

    def list_namespace(self, namespace: str) -> list[R]:
        return [self._items[key] for key in sorted(self._by_namespace.get(namespace, ()))]

    def select(self, namespace: str | None, selector: Selector) -> list[R]:
        """Records in ``namespace`` (all when ``None``) whose labels match ``selector``, by key.

        Only the smallest of the candidate index sets (the namespace's, each ``key=value`` term's)
        is walked; nothing is copied."""
        if selector.matches_nothing:
            return []
        candidates: Collection[str] = self._items
        if namespace is not None:
            candidates = self._by_namespace.get(namespace, _NO_KEYS)
        for label in selector.equality_terms().items():
            indexed = self._by_label.get(label, _NO_KEYS)
            if len(indexed) < len(candidates):
                candidates = indexed
        items = self._items
        selected: list[R] = []
        for key in sorted(candidates):
            record = items[key]
            if (namespace is None or record.namespace == namespace) and selector.matches(
                record.labels
            ):
                selected.append(record)
        return selected

    def put(self, key: str, record: R) -> R | None:
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
            self._touch(old.namespace)
        self._touch(record.namespace)
        self._items[key] = record
        self._by_namespace.setdefault(record.namespace, set()).add(key)
        for label in record.labels.items():
            self._by_label.setdefault(label, set()).add(key)
        return old

    def delete(self, key: str) -> R | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
            self._touch(old.namespace)
        return old

    def _unindex(self, key: str, record: R) -> None:
        _discard(self._by_namespace, record.namespace, key=key)
        for label in record.labels.items():
            _discard(self._by_label, label, key=key)


def _discard(index: dict[Any, set[str]], entry: Any, *, key: str) -> None:
    keys = index.get(entry)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[entry]


@dataclass(frozen=True, slots=True)
class EventHandler(Generic[R]):
    """``cache.ResourceEventHandlerFuncs``: quick, non-blocking callbacks (enqueue a key)."""

    on_add: Callable[[R], None] | None = None
    on_update: Callable[[R, R], None] | None = None
    on_delete: Callable[[R], None] | None = None


@dataclass(frozen=True, slots=True)
class InformerSettings:
    """- ``page_size`` (default 500): ``limit`` of each list page.
    - ``initial_backoff_seconds`` (0.8) .. ``max_backoff_seconds`` (30): reconnect backoff,
      back to the start after a list or an event, or ``backoff_reset_seconds`` (120) after the
      last backoff (client-go's ``backoffResetDuration``: a collection without events would
      otherwise keep the backoff of a fault long past).
    - ``min_watch_timeout_seconds`` (300): each watch asks the server to end it after a random
      time in ``[min, 2*min)``, like the reflector.
    - ``watch_idle_timeout_seconds`` (90): a watch that receives nothing (not even a bookmark)
      for this long is reopened.
    """

    page_size: int = 500
    initial_backoff_seconds: float = 0.8
    max_backoff_seconds: float = 30.0
    backoff_reset_seconds: float = 120.0
    min_watch_timeout_seconds: int = 300
    watch_idle_timeout_seconds: float = 90.0


class Informer(Generic[R]):
    """Keeps ``store`` in step with one collection (``path``) through list + watch."""

    def __init__(
        self,
        client: KubeClient,
        path: str,
        *,
        parse: Parse[R],
        clock: Clock,
        label_selector: str | None = None,
        field_selector: str | None = None,
        settings: InformerSettings | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.path = path
        self.store: Store[R] = Store()
        self._client = client
        self._parse = parse
        self._clock = clock
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._settings = settings or InformerSettings()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not cryptography
        self._handlers: list[EventHandler[R]] = []
        self._synced = asyncio.Event()
        self._failures = 0
        self._last_backoff_at: float | None = None
        self._current = False
        self.resource_version = ""
        self.list_count = 0
        self.bookmark_count = 0
        self._log = log.bind(path=path)

    def add_handler(self, handler: EventHandler[R]) -> None:
        """Register callbacks; records already in the store are replayed as adds."""
        self._handlers.append(handler)
        if handler.on_add is not None:
            for record in self.store:
                self._call(handler.on_add, record)

    def has_synced(self) -> bool:
        """True once the first list has been applied to the store."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def is_current(self) -> bool:
        """True while the store follows the server: listed, and since the last failed list or
        watch a list has succeeded or a reopened watch has delivered an event or a bookmark.
        A watch reopened after a failure may have missed changes until it delivers (its first
        events are the ones missed), so it does not count before that."""
        return self._current

    def _params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        if self._label_selector:
            params["labelSelector"] = self._label_selector
        if self._field_selector:
            params["fieldSelector"] = self._field_selector
        return params

    async def run(self) -> None:
        """List, then watch; relist on 410; reconnect with backoff on failures. Runs forever."""
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list_and_replace()
                    need_list = False
                await self._watch()
            except GoneError as error:
                self._current = False
                self._log.info("informer_relist", reason=error.reason, message=error.status.message)
                need_list = True
            except (ApiError, TransportError) as error:
                self._current = False
                delay = self._backoff_seconds()
                self._log.warning(
                    "informer_retry",
                    error=str(error),
                    relist=need_list,
                    delay_seconds=round(delay, 3),
                )
                await self._clock.sleep(delay)

    def _backoff_seconds(self) -> float:
        settings = self._settings
        now = self._clock.monotonic()
        last, self._last_backoff_at = self._last_backoff_at, now
        if last is not None and now - last > settings.backoff_reset_seconds:
            self._failures = 0
        delay = min(
            settings.max_backoff_seconds,
            settings.initial_backoff_seconds * 2.0 ** min(self._failures, 32),
        )
        self._failures += 1
        return delay * (1.0 + self._rng.random())

    async def _list_pages(
        self,
        consume: Callable[[Sequence[Mapping[str, Any]]], None],
        *,
        restart: Callable[[], None],
    ) -> str:
        """Hand every page's items to ``consume`` as it arrives; a 410 on ``continue`` calls
        ``restart`` and lists again, once. Returns the list's resourceVersion.

        The next page is requested before this one is consumed (client-go's buffered pager with
        one page of buffer), so the server prepares a page while this process parses the one
        before: at most two pages of raw objects are alive at a time."""
        for _ in range(2):
            restart()
            params = self._params()
            params["limit"] = str(self._settings.page_size)
            try:
                page = await self._client.list(self.path, params=params)
                while True:
                    metadata = page.get("metadata") or {}
                    token = metadata.get("continue")
                    if not token:
                        await self._consume_yielding(consume, page.get("items") or ())
                        return str(metadata.get("resourceVersion", ""))
                    params["continue"] = str(token)
                    following = asyncio.ensure_future(
                        self._client.list(self.path, params=dict(params))
                    )
                    try:
                        await self._consume_yielding(consume, page.get("items") or ())
                        del page
                        page = await following
                    finally:
                        if not following.done():
                            following.cancel()
                        elif not following.cancelled():
                            following.exception()  # retrieved: raised above, or not needed
            except GoneError:
                if "continue" not in params:
                    raise
                self._log.info("informer_continue_expired")
        raise GoneError(ApiStatus(code=410, reason="Expired", message="list continue expired"))

    @staticmethod
    async def _consume_yielding(
        consume: Callable[[Sequence[Mapping[str, Any]]], None], items: Sequence[Mapping[str, Any]]
    ) -> None:
        """``consume(items)`` a slice of ``CONSUME_SLICE`` items at a time, the event loop running
        between slices: a page's parse does not hold the loop for its whole length, and the
        request for the next page goes out while this one is parsed."""
        for start in range(0, len(items), CONSUME_SLICE):
            await asyncio.sleep(0)
            consume(items[start : start + CONSUME_SLICE])

    async def list_items(self) -> tuple[list[Mapping[str, Any]], str]:
        """All items of the collection, page by page; a 410 on ``continue`` restarts once."""
        items: list[Mapping[str, Any]] = []
        resource_version = await self._list_pages(items.extend, restart=items.clear)
        return items, resource_version

    async def _list_and_replace(self) -> None:
        fresh: dict[str, R] = {}

        def parse_page(items: Sequence[Mapping[str, Any]]) -> None:
            for item in items:
                record = self._parse_item(item)
                if record is not None:
                    fresh[object_key(record.namespace, record.name)] = record

        resource_version = await self._list_pages(parse_page, restart=fresh.clear)
        for key in [key for key in self.store.list_keys() if key not in fresh]:
            old = self.store.delete(key)
            if old is not None:
                self._dispatch_delete(old)
        for key, record in fresh.items():
            old = self.store.put(key, record)
            if old is None:
                self._dispatch_add(record)
            elif old.resource_version != record.resource_version:
                self._dispatch_update(old, record)
        self.resource_version = resource_version
        self.list_count += 1
        self._failures = 0
        self._current = True
        self._synced.set()
        self._log.debug("informer_listed", count=len(fresh), resource_version=resource_version)

    async def _watch(self) -> None:
        params = self._params()
        params["resourceVersion"] = self.resource_version
        params["allowWatchBookmarks"] = "true"
        minimum = self._settings.min_watch_timeout_seconds
        timeout_seconds = int(minimum * (1.0 + self._rng.random()))
        started = self._clock.monotonic()
        events = 0
        stream = self._client.watch(
            self.path,
            params=params,
            timeout_seconds=timeout_seconds,
            idle_timeout_seconds=self._settings.watch_idle_timeout_seconds,
        )
        async with contextlib.aclosing(stream):
            async for event in stream:
                events += 1
                self._failures = 0
                self._current = True
                self._apply(event)
        if events == 0 and self._clock.monotonic() - started < 1.0:
            # the reflector's "very short watch": back off instead of spinning on a closing server
            raise TransportError(f"very short watch: {self.path}: ended within 1 s without events")

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            raise error_for_status(ApiStatus.from_json(obj, code=int(obj.get("code") or 500)))
        resource_version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if kind == "BOOKMARK":
            self.resource_version = resource_version or self.resource_version
            self.bookmark_count += 1
            return
        record = self._parse_item(obj)
        if resource_version:
            self.resource_version = resource_version
        if record is None:
            return
        key = object_key(record.namespace, record.name)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store.put(key, record)
            if old is None:
                self._dispatch_add(record)
            else:
                self._dispatch_update(old, record)
        elif kind == "DELETED":
            old = self.store.delete(key)
            self._dispatch_delete(old if old is not None else record)
        else:
            self._log.warning("informer_unknown_event", type=kind)

    def _parse_item(self, item: Mapping[str, Any]) -> R | None:
        try:
            return self._parse(item)
        except (KeyError, TypeError, ValueError) as error:
            metadata = item.get("metadata") or {}
            self._log.warning(
                "informer_parse_failed",
                name=metadata.get("name"),
                namespace=metadata.get("namespace"),
                error=repr(error),
            )
            return None

    def _dispatch_add(self, record: R) -> None:
        for handler in self._handlers:
            if handler.on_add is not None:
                self._call(handler.on_add, record)

    def _dispatch_update(self, old: R, new: R) -> None:
        for handler in self._handlers:
            if handler.on_update is not None:
                self._call(handler.on_update, old, new)

    def _dispatch_delete(self, record: R) -> None:
        for handler in self._handlers:
            if handler.on_delete is not None:
                self._call(handler.on_delete, record)

    def _call(self, callback: Callable[..., None], *records: R) -> None:
        try:
            callback(*records)
        except Exception as error:  # noqa: BLE001 - a handler bug must not stop the informer
            self._log.error("informer_handler_failed", error=repr(error))


async def wait_all_synced(informers: Iterable[Informer[Any]]) -> None:
    """``cache.WaitForCacheSync``."""
    for informer in informers:
        await informer.wait_synced()
