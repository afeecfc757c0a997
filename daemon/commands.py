"""Dealer-console commands: authenticated, fresh, used once, turned into rules events.

Owns the command format (docs/mqtt.md "Commands") and its checks. A command is a JSON object::

    {"cmd": "decision", "args": {"seat": 3, "play": true}, "console": "pit-4",
     "ts": "2026-11-29T15:43:19.123Z", "nonce": "9f2c…", "mac": "<hex HMAC-SHA256>"}

``mac`` is HMAC-SHA256, with the key shared with the dealer console, over the canonical JSON of
every other field (sorted keys, no spaces, UTF-8). A command is refused when its MAC is wrong
(forged), its timestamp is further than ``max_skew`` from our clock (stale), its nonce was seen
before (replayed), or its content is not a command we know. Refusals are journaled by the
caller. Pure apart from the clock, which is injected.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tabled.contract import signing
from tabled.contract.events import (
    Decision,
    Declare,
    Event,
    EventChecks,
    EventError,
    Reveal,
    ShoeStart,
    Void,
    parse_declaration,
    parse_round,
)
from tabled.daemon.errors import DaemonError

#: Command names (the last topic level of ``…/cmd/<name>``).
COMMANDS = ("decision", "reveal", "void", "new_shoe", "declare")
#: The nonces remembered to refuse replays: at least two skew windows' worth.
MAX_NONCES = 100_000


class CommandRejected(DaemonError):
    """A command refused; ``reason`` is one of forged, stale, replayed, malformed, unknown."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    console: str
    nonce: str
    ts: str
    event: Event


#: The canonical form a MAC is computed over (:mod:`tabled.contract.signing`, shared with the
#: pit's fetch requests).
canonical = signing.canonical


def sign(body: dict[str, Any], key: bytes) -> dict[str, Any]:
    """``body`` with its ``mac`` (what a dealer console does before publishing): the MAC of
    :func:`tabled.contract.signing.sign`."""
    unsigned = {k: v for k, v in body.items() if k != "mac"}
    return {**unsigned, "mac": signing.sign(unsigned, key)}


def parse_ts(text: Any) -> float:
    if not isinstance(text, str):
        raise CommandRejected("malformed", "ts must be an RFC 3339 string")
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise CommandRejected("malformed", f"ts {text!r} is not RFC 3339") from None


def _event(name: str, args: dict[str, Any], source: dict[str, Any],
           checks: EventChecks | None = None) -> Event:
    event = _command_event(name, args, source)
    if checks:
        check = checks.get(event.TYPE)
        if check is not None:
            try:
                check(event)
            except EventError as exc:
                raise CommandRejected("malformed", str(exc)) from None
    return event


def _command_event(name: str, args: dict[str, Any], source: dict[str, Any]) -> Event:
    try:
        if name == "decision":
            seat, play = args.get("seat"), args.get("play")
            if not isinstance(seat, int) or isinstance(seat, bool) or seat < 1:
                raise EventError(f"seat {seat!r} is not a positive integer")
            if not isinstance(play, bool):
                raise EventError(f"play {play!r} is not a boolean")
            return Decision(seat=seat, play=play, round=_round(args), extra=source)
        if name == "reveal":
            return Reveal(round=_round(args), extra=source)
        if name == "void":
            reason = args.get("reason", "dealer_console")
            if not isinstance(reason, str):
                raise EventError(f"reason {reason!r} is not a string")
            return Void(reason=reason, round=_round(args), extra=source)
        if name == "declare":
            # the dealer's call of a result ("banker", "seven_out"), for the pit to compare
            result, round_no = parse_declaration(args.get("result"), args.get("round"))
            return Declare(result=result, round=round_no, extra=source)
        decks = args.get("decks")
        if not isinstance(decks, int) or isinstance(decks, bool) or decks < 1:
            raise EventError(f"decks {decks!r} is not a positive integer")
        return ShoeStart(decks=decks, extra=source)
    except EventError as exc:
        raise CommandRejected("malformed", str(exc)) from None


def _round(args: dict[str, Any]) -> int | None:
    """The round a decision, reveal or void is for (``args["round"]``, optional): the rules
    decline the command in any other round (``for_another_round``), so that one that arrives
    late — a console sending again, a slow network — cannot act on the round that began
    meanwhile. Present, it is a positive integer; ``null`` is no round."""
    if "round" in args and args["round"] is None:
        raise EventError("round is null: a command without a round leaves it out")
    return parse_round(args.get("round"))


class CommandGate:
    """Checks commands against the shared key, the clock and the nonces seen, and (given the
    table's game's ``checks``, ``tabled.games.registry.event_checks``) what that game takes: a
    ``declare`` of a word it does not declare is malformed."""

    def __init__(self, key: bytes, max_skew: float,
                 clock: Callable[[], float] = time.time,
                 checks: EventChecks | None = None) -> None:
        self._key = key
        self._checks = checks
        self.max_skew = max_skew
        self._clock = clock
        self._nonces: OrderedDict[str, float] = OrderedDict()

    def forget(self, nonce: str) -> None:
        """A nonce whose command never took effect (the journal refused it): the console may
        send that command again."""
        self._nonces.pop(nonce, None)

    def remember(self, nonce: str, ts: float) -> None:
        """A nonce already used (at start, from the journal)."""
        self._nonces[nonce] = ts
        while len(self._nonces) > MAX_NONCES:
            self._nonces.popitem(last=False)

    def check(self, name: str, payload: bytes) -> Command:
        """The command's event, or :class:`CommandRejected` saying why not."""
        if name not in COMMANDS:
            raise CommandRejected("unknown", f"no command {name!r} (known: {', '.join(COMMANDS)})")
        try:
            body = json.loads(payload)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise CommandRejected("malformed", "not JSON") from None
        if not isinstance(body, dict):
            raise CommandRejected("malformed", "not a JSON object")
        mac = body.get("mac")
        # compare_digest takes ASCII text only; a MAC is hex, so anything else is no MAC.
        if not isinstance(mac, str) or not mac.isascii():
            raise CommandRejected("forged", "no mac")
        try:
            canonical(body)
        except UnicodeEncodeError:  # a lone surrogate, spelt with a JSON \u escape
            raise CommandRejected("malformed", "text that is not valid Unicode") from None
        if not signing.verify(body, self._key):
            raise CommandRejected("forged", "the mac does not match the content")
        # From here on the content is the console's own words.
        if body.get("cmd") != name:
            raise CommandRejected("malformed", f"cmd {body.get('cmd')!r} does not match the "
                                               f"topic's {name!r}")
        ts = parse_ts(body.get("ts"))
        skew = abs(self._clock() - ts)
        if skew > self.max_skew:
            raise CommandRejected("stale", f"timestamp is {skew:.1f} s from our clock "
                                           f"(limit {self.max_skew:g} s)")
        nonce = body.get("nonce")
        if not isinstance(nonce, str) or not 16 <= len(nonce) <= 128:
            raise CommandRejected("malformed", "nonce must be a string of 16 to 128 characters")
        if nonce in self._nonces:
            raise CommandRejected("replayed", f"nonce {nonce} was already used")
        console = body.get("console")
        if not isinstance(console, str) or not console:
            raise CommandRejected("malformed", "console must name the dealer console")
        args = body.get("args", {})
        if not isinstance(args, dict):
            raise CommandRejected("malformed", "args must be an object")
        source = {"source": f"console:{console}", "nonce": nonce, "command_ts": body["ts"]}
        event = _event(name, args, source, self._checks)
        self.remember(nonce, ts)
        return Command(name, console, nonce, body["ts"], event)
