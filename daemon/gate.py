"""The daemon's side of the dealer console: each command checked, applied, answered.

Owns what happens to a command once it reached the daemon (``…/cmd/<name>``, docs/mqtt.md): the
:class:`~tabled.daemon.commands.CommandGate` checks it (MAC, freshness, nonce, content); an
accepted one becomes an event the runtime applies and journals with the console as its source;
a refused one is journaled as a ``command_rejected`` fault (the audit log), and either way the
answer is the reply the console waits for. The nonces of the commands the journal holds are
remembered at start, so that a replay across a restart is refused too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import structlog

from tabled.contract import CONTRACT_VERSION
from tabled.contract.outcome import Notice, Outcome
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.commands import CommandGate, CommandRejected, parse_ts
from tabled.daemon.journal import AuditLog, JournalError
from tabled.daemon.runtime import Degraded, TableRuntime

log = structlog.get_logger("tabled.commands")


class ConsoleGate:
    """Commands from the dealer console, for one table."""

    def __init__(self, gate: CommandGate, runtime: TableRuntime, audit: AuditLog, *,
                 journaled: Callable[[], None] = lambda: None) -> None:
        self.gate = gate
        self.runtime = runtime
        self.audit = audit
        #: Called after a refusal was journaled (its fault is then to be published).
        self.journaled = journaled

    def remember_nonces(self) -> None:
        """The nonces of journaled commands, so that a replay across a restart is refused."""
        horizon = time.time() - 2 * self.gate.max_skew
        for stored in self.audit.commands():
            nonce = stored.body.get("nonce")
            if isinstance(nonce, str):
                ts = stored.body.get("command_ts")
                when = parse_ts(ts) if isinstance(ts, str) else 0.0
                if when >= horizon:
                    self.gate.remember(nonce, when)

    def handle(self, name: str, payload: bytes) -> dict[str, Any]:
        """Check, apply or refuse the command ``name``; the reply to publish."""
        try:
            command = self.gate.check(name, payload)
        except CommandRejected as exc:
            log.warning("command_rejected", command=name, reason=exc.reason, detail=exc.detail)
            self._journal_rejection(name, exc)
            return {"ok": False, "command": name, "error": exc.reason, "detail": exc.detail}
        before = self.audit.last_id
        try:
            outputs = self.runtime.accept(command.event, f"console:{command.console}")
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
        try:
            recorded = self.audit.has_input(before, "nonce", nonce)
        except JournalError:
            return
        if not recorded:
            self.gate.forget(nonce)

    def _journal_rejection(self, name: str, exc: CommandRejected) -> None:
        body = {"v": CONTRACT_VERSION, "type": "command_rejected", "command": name,
                "reason": exc.reason, "detail": exc.detail, "ts": rfc3339_now()}
        try:
            self.audit.record_rejection(body, rfc3339_now())
        except JournalError as err:
            log.error("rejection_not_journaled", error=str(err))
            return
        self.journaled()
