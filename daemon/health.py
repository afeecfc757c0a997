"""What the table says about itself: its birth record, its metrics, its STATUS line, and the
watch over its journal's disk.

Owns the contents of the retained birth record on ``…/status`` (who this table is: version,
game, regulated options, devices), of ``…/metrics`` (counters and latencies of the runtime, the
publisher and each device) and of systemd's STATUS line (what is up and what is missing), and the
housekeeping that notices a failing journal, says so (``journal_failure`` on ``…/fault``,
``degraded`` on ``…/status``) and probes it until it recovers.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

import structlog

from tabled.contract import CONTRACT_VERSION
from tabled.contract.faults import JOURNAL_FAILURE
from tabled.contract.systemd import Notifier
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon import __version__
from tabled.daemon.config import Config
from tabled.daemon.journal import DURABLE_TOPICS, FIRST_NUMBER, Journal, JournalError
from tabled.daemon.mqtt.fetch import FetchServer
from tabled.daemon.mqtt.publisher import DurablePublisher
from tabled.daemon.mqtt.session import BrokerSession
from tabled.daemon.mqtt.volatile import VolatilePublisher
from tabled.daemon.runtime import TableRuntime
from tabled.daemon.supervisor import DeviceSupervisor
from tabled.games.options import declare

log = structlog.get_logger("tabled.health")

#: While the journal fails, how often to try it again, seconds.
T_PROBE = 2.0
#: After how long without a write a healthy journal's disk is checked with a one-row durable
#: write, seconds (a journal that commits is checked by its commits).
T_HEALTH = 10.0


#: The longest reason the STATUS line gives for one missing part (the log has it whole).
STATUS_REASON = 160


def _short(text: str) -> str:
    return text if len(text) <= STATUS_REASON else text[:STATUS_REASON - 1] + "…"


def percentiles(samples: Sequence[float]) -> dict[str, float | None]:
    """p50 and p99 of ``samples`` (seconds), in milliseconds."""
    if len(samples) < 2:
        value = round(samples[0] * 1000, 3) if samples else None
        return {"p50_ms": value, "p99_ms": value}
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": round(cuts[49] * 1000, 3), "p99_ms": round(cuts[98] * 1000, 3)}


class TableHealth:
    """The table's own account of itself, from the parts the service wired."""

    def __init__(self, config: Config, runtime: TableRuntime, journal: Journal,
                 session: BrokerSession, publisher: DurablePublisher,
                 volatile: VolatilePublisher, supervisors: Sequence[DeviceSupervisor],
                 notifier: Notifier) -> None:
        self.config = config
        self.runtime = runtime
        self.journal = journal
        self.session = session
        self.publisher = publisher
        self.volatile = volatile
        self.supervisors = supervisors
        self.notifier = notifier
        self.started_at = rfc3339_now()
        self.started = time.monotonic()
        self._degraded_reported = False
        #: The fetch server, where the table serves its journal (``[fetch]``).
        self.fetch: FetchServer | None = None

    def birth(self) -> dict[str, Any]:
        """The retained birth record's body (the session adds state and numbers)."""
        cfg = self.config
        return {
            "version": __version__, "contract": CONTRACT_VERSION,
            "site": cfg.table.site, "table": cfg.table.id,
            "game": cfg.table.game, "options": declare(self.runtime.options),
            "devices": [{"id": d.id, "family": d.family} for d in cfg.devices],
            "started_at": self.started_at, "pid": os.getpid(),
            "commands": cfg.commands.enabled,
            "fetch": cfg.fetch.enabled,
            "journal": self._journal_head(),
            "high_water": self._high_water(),
        }

    def _journal_head(self) -> dict[str, Any] | None:
        """The journal's head (row count and last hash) for a witness to hold: a journal cut
        back behind it fails ``tabled journal verify --expect-head HASH@ROWS``; and its
        identity, with the lowest number of each stream it can serve on ``…/fetch``."""
        try:
            head = self.journal.head()
        except JournalError:
            return None
        return {"rows": head.rows, "head": head.hash, "witness": str(head),
                "id": self.journal.id, "first": dict.fromkeys(DURABLE_TOPICS, FIRST_NUMBER)}

    def _high_water(self) -> dict[str, int] | None:
        """Each durable stream's highest number the broker acknowledged (everything up to it
        was published); None if the journal cannot say."""
        try:
            return self.journal.high_water_upto(self.publisher.acked_id)
        except JournalError:
            return None

    def metrics(self) -> dict[str, Any]:
        """The body of ``…/metrics`` (latencies over the last interval)."""
        runtime = self.runtime
        return {
            "uptime_s": round(time.monotonic() - self.started, 1),
            "events": runtime.counters["events"],
            "outcomes": runtime.counters["outcomes"],
            "notices": runtime.counters["notices"],
            "commits": runtime.counters["commits"],
            "journal_failures": runtime.counters["journal_failures"],
            "degraded": runtime.degraded is not None,
            "queue_depth": self.publisher.backlog,
            "journal_bytes": self.journal.size_bytes(),
            "journal": self._journal_head(),
            "high_water": self._high_water(),
            "fetch": self.fetch.counters() if self.fetch is not None else None,
            "broker_connects": self.session.counters["connects"],
            "published": self.publisher.counters["published"],
            "commit_latency": percentiles(runtime.commit_latency.take()),
            "publish_latency": percentiles(self.publisher.take_latency()),
            "devices": {s.settings.id: {"state": s.state.value, **s.counters()}
                        for s in self.supervisors},
        }

    def status_line(self) -> str:
        """systemd's STATUS: what runs, and what is missing and why, e.g. ``baccarat ok;
        devices 0/1 (shoe-1: cannot open /dev/tabled/shoe-1: ...); broker down
        (mqtt://...: [Errno 111] Connection refused); backlog 3; next round 12``."""
        up = sum(1 for s in self.supervisors if s.connected.is_set())
        missing = "; ".join(f"{s.settings.id}: {_short(s.problem or s.state.value)}"
                            for s in self.supervisors if not s.connected.is_set())
        devices = f"devices {up}/{len(self.supervisors)}" + (f" ({missing})" if missing else "")
        state = "degraded (journal)" if self.runtime.degraded else "ok"
        return (f"{self.config.table.game} {state}; {devices}; "
                f"broker {_short(self.session.health())}; backlog {self.publisher.backlog}; "
                f"next round {self.runtime.table.next_round}")

    async def housekeeping(self) -> None:
        """STATUS lines, the journal probe while degraded, and a health check of the journal's
        disk after ``T_HEALTH`` seconds without a write (a dying disk is a fault even with no
        event to write)."""
        last_status = ""
        while True:
            await asyncio.sleep(T_PROBE)
            self.runtime.check_journal(quiet_for=T_HEALTH)
            if self.runtime.degraded is not None:
                await self._report_degraded()
                if self.runtime.probe():
                    self._degraded_reported = False
                    self.session.set_state("online")
            status = self.status_line()
            if status != last_status:
                self.notifier.status(status)
                last_status = status

    async def _report_degraded(self) -> None:
        """Raise the journal fault: it cannot be journaled, so it goes out directly."""
        if self._degraded_reported:
            return
        reason = self.runtime.degraded or "journal failure"
        body = self.runtime.fault_body(JOURNAL_FAILURE, reason)
        body["durable"] = False
        sent = await self.volatile.publish(self.session.topics.fault, body, kind=None)
        # …/status says it with the next connection's birth (docs/mqtt.md: its numbers)
        self.session.set_state("degraded", reason)
        self._degraded_reported = sent
