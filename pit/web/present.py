"""How the page draws what the model holds: cards, dice, times, recalled rounds.

Every word here that a page shows is marked ``N_`` (:mod:`tabled.pit.i18n`): the page translates
it where it shows it (``{{ _(word) }}``), so ``make messages`` finds it for the catalogue.

Pure functions from the model's dicts to plain values the templates lay out; no I/O, no
request, no clock but the ``now`` a caller passes. A game's panel is drawn by the game's pit
part (its ``view`` and its templates, games/parts/pit.py), never here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tabled.pit.i18n import N_

SUITS = {"S": ("♠", False), "H": ("♥", True), "C": ("♣", False), "D": ("♦", True)}
RANKS = {"T": "10"}

#: Where a die's pips go on its 20×20 face.
PIPS: dict[int, tuple[tuple[int, int], ...]] = {
    1: ((10, 10),),
    2: ((6, 6), (14, 14)),
    3: ((5, 5), (10, 10), (15, 15)),
    4: ((6, 6), (14, 6), (6, 14), (14, 14)),
    5: ((5, 5), (15, 5), (10, 10), (5, 15), (15, 15)),
    6: ((6, 5), (14, 5), (6, 10), (14, 10), (6, 15), (14, 15)),
}


@dataclass(frozen=True, slots=True)
class Card:
    code: str
    rank: str
    suit: str
    red: bool


def card(code: Any) -> Card:
    """A contract card code (``TD``) as the page shows it (``10♦``, red)."""
    text = str(code)
    if len(text) != 2 or text[1] not in SUITS:
        return Card(text, text, "", False)
    symbol, red = SUITS[text[1]]
    return Card(text, RANKS.get(text[0], text[0]), symbol, red)


def cards(codes: Iterable[Any] | None) -> list[Card]:
    return [card(c) for c in codes or ()]


# -- times --------------------------------------------------------------------------------------


def clock(ts: float | None) -> str:
    """``HH:MM:SS`` in the pit server's local time."""
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S")


def stamp(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def iso(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


#: How long ago, as the page writes it and its script keeps it current (base.html hands the
#: script these four, translated): under a minute, an hour, a day, and beyond.
AGO = (N_("%(s)ss"), N_("%(m)sm %(s)ss"), N_("%(h)sh %(m)sm"), N_("%(d)sd %(h)sh"))
#: How long to wait (the sign-in throttle): under a minute, an hour, and beyond.
WAIT = (N_("%(s)s s"), N_("%(m)s min %(s)s s"), N_("%(h)s h %(m)s min"))


def _same(message: str) -> str:
    return message


def ago(ts: float | None, now: float, gettext: Callable[[str], str] = _same) -> str:
    """``42s``, ``7m 05s``, ``3h 05m``, ``2d 4h``, in ``gettext``'s language."""
    if ts is None:
        return ""
    s = max(0, int(now - ts))
    if s < 60:
        return gettext(AGO[0]) % {"s": s}
    if s < 3600:
        return gettext(AGO[1]) % {"m": s // 60, "s": f"{s % 60:02d}"}
    if s < 86400:
        return gettext(AGO[2]) % {"h": s // 3600, "m": f"{s % 3600 // 60:02d}"}
    return gettext(AGO[3]) % {"d": s // 86400, "h": s % 86400 // 3600}


def duration(seconds: int, gettext: Callable[[str], str] = _same) -> str:
    """``45 s``, ``4 min 10 s``, ``1 h 05 min``: how long to wait, in ``gettext``'s
    language."""
    s = max(0, int(seconds))
    if s < 60:
        return gettext(WAIT[0]) % {"s": s}
    if s < 3600:
        return gettext(WAIT[1]) % {"m": s // 60, "s": f"{s % 60:02d}"}
    return gettext(WAIT[2]) % {"h": s // 3600, "m": f"{s % 3600 // 60:02d}"}


# -- recall -------------------------------------------------------------------------------------


def event_line(event: Mapping[str, Any], gettext: Callable[[str], str] = _same) -> str:
    """One event of a recalled round, in words (its cards are drawn beside it), its words
    through ``gettext`` (the page's language; the values stay as recorded)."""
    kind = gettext(word(event.get("type")))
    parts = []
    for key in ("seat", "decks", "dice", "play", "reason", "code", "detail", "count"):
        if key in event and event[key] is not None:
            value = event[key]  # a word of the record (seat "dealer") in words too
            shown = gettext(word(value)) if isinstance(value, str) else value
            parts.append(f"{gettext(key)} {shown}")
    if event.get("face_up") is False:
        parts.append(gettext(N_("face down")))
    return f"{kind} " + ", ".join(parts) if parts else kind


def event_cards(event: Mapping[str, Any]) -> list[Card]:
    if "cards" in event and isinstance(event["cards"], list):
        return cards(event["cards"])
    if event.get("card"):
        return [card(event["card"])]
    return []


def settlement(bets: Mapping[str, Any] | None) -> list[tuple[str, str, str | None]]:
    """``(bet, result, pays)`` rows, nested per-seat bets flattened to ``seat 3 dobo``."""
    rows: list[tuple[str, str, str | None]] = []
    for name, value in (bets or {}).items():
        if not isinstance(value, Mapping):
            continue
        if "result" in value:
            rows.append((str(name), str(value.get("result")), value.get("pays")))
        else:
            for sub, inner in value.items():
                if isinstance(inner, Mapping):
                    rows.append((f"seat {name} {sub}", str(inner.get("result")),
                                 inner.get("pays")))
    return rows


def worst_first(alerts: Iterable[Any]) -> list[Any]:
    order = {"critical": 0, "major": 1, "minor": 2, "info": 3}
    state = {"open": 0, "cleared": 1, "acknowledged": 2, "closed": 3}
    return sorted(alerts, key=lambda a: (state.get(a.state, 9), order.get(a.severity, 9),
                                         -a.id))


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


#: The record's words a page shows, marked for the catalogue; the page shows
#: ``_(word|replace('_', ' '))`` (:func:`word`): a table's and a device's state, an alert's
#: severity, state and kind, an audit action, a sign-in's action and reason, a bet's result.
WORDS = (
    N_("unknown"), N_("online"), N_("degraded"), N_("offline"),
    N_("starting"), N_("waiting"), N_("connecting"), N_("connected"), N_("lost"),
    N_("unavailable"), N_("stopped"),
    N_("critical"), N_("major"), N_("minor"), N_("info"),
    N_("open"), N_("acknowledged"), N_("cleared"), N_("closed"), N_("all"),
    N_("silent"), N_("device lost"), N_("device unavailable"), N_("wrong device"),
    N_("seq gap"), N_("seq conflict"), N_("fault"), N_("notice"), N_("void"),
    N_("command rejected"), N_("link errors"), N_("journal failure"), N_("event not applied"),
    N_("shuffler jam"), N_("shuffler failure"), N_("shuffler door open"), N_("deck count"),
    N_("card exposed"), N_("unreadable card"), N_("shoe empty"), N_("shoe sensor dirty"),
    N_("sensor fault"), N_("cocked die"), N_("rules error"), N_("integrity"),
    N_("raised"), N_("acknowledge"), N_("close"), N_("clear"), N_("repeated"),
    N_("refused:acknowledge"), N_("refused:close"), N_("escalated"),
    N_("signed in"), N_("failed"), N_("throttled"), N_("signed out"), N_("session ended"),
    N_("unknown user"), N_("bad password"), N_("expired"), N_("idle"), N_("user removed"),
    N_("replaced"), N_("password changed"),
    N_("complete"), N_("win"), N_("lose"), N_("push"), N_("off"), N_("fold"), N_("active"),
)


#: Event types and fields of a recalled round (:func:`event_line`), marked for the catalogue
#: (a game marks its own words, its bets' names among them, in its pit part's module).
EVENT_WORDS = (
    N_("shoe start"), N_("burn"), N_("cut card"), N_("demo"), N_("card"), N_("round start"),
    N_("hand"), N_("decision"), N_("reveal"), N_("roll"), N_("no roll"), N_("withheld"),
    N_("declare"), N_("outcome"),
    N_("seat"), N_("decks"), N_("dice"), N_("play"), N_("reason"), N_("code"), N_("detail"),
    N_("count"),
    N_("seat %(n)s %(bet)s"), N_("supervisor"), N_("viewer"),
)
_NUMBERED = re.compile(r"^(?P<base>[a-z_]*?)_?(?P<n>\d+)$")
_SEAT_BET = re.compile(r"^seat (?P<n>\S+) (?P<bet>\S+)$")


def bet(name: Any, gettext: Callable[[str], str] = _same) -> str:
    """A bet's name (``come_odds_4``, ``big6``, ``seat 3 dobo``) in words through
    ``gettext``."""
    text = str(name)
    seat = _SEAT_BET.match(text)
    if seat:
        return gettext("seat %(n)s %(bet)s") % {"n": seat["n"], "bet": bet(seat["bet"], gettext)}
    numbered = _NUMBERED.match(text)
    if numbered and numbered["base"]:
        message = _bet_word(numbered["base"]) + " %(n)s"  # a marked msgid: "come odds %(n)s"
        return gettext(message) % {"n": numbered["n"]}
    return gettext(_bet_word(text))


def _bet_word(name: str) -> str:
    """A bet's msgid: its name in words, ``dont`` spelled ``don't``."""
    return re.sub(r"\bdont\b", "don't", word(name))


def word(value: Any) -> str:
    """A word of the record as its msgid: ``device_lost`` → ``device lost``."""
    return str(value).replace("_", " ")
