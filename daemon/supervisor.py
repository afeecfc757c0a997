"""Device supervision: one loop per configured device — connect, watch, lose, back off, retry.

Owns the life of each device's driver and *when* the rules hear of a loss; *what* a loss means
is the game's (its :class:`~tabled.games.policy.GamePolicy`, by the device's kind):

- on loss, the ``device_lost`` fault (with the device's family and kind) goes to the rules core
  at once: a shuffler lost while dealing voids the Q Poker round (qpoker.art11.5), a dice sensor
  lost means no roll until it is back (nothing to decide);
- a device whose kind the game's policy says ``Loss.VOID`` for (a baccarat shoe or
  shuffler-dealer), lost mid-hand and not back within ``lost_void_after`` seconds, voids the hand:
  the deal cannot be corrected (baccarat.art10); back in time, the hand simply continues (the
  device re-sends what the daemon had not acknowledged); ``Loss.FAULT`` sends the rules the
  ``device_lost`` fault again then (Q Poker decides from it);
- after a restart with a round open, such a device that does not come back within
  ``lost_void_after`` is treated as lost mid-round the same way; one that does resumes the round.

Reconnection uses bounded exponential backoff that resets once a link is up. A device with a
``match`` instead of a URL waits for discovery (pyudev, or injected records) to report it.

A device that is not the configured one (another family, another serial number, frames its
driver cannot decode: the driver refuses it, ``wrong_device``) is ``unavailable`` with that
reason, raises one ``wrong_device`` fault per change of situation (not one per attempt), and
is tried again with the backoff, which keeps growing: it never came up.

What the floor and the installer hear of a device is its *state* and why
(``…/device/<id>/status``, the log, the STATUS line): ``starting``, ``waiting`` (for discovery),
``connecting`` (the first attempt), ``connected`` (with the device's identity), ``lost``,
``unavailable``, ``stopped`` (a clean stop of the daemon). Each change is published once and
logged once (``device_<state>``: at warning when the device is missing, at info otherwise); a
retry that fails the same way is no change (no message; the log says it again at most every
``T_REPEAT`` seconds, with a count). A clean stop is a status, never a fault: nothing of the
table is lost (an open round resumes when the daemon is back, or the restart's timer decides).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

import structlog
from msgspec.structs import replace

from tabled.contract.backoff import Backoff
from tabled.contract.devices import REASON_DAEMON_STOPPING, REASON_WRONG_DEVICE, DeviceState
from tabled.contract.events import Event, Fault, Meta, Void
from tabled.contract.faults import DEVICE_LOST, VOID_DEVICE_LOST, WRONG_DEVICE
from tabled.contract.logs import Repeats
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.config import DeviceSettings
from tabled.daemon.runtime import Degraded, TableRuntime
from tabled.drivers.errors import DeviceError
from tabled.drivers.link import Resume
from tabled.drivers.registry import Device, family
from tabled.drivers.sink import NOT_DURABLE
from tabled.games.policy import Loss

log = structlog.get_logger("tabled.supervisor")

StatusSink = Callable[[str, dict[str, Any]], None]

#: The same device state (the same reason) is logged again at most this often, seconds.
T_REPEAT = 60.0
#: How often a decision of the daemon's that the journal refused (degraded) is tried again.
CONSEQUENCE_RETRY_S = 1.0
#: The states in which a device is missing: logged at warning.
MISSING = (DeviceState.UNAVAILABLE, DeviceState.LOST)


class DeviceSink:
    """A driver's :class:`~tabled.drivers.sink.EventSink`: ``emit`` stages each event in the
    runtime; ``commit`` is the durability barrier the driver calls before acknowledging the
    device's frames."""

    def __init__(self, runtime: TableRuntime, device_id: str) -> None:
        self.runtime = runtime
        self.source = f"device:{device_id}"
        self._refused = False

    def emit(self, event: Event) -> None:
        try:
            self.runtime.stage(event, self.source)
        except Degraded:
            self._refused = True

    def commit(self) -> bool:
        if self._refused:
            self._refused = False
            return False
        return self.runtime.commit()


class DeviceSupervisor:
    """Keeps one device connected for as long as the daemon runs."""

    def __init__(
        self,
        settings: DeviceSettings,
        runtime: TableRuntime,
        *,
        on_status: StatusSink,
        first_seq: int = 0,
        discovered: bool = False,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.family = family(settings.family)
        #: What this device staying away means for an open round of the table's game.
        self.loss = runtime.table.policy.loss(self.family.kind)
        self.runtime = runtime
        self.on_status = on_status
        self.next_seq = first_seq
        #: A device with a ``match``: discovery's ("add"/"present", url) and ("remove", None)
        #: records (:func:`feed_discovery`) tell where it is.
        self.records: asyncio.Queue[tuple[str, str | None]] | None = (
            asyncio.Queue() if discovered else None)
        self.options = options or {}
        self.driver: Device | None = None
        self.connected = asyncio.Event()
        self.reconnects = 0
        self.losses = 0
        self._discovered_url: str | None = None
        self._lost_timer: asyncio.TimerHandle | None = None
        #: The daemon's own decisions a degraded journal refused, each waiting to be tried again.
        self._retries: set[asyncio.TimerHandle] = set()
        self._counters_before: dict[str, int] = {}
        self.attempts = 0
        self.state = DeviceState.STARTING  # (said just below)
        #: Why the device is not connected, in a few words (for the STATUS line); None if it is.
        self.problem: str | None = None
        self._said: tuple[DeviceState, tuple[tuple[str, str], ...]] | None = None  # state and why
        self._repeats = Repeats(T_REPEAT)
        self._stopping = False
        #: The wrong_device refusal last reported (its detail), until the right device connects.
        self._refusal: str | None = None
        #: What the last connection refused (tabled.drivers.link.Refused), for the next one.
        self._refused_message: Any = None
        self._status(DeviceState.STARTING)  # a status from the start: none from before survives it

    # -- the loop ---------------------------------------------------------------------------

    async def run(self) -> None:
        s = self.settings
        backoff = Backoff(s.reconnect_min, s.reconnect_max)
        if self.runtime.table.round_open and self.loss is not Loss.NOTHING:
            # A restart in the middle of a round: the round resumes if the device comes back.
            self._arm_lost_timer("not back after a restart")
        while not self._stopping:
            url = await self._url()
            if self.state in (DeviceState.STARTING, DeviceState.WAITING):
                # the first attempt; a retry of a lost or unavailable device changes nothing
                self._status(DeviceState.CONNECTING, url=url)
            # The options first: they move next_seq past what the journal holds from this
            # device, and first_seq must see that (as an argument after them it did not, so a
            # restarted daemon numbered the device's events from 0 again).
            options = self._driver_options()
            self.attempts += 1
            try:
                driver = await self.family.open(url, device_id=s.id,
                                                sink=DeviceSink(self.runtime, s.id),
                                                first_seq=self.next_seq, **options)
            except DeviceError as exc:
                if exc.reason == WRONG_DEVICE:
                    self._refused(url, str(exc))
                else:
                    self._status(DeviceState.UNAVAILABLE, url=url, error=_cannot_open(url, exc))
                await asyncio.sleep(backoff.next())
                continue
            self.driver = driver
            if self._stopping:  # stopped while it was opening
                driver.close("daemon stopping")
                await driver.wait_closed()
                self.driver = None
                return
            if not await _comes_up(driver, s.connect_timeout):
                driver.close("link did not come up")
                await driver.wait_closed()
                self.next_seq = driver.next_seq
                self._keep_counters(driver)  # (a refused attempt counts its refusal)
                self.driver = None
                if self._stopping:
                    return
                if not self._was_refused(driver, url):
                    self._status(DeviceState.UNAVAILABLE, url=url,
                                 error=driver.close_reason or "link did not come up")
                await asyncio.sleep(backoff.next())
                continue
            backoff.reset()
            self.connected.set()
            self._refusal = None  # the configured device is here: a wrong one later is news
            self._disarm_lost_timer()
            self._status(DeviceState.CONNECTED, url=url, info=dict(driver.info))
            watcher = asyncio.create_task(self._watch_removal(driver), name=f"removal-{s.id}")
            try:
                await driver.wait_closed()
            finally:
                watcher.cancel()
                # its end, not its CancelledError: a cancellation of this task must go on
                await asyncio.wait([watcher])
                self.connected.clear()
                self.next_seq = driver.next_seq
                self._keep_counters(driver)
                self.driver = None
            if self._stopping:
                return  # a clean stop: :meth:`stop` says so, and nothing is lost
            self._lost(driver)
            self._was_refused(driver, url)
            self.reconnects += 1
            await asyncio.sleep(backoff.next())

    async def stop(self) -> None:
        """A clean stop of the daemon: close the device and say ``stopped``. Not a loss: no
        ``device_lost`` fault, so nothing pages the floor and the rules decide nothing (an open
        round resumes after the restart, or the restart's own timer decides)."""
        self._stopping = True
        self._disarm_lost_timer()
        for handle in self._retries:  # a restart's own timer decides the open round again
            handle.cancel()
        self._retries.clear()
        driver = self.driver
        if driver is not None:
            driver.close("daemon stopping")
            await driver.wait_closed()
        self._status(DeviceState.STOPPED, reason=REASON_DAEMON_STOPPING)

    def _driver_options(self) -> dict[str, Any]:
        """The options of the next connection, with what the journal holds from this device
        *now* (tabled.drivers.link, "exactly once across resets"): a message made durable whose ACK
        was lost with the last connection is dropped, not delivered twice."""
        options = dict(self.options)
        if self.settings.serial is not None:
            options["serial"] = self.settings.serial
        if self._refused_message is not None:
            options["refused"] = self._refused_message
        progress = self.runtime.devices.get(self.settings.id)
        if progress is not None and progress.boot_id is not None \
                and progress.last_message is not None:
            options["resume"] = Resume(progress.boot_id, progress.last_message)
        self.next_seq = max(self.next_seq, progress.next_seq if progress else 0)
        return options

    # -- a wrong device ----------------------------------------------------------------------

    def _was_refused(self, driver: Device, url: str) -> bool:
        """After a connection ended: whether its driver refused the device as not the
        configured one (then reported as such)."""
        self._refused_message = getattr(driver, "refused", None)
        code, _, detail = (driver.close_reason or "").partition(": ")
        if code != WRONG_DEVICE:
            return False
        self._refused(url, detail)
        return True

    def _refused(self, url: str, detail: str) -> None:
        """The device at ``url`` is not the configured one: ``unavailable`` with the reason,
        and a ``wrong_device`` fault when this is news (not at every reconnect attempt)."""
        s = self.settings
        self._status(DeviceState.UNAVAILABLE, url=url, reason=REASON_WRONG_DEVICE, error=detail)
        if detail == self._refusal:
            return
        self._refusal = detail
        self._accept(Fault(code=WRONG_DEVICE, detail=f"{s.family} {s.id} at {url}: {detail}",
                           meta=Meta(device=s.id, ts=rfc3339_now()),
                           extra={"family": s.family, "kind": self.family.kind,
                                  "source": "daemon"}),
                     "wrong device")

    # -- loss and its consequence ------------------------------------------------------------

    def _lost(self, driver: Device) -> None:
        self.losses += 1
        reason = driver.close_reason or "unknown"
        self._status(DeviceState.LOST, reason=reason)
        if self._host_caused(reason):
            # The journal could not make the device's frames durable, so the driver dropped
            # the link (the device keeps them and sends them again): the device did not fail.
            # The journal's failure is the fault (journal_failure); the rules have no
            # consequence for it (qpoker.art11.5 and baccarat.art10 are about the device), and
            # the round goes on when the journal and the link are back.
            return
        fault = driver.lost_fault()
        self._accept(replace(fault, extra={**fault.extra, "kind": self.family.kind}),
                     "the device is lost")
        if self.loss is not Loss.NOTHING and self.runtime.table.round_open:
            self._arm_lost_timer(reason)

    def _host_caused(self, reason: str) -> bool:
        """The loss is the host's doing: its journal refused the device's frames."""
        return reason.endswith(NOT_DURABLE) or self.runtime.degraded is not None

    def _arm_lost_timer(self, reason: str) -> None:
        self._disarm_lost_timer()
        loop = asyncio.get_running_loop()
        self._lost_timer = loop.call_later(self.settings.lost_void_after, self._still_lost,
                                           reason, self.runtime.table.next_round)

    def _disarm_lost_timer(self) -> None:
        if self._lost_timer is not None:
            self._lost_timer.cancel()
            self._lost_timer = None

    def _still_lost(self, reason: str, lost_in: int) -> None:
        """The device did not come back in time while the round it was lost in (``lost_in``)
        was still open: never another round, begun since (from another device)."""
        self._lost_timer = None
        if not self._still_due(lost_in):
            return
        detail = f"{self.settings.family} {self.settings.id} not back within " \
                 f"{self.settings.lost_void_after:g} s ({reason})"
        if self.loss is Loss.VOID:
            # baccarat.art10: a dealing error that cannot be corrected voids the hand. Nobody at
            # the table pressed anything, so the void says the dealer may still be dealing it:
            # the cards the shoe sends when it is back are that hand's, not the next one's.
            self._accept(Void(reason=f"device_lost: {detail}", round=lost_in,
                              extra={"source": "daemon", VOID_DEVICE_LOST: True}),
                         "hand cannot be corrected",
                         still_due=lambda: self._still_due(lost_in))
        else:
            self._accept(Fault(code=DEVICE_LOST, detail=detail,
                               extra={"family": self.settings.family, "kind": self.family.kind,
                                      "source": "daemon"}),
                         "device not back")

    def _still_due(self, lost_in: int) -> bool:
        """The device is still away and the round it was lost in is still the open one."""
        table = self.runtime.table
        return (not self.connected.is_set() and table.round_open
                and table.next_round == lost_in)

    def _accept(self, event: Event, why: str,
                still_due: Callable[[], bool] | None = None) -> None:
        """Record the daemon's own decision. A journal that cannot record it (a full disk)
        does not lose it: it is tried again every :data:`CONSEQUENCE_RETRY_S` until the journal
        takes it, as long as it is ``still_due`` (a void for a round that has ended since, or
        whose device came back, is not)."""
        try:
            self.runtime.accept(event, "daemon")
        except Degraded as exc:
            log.error("consequence_not_recorded", device=self.settings.id, why=why,
                      error=str(exc), retry_in=CONSEQUENCE_RETRY_S)
            self._retry_later(event, why, still_due)

    def _retry_later(self, event: Event, why: str,
                     still_due: Callable[[], bool] | None) -> None:
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def again() -> None:
            self._retries.discard(handle)
            if still_due is not None and not still_due():
                log.warning("consequence_no_longer_due", device=self.settings.id, why=why)
                return
            try:
                self.runtime.accept(event, "daemon")
            except Degraded:
                self._retry_later(event, why, still_due)  # said once, when it first failed
            else:
                log.warning("consequence_recorded_late", device=self.settings.id, why=why)

        handle = loop.call_later(CONSEQUENCE_RETRY_S, again)
        self._retries.add(handle)

    # -- discovery ---------------------------------------------------------------------------

    async def _url(self) -> str:
        if self.settings.url is not None:
            return self.settings.url
        assert self.records is not None, "a device with a match needs discovery records"
        while self._discovered_url is None:
            self._status(DeviceState.WAITING, detail="waiting for the device to appear")
            action, url = await self.records.get()
            if action in ("add", "present"):
                self._discovered_url = url
        return self._discovered_url

    async def _watch_removal(self, driver: Device) -> None:
        if self.records is None:
            return
        while True:
            action, url = await self.records.get()
            if action == "remove":
                self._discovered_url = None
                driver.close("removed")
                return
            if action in ("add", "present"):
                self._discovered_url = url

    # -- status ------------------------------------------------------------------------------

    def _status(self, state: DeviceState, **fields: Any) -> None:
        """The device is in ``state`` (``fields`` say why and where): published and logged if
        that is a change; the same again (a retry that failed the same way) is not, and is
        logged again only now and then, with a count."""
        said = (state, tuple(sorted((key, repr(value)) for key, value in fields.items())))
        if said == self._said:
            repeats = self._repeats.seen(said)
            if repeats:
                self._log(state, fields, repeats=repeats)
            else:  # every attempt, for whoever asked for debug
                log.debug(f"device_{state}", device=self.settings.id, again=True, **fields)
            return
        self._said = said
        self._repeats.seen(said)
        self.state = state
        why = fields.get("error") or fields.get("reason") or fields.get("detail")
        self.problem = None if state is DeviceState.CONNECTED else (
            f"lost: {why}" if state is DeviceState.LOST else why or state.value)
        body = {"state": state.value, "device": self.settings.id, "family": self.settings.family,
                "since": rfc3339_now(), **fields}
        self.on_status(self.settings.id, body)
        self._log(state, fields)

    def _log(self, state: DeviceState, fields: dict[str, Any], **more: Any) -> None:
        level = (logging.ERROR if fields.get("reason") == REASON_WRONG_DEVICE  # with its fault
                 else logging.WARNING if state in MISSING else logging.INFO)
        log.log(level, f"device_{state}", device=self.settings.id,
                family=self.settings.family, **fields, **more)

    def _keep_counters(self, driver: Device) -> None:
        for key, value in driver.link_counters().items():
            self._counters_before[key] = self._counters_before.get(key, 0) + value

    def counters(self) -> dict[str, int]:
        """Link and framing counters over every connection so far."""
        out = dict(self._counters_before)
        if self.driver is not None:
            for key, value in self.driver.link_counters().items():
                out[key] = out.get(key, 0) + value
        out["reconnects"] = self.reconnects
        out["losses"] = self.losses
        out["attempts"] = self.attempts
        return out


def _cannot_open(url: str, exc: DeviceError) -> str:
    """Why ``url`` did not open, in the system's words when it gave an errno (pyserial says
    "[Errno 2] could not open port X: [Errno 2] No such file or directory: 'X'")."""
    cause = exc.__cause__
    if isinstance(cause, OSError) and isinstance(cause.errno, int) and cause.errno > 0:
        return f"cannot open {url}: {os.strerror(cause.errno)}"
    return str(exc)


async def _comes_up(driver: Device, within: float) -> bool:
    """Whether the driver's link came up (even if it closed right after) before it closed (a
    refused device, a port that went away) or ``within`` seconds passed."""
    up = asyncio.ensure_future(driver.connected.wait())
    closed = asyncio.ensure_future(driver.wait_closed())
    try:
        done, _ = await asyncio.wait({up, closed}, timeout=within,
                                     return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in (up, closed):
            waiter.cancel()
        await asyncio.gather(up, closed, return_exceptions=True)
    return up in done


async def feed_discovery(supervisors: Sequence[DeviceSupervisor]) -> None:
    """Hot-plug: pyudev's add/remove events for the devices configured with a match go to
    their supervisors (docs/udev.md)."""
    from tabled.drivers.discovery import DeviceMatch, Discovery

    by_id = {sup.settings.id: sup for sup in supervisors if sup.records is not None}
    matches = {}
    for device_id, sup in by_id.items():
        m = sup.settings.match
        assert m is not None
        matches[device_id] = DeviceMatch(
            vendor_id=m.vendor_id, model_id=m.model_id, serial=m.serial, by_id=m.by_id,
            # a USB serial adapter shows up as its USB device and as its tty: the family says
            # which one it is opened through
            subsystem=sup.family.udev_subsystem)
    async with Discovery(matches, udev=True) as discovery:
        async for change in discovery:
            record = change.record
            log.info("device_discovered", device=change.device_id, action=record.action,
                     node=record.device_node)
            queue = by_id[change.device_id].records
            assert queue is not None
            queue.put_nowait((record.action, record.url()))
