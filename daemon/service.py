"""``tabled run``: the service that runs under a table.

Owns start-up order, shutdown, and the pieces that tie the others together: the journal and the
table runtime (rules state rebuilt from the journal), one supervisor per device, the MQTT
service (a private broker when none is configured), dealer-console commands, metrics, and
systemd's notify protocol (READY, STATUS, WATCHDOG). The regulated options are logged at start,
journaled, and published in the birth record; nothing changes them while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import structlog

from tabled.contract.faults import JOURNAL_FAILURE
from tabled.contract.outcome import Notice, Outcome
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon import __version__
from tabled.daemon.broker import Mosquitto
from tabled.daemon.commands import CommandGate, CommandRejected, parse_ts
from tabled.daemon.config import Config, read_secret
from tabled.daemon.journal import Journal, JournalError, OutputEntry
from tabled.daemon.mqtt import MqttService, Topics
from tabled.daemon.rules.options import declare
from tabled.daemon.runtime import Degraded, TableRuntime
from tabled.daemon.supervisor import DeviceSupervisor
from tabled.daemon.systemd import Notifier

log = structlog.get_logger("tabled.service")

#: How long start-up waits for devices and broker before READY (it is READY anyway: the
#: journal buffers until they come).
T_READY = 1.0
#: While the journal fails, how often to try it again, seconds.
T_PROBE = 2.0
#: How often a healthy journal's disk is checked with a small durable write, seconds.
T_HEALTH = 10.0


def _percentiles(samples: Sequence[float]) -> dict[str, float | None]:
    if len(samples) < 2:
        value = round(samples[0] * 1000, 3) if samples else None
        return {"p50_ms": value, "p99_ms": value}
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50_ms": round(cuts[49] * 1000, 3), "p99_ms": round(cuts[98] * 1000, 3)}


class Service:
    """One table's daemon. ``await run()`` until :meth:`request_stop`."""

    def __init__(self, config: Config, *, notifier: Notifier | None = None,
                 journal: Journal | None = None) -> None:
        self.config = config
        self.notifier = notifier or Notifier()
        self.started_at = rfc3339_now()
        self.started = time.monotonic()
        self._stop = asyncio.Event()
        self.broker: Mosquitto | None = None
        # Open for writing: the lock on it is this daemon's for as long as the journal is open.
        self.journal = journal if journal is not None else Journal(config.journal.path)
        self.journal.start_checkpointer()
        self.runtime = TableRuntime(config, self.journal)
        self.topics = Topics(config.mqtt.topic_prefix, config.table.site, config.table.id)
        self.supervisors: list[DeviceSupervisor] = []
        self.mqtt: MqttService | None = None
        self.commands: CommandGate | None = None
        self._degraded_reported = False

    # -- lifecycle ------------------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        cfg = self.config
        options = declare(self.runtime.options)
        log.info("starting", version=__version__, game=cfg.table.game, options=options,
                 journal=str(cfg.journal.path), rebuilt_inputs=self.runtime.counters[
                     "rebuilt_inputs"], round_open=self.runtime.table.round_open)
        devices = [{"id": d.id, "family": d.family} for d in cfg.devices]
        self.runtime.record_start(__version__, devices)

        url = cfg.mqtt.url
        if url is None:
            self.broker = Mosquitto()
            await asyncio.to_thread(self.broker.start)
            url = self.broker.url
            log.info("private_broker", url=url)
        if cfg.commands.enabled:
            assert cfg.commands.hmac_key_file is not None
            self.commands = CommandGate(read_secret(cfg.commands.hmac_key_file),
                                        cfg.commands.max_skew)
            self._remember_nonces()
        self.mqtt = MqttService(
            cfg.mqtt, url, self.topics, self.journal,
            client_id=cfg.mqtt.client_id or f"tabled-{cfg.table.site}-{cfg.table.id}",
            birth=self._birth, metrics=self._metrics,
            on_command=self._command if self.commands is not None else None,
        )
        self.runtime.on_committed = self.mqtt.notify
        for settings in cfg.devices:
            records: asyncio.Queue[tuple[str, str | None]] | None = None
            if settings.match is not None:
                records = asyncio.Queue()
            self.supervisors.append(DeviceSupervisor(
                settings, self.runtime, on_status=self.mqtt.set_device_status, records=records))

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(_guarded("mqtt", self.mqtt.run)),
                    group.create_task(self.notifier.watchdog(), name="watchdog"),
                    group.create_task(_guarded("housekeeping", self._housekeeping)),
                    *(group.create_task(_guarded(f"device-{sup.settings.id}", sup.run))
                      for sup in self.supervisors),
                ]
                if any(sup.records is not None for sup in self.supervisors):
                    tasks.append(group.create_task(_guarded("discovery", self._discovery)))
                await self._announce_ready()
                await self._stop.wait()
                await self._shutdown()
                for task in tasks:
                    task.cancel()
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            self.journal.close()
            if self.broker is not None:
                await asyncio.to_thread(self.broker.cleanup)
            self.notifier.close()
        log.info("stopped")
        return 0

    async def _discovery(self) -> None:
        """Hot-plug: pyudev's add/remove events for the devices configured with a match go to
        their supervisors (docs/udev.md)."""
        from tabled.drivers.discovery import DeviceMatch, Discovery

        by_id = {sup.settings.id: sup for sup in self.supervisors if sup.records is not None}
        matches = {}
        for device_id, sup in by_id.items():
            m = sup.settings.match
            assert m is not None
            matches[device_id] = DeviceMatch(
                vendor_id=m.vendor_id, model_id=m.model_id, serial=m.serial, by_id=m.by_id,
                # a USB serial adapter shows up as its USB device and as its tty
                subsystem="usb" if sup.settings.family == "dice" else "tty")
        async with Discovery(matches, udev=True) as discovery:
            async for change in discovery:
                record = change.record
                log.info("device_discovered", device=change.device_id, action=record.action,
                         node=record.device_node)
                queue = by_id[change.device_id].records
                assert queue is not None
                queue.put_nowait((record.action, record.url()))

    async def _announce_ready(self) -> None:
        assert self.mqtt is not None
        waits = [self.mqtt.connected.wait()] + [s.connected.wait() for s in self.supervisors]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(T_READY):
                await asyncio.gather(*waits)
        # What start-up made (modules, config, the rules state rebuilt from the journal) lives as
        # long as the process: frozen out of the collector's sight, a full collection no longer
        # walks it and stops costing the event loop ~35 ms now and then (docs/performance.md).
        gc.freeze()
        status = self._status_line()
        self.notifier.ready(status)
        log.info("ready", status=status)

    async def _shutdown(self) -> None:
        self.notifier.stopping()
        log.info("stopping")
        for sup in self.supervisors:
            await sup.stop()
        self.runtime.commit()
        if self.mqtt is not None:
            await self.mqtt.stop()

    async def _housekeeping(self) -> None:
        """STATUS lines, the journal probe while degraded, and a health check of the journal's
        disk every ``T_HEALTH`` seconds while idle (a dying disk is a fault even with no event
        to write)."""
        last_status = ""
        last_health = time.monotonic()
        while True:
            await asyncio.sleep(T_PROBE)
            if self.runtime.degraded is None and time.monotonic() - last_health > T_HEALTH:
                last_health = time.monotonic()
                self.runtime.check_journal()
            if self.runtime.degraded is not None:
                await self._report_degraded()
                if self.runtime.probe():
                    self._degraded_reported = False
                    if self.mqtt is not None:
                        self.mqtt.set_state("online")
            status = self._status_line()
            if status != last_status:
                self.notifier.status(status)
                last_status = status

    async def _report_degraded(self) -> None:
        """Raise the journal fault: it cannot be journaled, so it goes out directly."""
        if self._degraded_reported or self.mqtt is None:
            return
        reason = self.runtime.degraded or "journal failure"
        body = self.runtime.fault_body(JOURNAL_FAILURE, reason)
        body["durable"] = False
        sent = await self.mqtt.publish_volatile(self.topics.fault, body, kind=None)
        # …/status says it with the next connection's birth (docs/mqtt.md: its numbers)
        self.mqtt.set_state("degraded", reason)
        self._degraded_reported = sent

    # -- what the broker sees -------------------------------------------------------------------

    def _birth(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "version": __version__, "site": cfg.table.site, "table": cfg.table.id,
            "game": cfg.table.game, "options": declare(self.runtime.options),
            "devices": [{"id": d.id, "family": d.family} for d in cfg.devices],
            "started_at": self.started_at, "pid": os.getpid(),
            "commands": cfg.commands.enabled,
        }

    def _metrics(self) -> dict[str, Any]:
        assert self.mqtt is not None
        runtime = self.runtime
        return {
            "uptime_s": round(time.monotonic() - self.started, 1),
            "events": runtime.counters["events"],
            "outcomes": runtime.counters["outcomes"],
            "notices": runtime.counters["notices"],
            "commits": runtime.counters["commits"],
            "journal_failures": runtime.counters["journal_failures"],
            "degraded": runtime.degraded is not None,
            "queue_depth": self.mqtt.backlog,
            "journal_bytes": self.journal.size_bytes(),
            "broker_connects": self.mqtt.counters["connects"],
            "published": self.mqtt.counters["published"],
            "commit_latency": _percentiles(runtime.commit_latency.take()),
            "publish_latency": _percentiles(self._take_publish_latency()),
            "devices": {s.settings.id: {"state": s.state, **s.counters()}
                        for s in self.supervisors},
        }

    def _take_publish_latency(self) -> list[float]:
        assert self.mqtt is not None
        samples, self.mqtt.publish_latency = self.mqtt.publish_latency, []
        return samples

    def _status_line(self) -> str:
        up = sum(1 for s in self.supervisors if s.connected.is_set())
        broker = "up" if self.mqtt is not None and self.mqtt.connected.is_set() else "down"
        state = "degraded (journal)" if self.runtime.degraded else "ok"
        backlog = self.mqtt.backlog if self.mqtt is not None else 0
        return (f"{self.config.table.game} {state}; devices {up}/{len(self.supervisors)}; "
                f"broker {broker}; backlog {backlog}; next round {self.runtime.table.next_round}")

    # -- commands -------------------------------------------------------------------------------

    def _remember_nonces(self) -> None:
        """Nonces of journaled commands, so that a replay across a restart is refused."""
        assert self.commands is not None
        horizon = time.time() - 2 * self.commands.max_skew
        for stored in self.journal.inputs():
            nonce = stored.body.get("nonce")
            if isinstance(nonce, str):
                ts = stored.body.get("command_ts")
                when = parse_ts(ts) if isinstance(ts, str) else 0.0
                if when >= horizon:
                    self.commands.remember(nonce, when)

    async def _command(self, name: str, payload: bytes) -> dict[str, Any]:
        assert self.commands is not None
        try:
            command = self.commands.check(name, payload)
        except CommandRejected as exc:
            log.warning("command_rejected", command=name, reason=exc.reason, detail=exc.detail)
            self._journal_rejection(name, exc)
            return {"ok": False, "command": name, "error": exc.reason, "detail": exc.detail}
        source = f"console:{command.console}"
        before = self.journal.last_id
        try:
            outputs = self.runtime.accept(command.event, source)
        except Degraded as exc:
            self._unspend(command.nonce, before)
            return {"ok": False, "command": name, "nonce": command.nonce,
                    "error": "degraded", "detail": str(exc)}
        log.info("command_accepted", command=name, console=command.console)
        return {
            "ok": True, "command": name, "nonce": command.nonce,
            "rounds": [o.round for o in outputs if isinstance(o, Outcome)],
            "notices": [o.to_dict() for o in outputs if isinstance(o, Notice)],
        }

    def _unspend(self, nonce: str, before: int) -> None:
        """A command refused because the journal failed did not take effect, so its nonce is
        not spent and the console may send it again (as for any refusal) — unless the write
        that reported failure reached the file after all (then it did take effect, and a
        retry would be a replay); if the journal cannot even say, it stays spent."""
        assert self.commands is not None
        try:
            recorded = self.journal.has_input(before, "nonce", nonce)
        except JournalError:
            return
        if not recorded:
            self.commands.forget(nonce)

    def _journal_rejection(self, name: str, exc: CommandRejected) -> None:
        body = {"v": 1, "type": "command_rejected", "command": name, "reason": exc.reason,
                "detail": exc.detail, "ts": rfc3339_now()}
        try:
            self.journal.write([OutputEntry("fault", body)], rfc3339_now())
        except JournalError as err:
            log.error("rejection_not_journaled", error=str(err))
            return
        if self.mqtt is not None:
            self.mqtt.notify()


async def _guarded(name: str, body: Callable[[], Awaitable[None]]) -> None:
    """Run a long-lived part of the daemon; if it fails unexpectedly, log it and start it
    again (a bug in one part must not take the table down)."""
    while True:
        try:
            await body()
            return
        except Exception:
            log.exception("task_failed", task=name)
            await asyncio.sleep(1.0)


async def run_service(config: Config, journal: Journal | None = None) -> int:
    service = Service(config, journal=journal)
    return await service.run()
