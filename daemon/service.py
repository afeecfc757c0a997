"""``tabled run``: the service that runs under a table — the wiring of its parts.

Owns start-up order and shutdown, and nothing else: the journal (opened first: its lock is this
daemon's), the table runtime over the journal's event log (rules state rebuilt from it), one
supervisor per device, the broker session with its parts (durable publisher, non-durable
publisher, metrics, console commands, the journal served back to the pit), a private broker
when the config asks for one (``[mqtt] url = "embedded"``), the table's account of itself
(:mod:`~tabled.daemon.health`) and systemd's notify protocol (READY, STATUS, WATCHDOG). The
regulated options are logged at start, journaled, and published in the birth record; nothing
changes them while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal

import structlog

from tabled.contract.backoff import cancel_all, start_part
from tabled.contract.secrets import read_secret
from tabled.contract.systemd import Notifier
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon import __version__
from tabled.daemon.broker import Mosquitto
from tabled.daemon.commands import CommandGate
from tabled.daemon.config import Config
from tabled.daemon.fetch import FetchGate
from tabled.daemon.gate import ConsoleGate
from tabled.daemon.health import TableHealth
from tabled.daemon.journal import Journal
from tabled.daemon.mqtt.commands import CommandListener
from tabled.daemon.mqtt.fetch import FetchServer
from tabled.daemon.mqtt.numbers import Sequences, StatusNumbers
from tabled.daemon.mqtt.publisher import DurablePublisher
from tabled.daemon.mqtt.reporter import MetricsReporter
from tabled.daemon.mqtt.session import T_PUBACK, BrokerSession
from tabled.daemon.mqtt.topics import Topics
from tabled.daemon.mqtt.volatile import VolatilePublisher
from tabled.daemon.runtime import TableRuntime
from tabled.daemon.supervisor import DeviceSupervisor, feed_discovery
from tabled.games.options import declare
from tabled.games.registry import event_checks

log = structlog.get_logger("tabled.service")

#: How long start-up waits for devices and broker before READY (it is READY anyway: the
#: journal buffers until they come).
T_READY = 1.0
#: How long a clean stop waits for the broker to acknowledge what is left, seconds.
T_DRAIN = 5.0


class Service:
    """One table's daemon. ``await run()`` until :meth:`request_stop`."""

    def __init__(self, config: Config, *, notifier: Notifier | None = None,
                 journal: Journal | None = None) -> None:
        self.config = config
        self.notifier = notifier or Notifier()
        self._stop = asyncio.Event()
        self.broker: Mosquitto | None = None
        # Open for writing: the lock on it is this daemon's for as long as the journal is open.
        self.journal = journal if journal is not None else Journal(config.journal.path)
        self.journal.start_checkpointer()
        self.runtime = TableRuntime(config, self.journal.events)
        self.topics = Topics(config.mqtt.topic_prefix, config.table.site, config.table.id)

    def request_stop(self) -> None:
        self._stop.set()

    async def run(self) -> int:
        cfg = self.config
        runtime = self.runtime
        options = declare(runtime.options)
        log.info("starting", version=__version__, game=cfg.table.game, options=options,
                 journal=str(cfg.journal.path), rebuilt_inputs=runtime.counters[
                     "rebuilt_inputs"], round_open=runtime.table.round_open)
        self.journal.audit.record_start({
            "version": __version__, "game": cfg.table.game, "options": options,
            "devices": [{"id": d.id, "family": d.family} for d in cfg.devices],
            "round_open": runtime.table.round_open, "next_round": runtime.table.next_round,
        }, rfc3339_now())

        url = cfg.mqtt.url
        assert url is not None, "check_config (tabled run) refuses a config without a broker"
        if cfg.mqtt.embedded:  # [mqtt] url = "embedded": a bench's choice, never a default
            self.broker = Mosquitto()
            await asyncio.to_thread(self.broker.start)
            url = self.broker.url
            log.info("embedded_broker", url=url,
                     detail="a private Mosquitto on this machine: no outcome leaves it")
        delivery = self.journal.delivery
        session = BrokerSession(cfg.mqtt, url, self.topics, StatusNumbers(delivery),
                                client_id=cfg.client_id, birth=lambda: health.birth())
        publisher = DurablePublisher(delivery, self.topics, max_inflight=cfg.mqtt.max_inflight,
                                     puback_timeout=T_PUBACK)
        volatile = VolatilePublisher(session, Sequences(delivery), puback_timeout=T_PUBACK)
        session.add(publisher)
        session.add(volatile)
        runtime.on_committed = publisher.notify
        supervisors = [DeviceSupervisor(settings, runtime, on_status=volatile.set_device_status,
                                        discovered=settings.match is not None)
                       for settings in cfg.devices]
        health = TableHealth(cfg, runtime, self.journal, session, publisher, volatile,
                             supervisors, self.notifier)
        session.add(MetricsReporter(volatile, health.metrics, cfg.mqtt.metrics_interval))
        if cfg.commands.enabled:
            assert cfg.commands.hmac_key_file is not None
            gate = ConsoleGate(CommandGate(read_secret(cfg.commands.hmac_key_file),
                                           cfg.commands.max_skew,
                                           checks=event_checks(cfg.table.game)),
                               runtime, self.journal.audit, journaled=publisher.notify)
            gate.remember_nonces()
            CommandListener(session, volatile, gate.handle)
        if cfg.fetch.hmac_key_file is not None:  # else no subscription at all
            fetch = FetchGate(read_secret(cfg.fetch.hmac_key_file), self.topics.base,
                              max_messages=cfg.fetch.max_messages, rate=cfg.fetch.rate,
                              max_skew=cfg.fetch.max_skew)
            health.fetch = FetchServer(session, self.journal, fetch, puback_timeout=T_PUBACK)
            session.add(health.fetch)

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_stop)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    start_part(group, log, "mqtt", session.run),
                    group.create_task(self.notifier.watchdog(), name="watchdog"),
                    start_part(group, log, "housekeeping", health.housekeeping),
                    *(start_part(group, log, f"device-{sup.settings.id}", sup.run)
                      for sup in supervisors),
                ]
                if any(sup.records is not None for sup in supervisors):
                    tasks.append(start_part(group, log, "discovery",
                                            lambda: feed_discovery(supervisors)))
                await self._announce_ready(session, supervisors, health)
                await self._stop.wait()
                self.notifier.stopping()
                log.info("stopping")
                for sup in supervisors:
                    await sup.stop()  # each says "stopped": a status, not a fault
                runtime.commit()
                try:
                    async with asyncio.timeout(T_DRAIN):
                        await publisher.drain()
                        await volatile.settle()  # the devices' "stopped" before "offline"
                except TimeoutError:
                    log.warning("shutdown_with_backlog", backlog=publisher.backlog)
                await session.stop()
                publisher.persist_ack()
                await cancel_all(log, tasks)
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)
            self.journal.close()
            if self.broker is not None:
                await asyncio.to_thread(self.broker.cleanup)
            self.notifier.close()
        log.info("stopped")
        return 0

    async def _announce_ready(self, session: BrokerSession,
                              supervisors: list[DeviceSupervisor], health: TableHealth) -> None:
        waits = [session.connected.wait()] + [s.connected.wait() for s in supervisors]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(T_READY):
                await asyncio.gather(*waits)
        # What start-up made (modules, config, the rules state rebuilt from the journal) lives as
        # long as the process: frozen out of the collector's sight, a full collection no longer
        # walks it and stops costing the event loop ~35 ms now and then (docs/performance.md).
        gc.freeze()
        status = health.status_line()
        self.notifier.ready(status)
        log.info("ready", status=status)


async def run_service(config: Config, journal: Journal | None = None) -> int:
    service = Service(config, journal=journal)
    return await service.run()
