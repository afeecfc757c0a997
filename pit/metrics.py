"""Prometheus metrics of the pit (``prometheus-client``), in a registry of its own.

Owns the metric names and nothing else. Counted as things happen: messages received per topic,
duplicates, conflicts, malformed messages (by reason), gaps, messages backfilled from a table's
journal, store latency per operation and store errors (by cause: an outage or refused data),
broker connections. Sampled at scrape time from the live model: tables by state, alerts not
closed by severity and state, device statuses with a state the pit does not know.

Served two ways (docs/pit.md): :meth:`PitMetrics.asgi_app` is mounted at ``/metrics`` on the web
port by the web layer; with ``[metrics] port`` set, :meth:`PitMetrics.serve` also serves it on a
port of its own (a pit without its web page, or a scraper kept off the web port).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    make_asgi_app,
    start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from tabled.pit.messages import DURABLE, MALFORMED_CODES
from tabled.pit.model import Floor
from tabled.pit.store import SEVERITIES

#: Store operations are a millisecond or so; a slow disk or a far database shows in the tail.
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                 5.0, 10.0)
LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class _FloorCollector(Collector):
    def __init__(self, floor: Callable[[], Floor | None]) -> None:
        self._floor = floor

    def collect(self) -> Iterable[GaugeMetricFamily | CounterMetricFamily]:
        floor = self._floor()
        if floor is None:
            return
        tables = GaugeMetricFamily("pit_tables", "Tables by state", labels=["state"])
        for state, count in floor.states().items():
            tables.add_metric([state], count)
        yield tables
        alerts = GaugeMetricFamily("pit_alerts", "Alerts not closed, by severity and state",
                                   labels=["severity", "state"])
        counts = {(s, st): 0 for s in SEVERITIES for st in ("open", "acknowledged", "cleared")}
        for alert in floor.alerts():
            counts[(alert.severity, alert.state)] = counts.get(
                (alert.severity, alert.state), 0) + 1
        for (severity, state), count in sorted(counts.items()):
            alerts.add_metric([severity, state], count)
        yield alerts
        unknown = CounterMetricFamily(
            "pit_device_states_unknown", "Device statuses with a state this pit does not know "
            "(a newer daemon's): kept and shown as they are")
        unknown.add_metric([], floor.unknown_device_states)
        yield unknown


class PitMetrics:
    """The pit's metrics. ``floor`` is read at scrape time."""

    def __init__(self, floor: Floor | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.floor = floor
        r = self.registry
        self.received = Counter("pit_messages_received", "Messages received, by topic",
                                ["topic"], registry=r)
        self.recorded = Counter("pit_messages_recorded", "Messages newly recorded, by topic",
                                ["topic"], registry=r)
        self.duplicates = Counter("pit_messages_duplicate",
                                  "Messages already recorded (QoS 1 re-deliveries, retained "
                                  "copies, another pit server's share)", ["topic"], registry=r)
        self.conflicts = Counter("pit_messages_conflict",
                                 "A recorded table_seq arriving with other content",
                                 ["topic"], registry=r)
        self.malformed = Counter("pit_messages_malformed", "Messages that could not be used",
                                 registry=r)
        self.malformed_by_reason = Counter(
            "pit_malformed", "Messages filed in malformed, by reason (pit.messages "
            "MALFORMED_CODES)", ["reason"], registry=r)
        self.gaps = Counter("pit_seq_gaps", "seq_gap alerts raised: table_seq gaps still open "
                            "after the grace time", registry=r)
        self.backfilled = Counter("pit_backfilled", "Messages recorded from a table's journal "
                                  "on the pit's request, by stream", ["stream"], registry=r)
        self.store_seconds = Histogram("pit_store_seconds", "Store operation latency",
                                       ["operation"], buckets=STORE_BUCKETS, registry=r)
        self.loop_lag = Histogram(
            "pit_event_loop_lag_seconds", "How late the event loop ran a 0.1 s timer "
            "(everything the pit does waits while it is busy)", buckets=LAG_BUCKETS,
            registry=r)
        self.batch_seconds = Histogram(
            "pit_batch_seconds", "How long the pit took over one batch of messages from the "
            "broker: checked, recorded, then the live model, the alert rules and the integrity "
            "monitors (the next batch waits for it)", buckets=LAG_BUCKETS, registry=r)
        self.gc_pause = Histogram(
            "pit_gc_pause_seconds", "Python's garbage collections, by generation: the event "
            "loop waits for each", ["generation"], buckets=LAG_BUCKETS, registry=r)
        self.store_errors = Counter("pit_store_errors", "Store operations that failed",
                                    registry=r)
        self.store_failures = Counter(
            "pit_store_failures", "Failed store writes by cause: outage (retried) or data "
            "(refused for its content, not retried)", ["cause"], registry=r)
        self.broker_connected = Gauge("pit_broker_connected", "1 while connected to the broker",
                                      registry=r)
        self.broker_connects = Counter("pit_broker_connects", "Connections to the broker made",
                                       registry=r)
        self.leader = Gauge("pit_leader", "1 while this pit server leads its floor (runs the "
                            "alert timers, the outbox, reports, retention; pit.leader)",
                            registry=r)
        self.alerts_published = Counter("pit_alerts_published",
                                        "Alert changes published on …/pit/alert", registry=r)
        self.display_refused = Counter(
            "pit_display_refused", "Display requests refused for a wrong or missing token, by "
            "reason", ["reason"], registry=r)
        r.register(_FloorCollector(lambda: self.floor))
        # every series from the start, at 0: a rate needs the zero, a dashboard the name
        for code in MALFORMED_CODES:
            self.malformed_by_reason.labels(code)
        for cause in ("outage", "data"):
            self.store_failures.labels(cause)
        for stream in DURABLE:
            self.backfilled.labels(stream)
        for reason in ("no_token", "bad_token"):
            self.display_refused.labels(reason)

    @contextlib.contextmanager
    def gc_watched(self, after_full: Callable[[], None] | None = None) -> Iterator[None]:
        """Time every garbage collection while inside (``pit_gc_pause_seconds``), and call
        ``after_full`` at the end of each full one (generation 2)."""
        started: list[float] = []

        def timing(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                started[:] = [time.perf_counter()]
                return
            generation = info.get("generation")
            if started:
                self.gc_pause.labels(str(generation)).observe(
                    time.perf_counter() - started.pop())
            if generation == 2 and after_full is not None:
                after_full()

        for generation in ("0", "1", "2"):
            self.gc_pause.labels(generation)
        gc.callbacks.append(timing)
        try:
            yield
        finally:
            gc.callbacks.remove(timing)

    def count_malformed(self, code: str) -> None:
        """One message filed in ``malformed`` for ``code`` (pit.messages MALFORMED_CODES)."""
        self.malformed.inc()
        self.malformed_by_reason.labels(code).inc()

    def count_display_refused(self, reason: str) -> None:
        """One display request refused: ``no_token`` or ``bad_token``."""
        self.display_refused.labels(reason).inc()

    def observe_store(self, operation: str, seconds: float) -> None:
        self.store_seconds.labels(operation).observe(seconds)

    def text(self) -> bytes:
        """The exposition format, as a scrape gets it."""
        return generate_latest(self.registry)

    def asgi_app(self) -> Any:
        """An ASGI app serving the metrics: the web layer mounts it at ``/metrics``."""
        return make_asgi_app(self.registry)

    def serve(self, host: str, port: int) -> Any:
        """Serve ``/metrics`` on a port of its own (a thread of prometheus-client's); returns
        the server (``shutdown()`` it on exit)."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        return server
