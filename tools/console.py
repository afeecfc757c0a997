"""``tabled console``: the dealer console of a table, as a program.

Owns the console's side of docs/mqtt.md "Commands": where it connects and as whom (the
``[console]`` section of the table's config file, :func:`load_target`), the signed command and
the wait for the daemon's reply (:class:`TableConsole`, the one path every sender takes: the
one-shot commands, the interactive mode, the demos' dealer), what the console shows of the open
round (:class:`RoundView`), its keystrokes (:class:`Keys`), and the key file (:func:`keygen`).

It signs with :func:`tabled.daemon.commands.sign`, the one implementation the daemon checks
against. It never shows a dealer's card before the reveal: it reads only the published event
stream, where the daemon withholds them, and the view keeps no dealer card even from the
events that come with the reveal. It never logs or prints the key or the broker password.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import random
import secrets
import signal
import ssl
import sys
import termios
import tty
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TextIO

import aiomqtt

from tabled.contract.backoff import Backoff
from tabled.contract.secrets import SecretError, read_secret
from tabled.contract.timeutil import rfc3339_now
from tabled.daemon.commands import COMMANDS, sign
from tabled.daemon.config import ConfigError, load_config
from tabled.daemon.mqtt import BrokerAddress
from tabled.games.parts.demo import SeatedConsole
from tabled.tools.errors import ToolError
from tabled.tools.show import describe, words

#: Exit statuses of ``tabled console``.
EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2
#: A new key: 32 random bytes, written as 64 hexadecimal characters and a newline. The daemon
#: and the console use the file's text (whitespace stripped) as the HMAC key, as it is.
KEY_BYTES = 32
#: How long the console waits for the broker's CONNACK, seconds.
T_CONNECT = 10.0
#: How many times the demos' dealer sends a command that got no reply.
AUTO_ATTEMPTS = 3
#: How long a command waits, after connecting, for the table's retained status (the broker
#: sends it right after the subscription), seconds: a table that never published one is taken
#: as it comes.
T_STATUS = 1.0


class ConsoleError(ToolError):
    """The console cannot do its job: a config, key or broker problem, said for a person."""


class CommandTimeout(ConsoleError):
    """No reply from the daemon in time."""


class TableOffline(ConsoleError):
    """The table's retained status says it is offline: the command was not sent."""


# -- where the console connects, and as whom -----------------------------------------------------


@dataclass(frozen=True)
class ConsoleTarget:
    """Everything a console needs to command one table (secrets kept out of ``repr``)."""

    config_path: str
    site: str
    table: str
    game: str
    prefix: str
    url: str
    client_id: str
    console_id: str
    reply_timeout: float
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key: bytes = field(default=b"", repr=False)

    @property
    def base(self) -> str:
        return f"{self.prefix}/{self.site}/{self.table}"

    @property
    def address(self) -> BrokerAddress:
        return BrokerAddress.parse(self.url)

    def tls_context(self) -> ssl.SSLContext | None:
        if not self.address.tls and self.ca_file is None and self.cert_file is None:
            return None
        context = ssl.create_default_context(
            cafile=str(self.ca_file) if self.ca_file else None)
        if self.cert_file is not None and self.key_file is not None:
            context.load_cert_chain(str(self.cert_file), str(self.key_file))
        return context


def load_target(path: str | os.PathLike[str]) -> ConsoleTarget:
    """The console of the table that the config file at ``path`` describes; ConsoleError says
    what is missing (every config error with its key, an unreadable secret, no broker)."""
    name = str(path)
    try:
        config = load_config(path)
    except ConfigError as exc:
        raise ConsoleError("\n".join(f"{exc.path}: {key}: {reason}"
                                     for key, reason in exc.errors)) from None
    if not config.commands.enabled:
        raise ConsoleError(
            f"{name}: commands: [commands] enabled = false: this table's daemon takes no "
            "console commands. Set enabled = true and hmac_key_file (tabled console keygen "
            "--out FILE makes a key), restart the daemon, and try again (docs/console.md).")
    console = config.console
    key_file = console.hmac_key_file or config.commands.hmac_key_file
    assert key_file is not None  # [commands] enabled requires it
    url = console.url or (None if config.mqtt.embedded else config.mqtt.url)
    if url is None:
        raise ConsoleError(f"{name}: console.url: no broker: the daemon's [mqtt] has no url, "
                           "or an embedded one on another port each start; give [console] url")
    try:
        key = read_secret(key_file)
        password = (read_secret(console.password_file).decode()
                    if console.password_file is not None else None)
        if console.tls is not None and console.tls.key_file is not None:
            read_secret(console.tls.key_file)
    except SecretError as exc:  # names the file and its mode, never what is in it
        raise ConsoleError(f"{name}: {exc}") from None
    except UnicodeDecodeError:
        raise ConsoleError(f"{name}: console.password_file is not UTF-8 text") from None
    daemon_tls = config.mqtt.tls
    ca_file = (console.tls.ca_file if console.tls is not None else None) or (
        daemon_tls.ca_file if daemon_tls is not None else None)
    site, table = config.table.site, config.table.id
    return ConsoleTarget(
        config_path=name, site=site, table=table, game=config.table.game,
        prefix=config.mqtt.topic_prefix, url=url,
        # unique unless configured: a one-shot command must not take over the session of an
        # interactive console running on the same table
        client_id=console.client_id or f"tabled-console-{site}-{table}-{secrets.token_hex(3)}",
        console_id=console.id or f"console-{table}", reply_timeout=console.reply_timeout,
        username=console.username, password=password, ca_file=ca_file,
        cert_file=console.tls.cert_file if console.tls is not None else None,
        key_file=console.tls.key_file if console.tls is not None else None, key=key)


def keygen(path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write a new random key to ``path``, mode 0600, in the format the daemon and the console
    read: 64 hexadecimal characters and a newline. An existing file is kept unless ``force``
    (replacing a key in use locks every console out until both sides have the new one)."""
    target = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError:
        raise ConsoleError(f"{target} exists: a key in use is not replaced silently (--force "
                           "replaces it; the daemon and every console then need the new one)"
                           ) from None
    except OSError as exc:
        raise ConsoleError(f"cannot write {target}: {exc.strerror}") from None
    try:
        os.fchmod(fd, 0o600)  # O_CREAT's mode does not change a file that existed (--force)
        os.write(fd, (secrets.token_hex(KEY_BYTES) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return target


# -- commands and replies ------------------------------------------------------------------------


def command_body(name: str, args: dict[str, Any], console_id: str, key: bytes) -> dict[str, Any]:
    """A command as the daemon expects it: fresh timestamp and nonce, signed."""
    return sign({"cmd": name, "args": args, "console": console_id, "ts": rfc3339_now(),
                 "nonce": secrets.token_hex(16)}, key)


@dataclass(frozen=True)
class Reply:
    """The daemon's answer to one command (docs/mqtt.md): accepted, refused, or declined by
    the rules (accepted and journaled, but the game had no use for it: a notice)."""

    command: str
    ok: bool
    error: str | None = None
    detail: str | None = None
    rounds: tuple[int, ...] = ()
    notices: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_body(cls, name: str, body: dict[str, Any]) -> Reply:
        notices = body.get("notices") or []
        rounds = body.get("rounds") or []
        return cls(command=str(body.get("command") or name), ok=body.get("ok") is True,
                   error=body.get("error"), detail=body.get("detail"),
                   rounds=tuple(r for r in rounds if isinstance(r, int)),
                   notices=tuple(n for n in notices if isinstance(n, dict)))

    @property
    def accepted(self) -> bool:
        return self.ok and not self.notices

    def describe(self) -> str:
        if not self.ok:
            return f"refused: {self.error}: {self.detail}"
        if self.notices:
            said = "; ".join(f"{n.get('code')}: {n.get('message')}" for n in self.notices)
            return f"declined by the rules: {said}"
        ended = f" (round {', '.join(map(str, self.rounds))} settled)" if self.rounds else ""
        return f"ok{ended}"


def describe_command(name: str, args: dict[str, Any]) -> str:
    if name == "decision":
        return f"seat {args.get('seat')} {'play' if args.get('play') else 'fold'}"
    if name == "void":
        return f"void ({args.get('reason')})"
    if name == "new_shoe":
        return f"new shoe of {args.get('decks')} decks"
    return name


@dataclass
class _Pending:
    name: str
    nonce: str
    future: asyncio.Future[Reply]


class TableConsole:
    """One console's connection to the broker: sends signed commands and waits for each reply;
    with ``watch``, also hands the table's events, outcomes and status to :meth:`watch`.

    ``async with TableConsole(target) as console: reply = await console.command(...)``. The
    first connection must succeed (ConsoleError otherwise); with ``reconnect`` a lost one is
    retried with backoff (commands waiting then fail), else the console stops.
    """

    def __init__(self, target: ConsoleTarget, *, watch: bool = False,
                 reconnect: bool = False) -> None:
        self.target = target
        self.watching = watch
        self.reconnect = reconnect
        #: The table's retained ``…/status`` (birth record or last will), when the broker lets
        #: this identity read it.
        self.status: dict[str, Any] | None = None
        self.status_seen = asyncio.Event()
        self.connected = asyncio.Event()
        self._client: aiomqtt.Client | None = None
        self._pending: list[_Pending] = []
        self._watched: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._failure: str | None = None

    async def __aenter__(self) -> TableConsole:
        self._task = asyncio.create_task(self._run(), name="console-mqtt")
        stopped: asyncio.Future[Any] = asyncio.ensure_future(asyncio.shield(self._task))
        waiting: asyncio.Future[Any] = asyncio.ensure_future(self.connected.wait())
        try:
            await asyncio.wait({stopped, waiting}, timeout=T_CONNECT,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            waiting.cancel()
        if not self.connected.is_set():
            await self.__aexit__(None, None, None)
            why = self._failure or f"no answer within {T_CONNECT:g} s"
            raise ConsoleError(f"cannot reach the broker at {self.target.url} as "
                               f"{self.target.username or '(anonymous)'}: {why}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _new_client(self) -> aiomqtt.Client:
        t = self.target
        address = t.address
        return aiomqtt.Client(address.host, address.port, identifier=t.client_id,
                              username=t.username, password=t.password,
                              tls_context=t.tls_context(), keepalive=30, timeout=T_CONNECT)

    async def _run(self) -> None:
        base = self.target.base
        backoff = Backoff(0.5, 10.0)
        while True:
            try:
                async with self._new_client() as client:
                    await client.subscribe(f"{base}/cmd/+/reply", qos=1)
                    await client.subscribe(f"{base}/status", qos=1)
                    if self.watching:
                        await client.subscribe(f"{base}/event", qos=1)
                        await client.subscribe(f"{base}/outcome", qos=1)
                    self._client = client
                    self._failure = None
                    self.connected.set()
                    backoff.reset()
                    self._watched.put_nowait(("connection", {"connected": True}))
                    async for message in client.messages:
                        with contextlib.suppress(Exception):  # a malformed one: not news
                            self._received(str(message.topic), message.payload)
            except (aiomqtt.MqttError, OSError) as exc:  # OSError: TLS files, refused sockets
                self._failure = str(exc) or type(exc).__name__
            self._client = None
            self.connected.clear()
            for pending in self._pending:
                if not pending.future.done():
                    pending.future.set_exception(ConsoleError(
                        f"the broker connection was lost: {self._failure}"))
            self._watched.put_nowait(("connection", {"connected": False,
                                                     "error": self._failure}))
            if not self.reconnect:
                return
            await asyncio.sleep(backoff.next())

    def _received(self, topic: str, raw: Any) -> None:
        base = self.target.base + "/"
        if not topic.startswith(base):
            return
        try:
            body = json.loads(raw if isinstance(raw, (bytes, bytearray, str)) else b"")
        except ValueError:
            return
        if not isinstance(body, dict):
            return
        kind = topic[len(base):]
        if kind.startswith("cmd/") and kind.endswith("/reply"):
            self._reply(kind.split("/")[1], body)
            return
        if kind == "status":
            self.status = body
            self.status_seen.set()
        if self.watching or kind == "status":
            self._watched.put_nowait((kind, body))

    def _reply(self, name: str, body: dict[str, Any]) -> None:
        # An accepted command's reply names its nonce. A refused one does not (the daemon
        # does not trust what it refused): it answers the oldest command of that name still
        # waiting, as the daemon answers commands in the order it receives them.
        nonce = body.get("nonce")
        waiting = [p for p in self._pending if not p.future.done() and p.name == name]
        match = next((p for p in waiting if p.nonce == nonce), None) if nonce else None
        if match is None and nonce is None and body.get("ok") is not True and waiting:
            match = waiting[0]
        if match is not None:
            match.future.set_result(Reply.from_body(name, body))

    async def command(self, name: str, args: dict[str, Any] | None = None, *,
                      wait: float | None = None) -> Reply:
        """Sign, publish and wait for the daemon's reply; CommandTimeout when none comes,
        ConsoleError when the connection is lost meanwhile. TableOffline, and nothing sent,
        when the table's retained status says it is offline: a daemon that is down takes no
        command, and the broker would not keep one for it (docs/console.md)."""
        if name not in COMMANDS:
            raise ValueError(f"no command {name!r} (known: {', '.join(COMMANDS)})")
        args = args or {}
        limit = self.target.reply_timeout if wait is None else wait
        body = command_body(name, args, self.target.console_id, self.target.key)
        pending = _Pending(name, body["nonce"], asyncio.get_running_loop().create_future())
        self._pending.append(pending)
        try:
            async with asyncio.timeout(limit):
                await self.connected.wait()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(T_STATUS):
                        await self.status_seen.wait()
                offline = self.offline()
                if offline is not None:
                    raise TableOffline(offline)
                assert self._client is not None
                await self._client.publish(f"{self.target.base}/cmd/{name}",
                                           json.dumps(body), qos=1)
                return await pending.future
        except TimeoutError:
            raise CommandTimeout(self._timeout_text(name, limit)) from None
        except aiomqtt.MqttError as exc:
            raise ConsoleError(f"could not publish {name}: {exc}") from None
        finally:
            self._pending.remove(pending)

    def offline(self) -> str | None:
        """What to say when the table's retained status says it is offline, else None."""
        status = self.status or {}
        if status.get("state") != "offline":
            return None
        reason = status.get("reason")
        return (f"table offline{f' ({reason})' if reason else ''}: not sent, not queued; "
                "send it again once the table is back online")

    def _timeout_text(self, name: str, limit: float) -> str:
        status = self.status or {}
        if status.get("state") == "offline":
            why = f"the table is offline ({status.get('reason')})"
        elif status.get("commands") is False:
            why = "the table's birth record says commands are disabled"
        else:
            why = ("is its daemon running with [commands] enabled, and may this console's "
                   "identity publish on …/cmd/+ (the broker drops silently what its ACL refuses)?")
        return f"no reply to {name} from {self.target.base} within {limit:g} s: {why}"

    async def watch(self) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """``(kind, body)`` in arrival order: ``event``, ``outcome``, ``status``, and
        ``connection`` when the broker connection comes or goes."""
        while True:
            yield await self._watched.get()


# -- what the console shows of the open round ----------------------------------------------------


@dataclass
class SeatView:
    """One seat with a bet in the open round: cards dealt, the player's cards once the deal is
    complete and the players have opened them (Art. 9.1), and the decision."""

    cards: int = 0
    known: tuple[str, ...] = ()
    play: bool | None = None


Phase = Literal["waiting", "dealing", "deciding", "revealed", "settled"]


class RoundView:
    """The table as the dealer console sees it, from the published stream only.

    The dealer's cards are counted, never kept: before the reveal the daemon publishes them as
    ``withheld`` placeholders, and the identified dealer hand that comes with the reveal is
    ignored here (the outcome line shows it, after the round).

    The round's number comes from the published events, each of which names the round it
    belongs to (``round``, docs/mqtt.md), or else from the last outcome: every command the
    console sends carries the round it shows (:attr:`command_round`), so that a command that
    reaches the daemon late, in another round, is declined there instead of acting on it.
    """

    def __init__(self, game: str) -> None:
        self.game = game
        #: How the game deals to seats and a dealer (its console part), or None.
        self.seated: SeatedConsole | None = words(game).seated
        self.phase: Phase = "waiting"
        self.seats: dict[int, SeatView] = {}
        self.dealer_cards = 0
        #: The round of the last round_start shown (its published ``round``), and the round
        #: named by the last published event that named one.
        self.current: int | None = None
        self.latest: int | None = None
        self.last_round: int | None = None
        self.last_outcome: dict[str, Any] | None = None
        self.status: dict[str, Any] | None = None
        self.connected: bool | None = None
        self.connection_error: str | None = None
        self.faults: deque[str] = deque(maxlen=3)

    @property
    def dealer_hand(self) -> int:
        """The dealer's cards at which the deal is complete (a game without seats: 3, as the
        console always counted)."""
        return 3 if self.seated is None else self.seated.dealer_cards

    @property
    def deal_complete(self) -> bool:
        return self.phase in ("dealing", "deciding") and self.dealer_cards >= self.dealer_hand

    @property
    def undecided(self) -> list[int]:
        return [seat for seat, view in sorted(self.seats.items()) if view.play is None]

    @property
    def round_number(self) -> int | None:
        """The number of the round being dealt, or of the next one: the published events', or
        the last outcome's plus one."""
        if self.current is not None:
            return self.current
        return None if self.last_round is None else self.last_round + 1

    @property
    def command_round(self) -> int | None:
        """The round a command given now is for: the round the console shows. In a game dealt
        to seats (Q Poker), the round being dealt and decided (its round_start's number), or
        the round just settled (a reveal then is declined, not applied to the next round);
        before the console has seen a whole round, the round the last published event named.
        In the other games, the hand or throw at the table: the later of the last outcome's
        next and the round the last event named. None when the console has seen nothing that
        says."""
        if self.seated is not None:
            if self.phase == "settled":
                return self.last_round
            if self.phase == "waiting":
                return self.latest
            return self.round_number
        after = None if self.last_round is None else self.last_round + 1
        known = [n for n in (after, self.latest) if n is not None]
        return max(known) if known else None

    def apply(self, kind: str, body: dict[str, Any]) -> list[str]:
        """Take one message; return what is news in it, a line each (for a console on a
        pipe, which prints news instead of redrawing). A message that is not what its topic
        promises is news of its own, never the end of the console."""
        try:
            return self._apply(kind, body)
        except Exception as exc:  # a malformed message: said, skipped
            return [f"malformed {kind} message skipped ({type(exc).__name__}: {exc})"]

    def _apply(self, kind: str, body: dict[str, Any]) -> list[str]:
        if kind == "connection":
            self.connected = bool(body.get("connected"))
            self.connection_error = body.get("error")
            return [f"broker {self._connection().strip('()').lower()}"]
        if kind == "status":
            self.status = body
            return [self._status_line()]
        if kind == "outcome":
            said = "outcome: " + describe(body).strip()  # (raises before any change if it must)
            self.last_outcome = body
            if isinstance(body.get("round"), int):
                self.last_round = body["round"]
            self.phase = "settled"
            return [said]
        if kind == "event":
            return self._event(body)
        return []

    def _event(self, event: dict[str, Any]) -> list[str]:
        kind, seat = event.get("type"), event.get("seat")
        named = event.get("round")
        if isinstance(named, int) and not isinstance(named, bool) and named >= 1 \
                and kind not in ("decision", "reveal", "void", "declare"):  # (a command's own)
            self.latest = named
            if kind == "round_start":
                self.current = named
        elif kind == "round_start":  # a daemon that does not say: the last outcome's next
            self.current = None
        number = self.round_number
        head = f"round {number}" if number is not None else "the round"
        if kind == "round_start":
            self.phase, self.dealer_cards = "dealing", 0
            self.seats = {s: SeatView() for s in event.get("seats") or [] if isinstance(s, int)}
            return [f"{head}: seats {' '.join(map(str, self.seats)) or '(none)'}"]
        if kind == "fault":
            self.faults.append(f"{event.get('code')}: {event.get('detail') or ''}".rstrip(": "))
            return [f"fault: {self.faults[-1]}"]
        if self.phase not in ("dealing", "deciding", "revealed"):
            return []  # a round that started before the console: not shown in part
        if kind == "decision" and isinstance(seat, int):
            self.seats.setdefault(seat, SeatView()).play = bool(event.get("play"))
            return [f"seat {seat}: {'play' if event.get('play') else 'fold'}"]
        if kind == "reveal" and self.phase != "revealed":
            self.phase = "revealed"
            return [f"{head}: revealed"]
        if kind in ("withheld", "hand", "card") and self.phase in ("dealing", "deciding"):
            # (after an outcome, the rest of a deal voided midway is not this round's)
            before = self.phase
            self._dealt(event, seat)
            if before == "dealing" and self.phase == "deciding":
                return [f"{head}: dealt; the players decide"]
        return []

    def _dealt(self, event: dict[str, Any], seat: Any) -> None:
        if seat == "dealer":
            if event.get("type") == "withheld" or not event.get("withheld"):
                self.dealer_cards += int(event.get("count") or len(event.get("cards") or [1]))
            if self.dealer_cards >= self.dealer_hand:
                self.phase = "deciding"
            return  # never a dealer's card: not even the identified hand at the reveal
        if not isinstance(seat, int):
            return
        view = self.seats.setdefault(seat, SeatView())
        if event.get("type") == "withheld":
            view.cards += int(event.get("count") or 1)
            return
        cards = event.get("cards") or ([event["card"]] if event.get("card") else [])
        view.known = (*view.known, *[c for c in cards if isinstance(c, str)])
        if not event.get("withheld"):  # dealt face up: it was not counted as a placeholder
            view.cards += len(cards)

    def confirm_reveal(self) -> str | None:
        """Why a reveal now needs the dealer's confirmation, if it does."""
        if self.seated is None:
            return None
        if self.phase == "dealing":
            return self.seated.early_reveal
        if self.phase == "deciding" and self.undecided:
            return self.seated.undecided.format(seats=", ".join(map(str, self.undecided)))
        return None

    def lines(self, target: ConsoleTarget) -> list[str]:
        out = [f"tabled console · {target.site}/{target.table} ({self.game}) as "
               f"{target.console_id} · broker {target.url} {self._connection()}"]
        if self.status:
            out.append(self._status_line())
        if self.seated is not None:  # the games with seats
            out += self._seat_lines()
        if self.last_outcome is not None:
            out.append("last: " + describe(self.last_outcome).strip())
        out += [f"fault: {f}" for f in self.faults]
        return out

    def _status_line(self) -> str:
        status = self.status or {}
        state = str(status.get("state", "?"))
        if status.get("reason"):
            state += f" ({status['reason']})"
        said = status.get("commands")
        commands = "on" if said is True else "OFF" if said is False else "?"
        return f"table {state}, commands {commands}"

    def _connection(self) -> str:
        if self.connected is None:
            return "(connecting)"
        if self.connected:
            return "(connected)"
        return f"(DISCONNECTED: {self.connection_error}; reconnecting)"

    def _seat_lines(self) -> list[str]:
        number = self.last_round if self.phase == "settled" else self.round_number
        head = f"round {number}" if number is not None else "the round"
        if self.phase == "waiting":
            return [f"{head}: no round seen yet (rounds that start while the console runs "
                    "are shown)"]
        text = {"dealing": "dealing", "deciding": "dealt: the players decide",
                "revealed": "revealed", "settled": "settled"}[self.phase]
        out = [f"{head}: {text}"]
        for seat, view in sorted(self.seats.items()):
            decision = {True: "PLAY", False: "fold", None: "-"}[view.play]
            cards = " ".join(view.known) if view.known else f"{view.cards} card(s)"
            out.append(f"  seat {seat:<3} {cards:<12} {decision}")
        out.append(f"  dealer   {self.dealer_cards} card(s), face down")
        return out


# -- keystrokes ----------------------------------------------------------------------------------

KEY_HELP = ("keys: seat number then p (play) or f (fold) · r reveal · v void (asks a reason) · "
            "q quit · ? help")


@dataclass(frozen=True)
class Action:
    """What a keystroke asks for: a command, quitting, or a word for the dealer."""

    kind: Literal["command", "quit", "say", "none"]
    name: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    text: str = ""


class Keys:
    """Turns keystrokes into actions, one character at a time, the same from a terminal in
    cbreak mode and from lines on a pipe. ``confirm`` says why a reveal needs a ``y`` first."""

    def __init__(self, confirm: Callable[[], str | None] = lambda: None) -> None:
        self.mode: Literal["keys", "reason", "confirm"] = "keys"
        self.buffer = ""
        self._confirm = confirm

    @property
    def prompt(self) -> str:
        if self.mode == "reason":
            return f"void: the reason (Enter sends, Esc cancels): {self.buffer}"
        if self.mode == "confirm":
            return "reveal anyway? y/n "
        return f"> {self.buffer}"

    def feed(self, text: str) -> Iterator[Action]:
        for ch in text:
            action = self._key(ch)
            if action.kind != "none":
                yield action

    def _key(self, ch: str) -> Action:
        if ch == "\x1b":  # Esc: cancel whatever is being typed
            self.mode, self.buffer = "keys", ""
            return Action("say", text="cancelled")
        if ch in ("\x7f", "\x08"):
            self.buffer = self.buffer[:-1]
            return Action("say")
        if self.mode == "reason":
            return self._reason(ch)
        if self.mode == "confirm":
            if ch in "\r\n ":
                return Action("none")
            self.mode = "keys"
            if ch.lower() == "y":
                return Action("command", "reveal")
            return Action("say", text="reveal cancelled")
        if ch.isdigit():
            self.buffer = (self.buffer + ch)[-3:]
            return Action("say")
        lower = ch.lower()
        if lower in ("p", "f"):
            if not self.buffer:
                return Action("say", text="type the seat number first, then p or f")
            seat, self.buffer = int(self.buffer), ""
            if seat < 1:
                return Action("say", text="seats are numbered from 1")
            return Action("command", "decision", {"seat": seat, "play": lower == "p"})
        self.buffer = ""
        if lower == "r":
            why = self._confirm()
            if why is not None:
                self.mode = "confirm"
                return Action("say", text=why)
            return Action("command", "reveal")
        if lower == "v":
            self.mode = "reason"
            return Action("say")
        if lower == "q" or ch == "\x04":
            return Action("quit")
        if lower in ("?", "h"):
            return Action("say", text=KEY_HELP)
        if ch in "\r\n \t":
            return Action("none")
        return Action("say", text=f"unknown key {ch!r} ({KEY_HELP})")

    def _reason(self, ch: str) -> Action:
        if ch in "\r\n":
            reason = self.buffer.strip()
            if not reason:  # (also the end of the line that typed "v", from a pipe)
                return Action("none")
            self.buffer, self.mode = "", "keys"
            return Action("command", "void", {"reason": reason})
        if ch.isprintable():
            self.buffer = (self.buffer + ch)[:200]
        return Action("say")


# -- the interactive console ---------------------------------------------------------------------


class _Terminal:
    """The dealer's terminal: cbreak (each key at once, no echo) while the console runs, and a
    full redraw per change; on a pipe, one line per change and no terminal control."""

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin, self.stdout = stdin, stdout
        self.tty = stdin.isatty() and stdout.isatty()
        self._saved: list[Any] | None = None
        self._said: str | None = None

    def __enter__(self) -> _Terminal:
        if self.tty:
            fd = self.stdin.fileno()
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.stdin.fileno(), termios.TCSADRAIN, self._saved)
        with contextlib.suppress(OSError, ValueError):
            self.stdout.write("\n")
            self.stdout.flush()

    def show(self, lines: list[str], prompt: str, message: str,
             news: list[str] | None = None) -> None:
        try:
            if self.tty:
                self.stdout.write("\x1b[H\x1b[2J" + "\n".join(
                    [*lines, "", KEY_HELP, message, prompt]))
            else:  # on a pipe: who and where first, then what is new, a line each
                said = [*([] if self._said is not None else lines[:1]), *(news or []),
                        *([message] if message != self._said else [])]
                self._said = message
                if said:
                    self.stdout.write("\n".join(line for line in said if line) + "\n")
            self.stdout.flush()
        except (OSError, ValueError):
            pass  # a terminal that went away: the console ends on its input's end


#: The commands that name the round they are for (``round`` in their args; docs/mqtt.md).
ROUND_COMMANDS = ("decision", "reveal", "void")


def for_round(action: Action, number: int | None) -> Action:
    """``action``, a command typed now, for round ``number`` (the round the console shows
    when the key is pressed, not when the command goes out)."""
    if action.name not in ROUND_COMMANDS or number is None or "round" in action.args:
        return action
    return replace(action, args={**action.args, "round": number})


async def interactive(target: ConsoleTarget, stdin: TextIO | None = None,
                      stdout: TextIO | None = None) -> int:
    """The dealer console on a terminal (or driven through a pipe): shows the open round, takes
    keystrokes, sends each command and shows its reply. Ends on q, end of input or a signal."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    view = RoundView(target.game)
    keys = Keys(view.confirm_reveal)
    inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    outbox: asyncio.Queue[Action] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    message = ""

    def key_input() -> None:
        try:
            data = os.read(fd, 1024)
        except OSError:
            data = b""
        inbox.put_nowait(("keys", decoder.decode(data)) if data else ("eof", None))
        if not data:
            loop.remove_reader(fd)

    async def sender(console: TableConsole) -> None:
        while True:  # one command at a time, in the order typed
            action = await outbox.get()
            what = describe_command(action.name, action.args)
            try:
                reply = await console.command(action.name, action.args)
                inbox.put_nowait(("said", f"{what}: {reply.describe()}"))
            except ConsoleError as exc:
                inbox.put_nowait(("said", f"{what}: {exc}"))
            outbox.task_done()

    async def watcher(console: TableConsole) -> None:
        async for kind, body in console.watch():
            inbox.put_nowait((kind, body))

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = stdin.fileno()
    async with TableConsole(target, watch=True, reconnect=True) as console:
        with _Terminal(stdin, stdout) as terminal:
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(signum, inbox.put_nowait, ("eof", None))
            try:
                loop.add_reader(fd, key_input)
            except PermissionError:  # a regular file: epoll cannot wait on it
                inbox.put_nowait(("keys", stdin.read()))
                inbox.put_nowait(("eof", None))
            tasks = [asyncio.create_task(sender(console)), asyncio.create_task(watcher(console))]
            view.connected = console.connected.is_set()
            try:
                terminal.show(view.lines(target), keys.prompt, message)
                while True:
                    kind, body = await inbox.get()
                    if kind == "eof":
                        break
                    if kind == "said":
                        message = body
                    elif kind == "keys":
                        quit_now = False
                        for action in keys.feed(body):
                            if action.kind == "quit":
                                quit_now = True
                                break
                            if action.kind == "command":
                                message = f"{describe_command(action.name, action.args)}: sent"
                                outbox.put_nowait(for_round(action, view.command_round))
                            elif action.text:
                                message = action.text
                        if quit_now:
                            break
                    news = view.apply(kind, body) if kind not in ("said", "keys") else []
                    terminal.show(view.lines(target), keys.prompt, message, news)
                # what was typed before the end is sent before the console ends
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(target.reply_timeout + 1):
                        await outbox.join()
                while not inbox.empty():
                    kind, body = inbox.get_nowait()
                    if kind == "said":
                        terminal.show(view.lines(target), keys.prompt, body)
            finally:
                with contextlib.suppress(ValueError, OSError):
                    loop.remove_reader(fd)
                for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    loop.remove_signal_handler(signum)
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
    return EXIT_OK


# -- one-shot commands ---------------------------------------------------------------------------


async def send_once(target: ConsoleTarget, name: str, args: dict[str, Any],
                    wait: float | None = None, out: TextIO | None = None) -> int:
    """Send one command and print the daemon's reply: 0 accepted, 1 refused, declined by the
    rules, or no reply in time."""
    out = out or sys.stdout
    what = describe_command(name, args)
    async with TableConsole(target) as console:
        try:
            reply = await console.command(name, args, wait=wait)
        except ConsoleError as exc:
            print(f"{what}: {exc}", file=out)
            return EXIT_REFUSED
    print(f"{what}: {reply.describe()}", file=out)
    return EXIT_OK if reply.accepted else EXIT_REFUSED


# -- the dealer the demos play -------------------------------------------------------------------


class AutoDealer:
    """Plays the dealer console of a table dealt to seats (its game's console part says
    ``seated``: Q Poker) for the demos: once a deal is complete, each player decides (Play
    with probability ``play_rate``, after ``think`` seconds), then the reveal — every command
    through :meth:`TableConsole.command`, as ``tabled console`` sends it. ``said`` receives a
    line per command that was not accepted."""

    def __init__(self, console: TableConsole, *, seed: int = 1, think: float = 0.0,
                 play_rate: float = 0.8, said: Callable[[str], None] | None = None) -> None:
        self.console = console
        self.view = RoundView(console.target.game)
        self.rng = random.Random(seed)
        self.think = think
        self.play_rate = play_rate
        self.said = said or (lambda _: None)
        self.rounds_played = 0
        #: The seats decided in the round being played, and whether the table went offline
        #: before it was revealed (the daemon that comes back resumes it: play on then).
        self._decided: set[int] = set()
        self._interrupted = False

    async def run(self) -> None:
        async for kind, body in self.console.watch():
            self.view.apply(kind, body)
            if (kind == "event" and body.get("type") == "round_start") or kind == "outcome":
                self._decided.clear()
                self._interrupted = False
            elif kind == "status" and body.get("state") == "online" and self._interrupted \
                    and self.view.phase == "revealed":
                self.view.phase = "deciding"  # back, with the round it had: finish it
            if self.view.phase == "deciding":  # the deal is complete
                await self._play()

    async def _play(self) -> None:
        view = self.view
        # the round whose deal is complete, named now: while the players think, the table
        # may end it (a dealer's card exposed) and begin the next, which these are not for
        named = {} if view.round_number is None else {"round": view.round_number}
        view.phase = "revealed"  # this round is ours to finish: never act on it twice
        self._interrupted = False
        for seat in sorted(view.seats):
            if seat in self._decided:
                continue
            if self.think:
                await asyncio.sleep(self.think * self.rng.uniform(0.5, 1.5))
            play = self.rng.random() < self.play_rate
            if not await self._send("decision", {"seat": seat, "play": play, **named}):
                self._interrupted = True
                return
            self._decided.add(seat)
        if self.think:
            await asyncio.sleep(self.think)
        if not await self._send("reveal", named):
            self._interrupted = True
            return
        self.rounds_played += 1

    async def _send(self, name: str, args: dict[str, Any]) -> bool:
        """Send until answered (AUTO_ATTEMPTS at most); False when the table is offline (not
        sent: the round is finished once the table is back)."""
        what = describe_command(name, args)
        for attempt in range(1, AUTO_ATTEMPTS + 1):
            try:
                reply = await self.console.command(name, args)
            except TableOffline as exc:
                self.said(f"{what}: {exc}")
                return False
            except ConsoleError as exc:  # no reply, or the connection went: try again (a
                # command that did arrive is then declined, as repeated or for another round:
                # it names its round, so it changes nothing)
                self.said(f"{what}: {exc}" + ("; again" if attempt < AUTO_ATTEMPTS else ""))
                await asyncio.sleep(1.0)
                continue
            if not reply.accepted:
                self.said(f"{what}: {reply.describe()}")
            return True
        return True
