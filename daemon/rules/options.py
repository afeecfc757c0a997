"""The regulated options of each game (RULES.md; Baccarat Art. 18): typed, validated, declared.

A table's options are chosen by the house with the regulator's approval. They are fixed for the
life of a table object: nothing in the rules core changes them, and ``declare()`` gives the form
the daemon logs at start and publishes in its birth record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Final, Literal, TypeAlias

from tabled.daemon.rules.errors import RulesError

#: Art. 1: a baccarat shoe holds 6 to 12 decks (the one place these numbers are written).
MIN_DECKS: Final = 6
MAX_DECKS: Final = 12

BaccaratMethod: TypeAlias = Literal[1, 2]
Commission: TypeAlias = Literal["five_percent", "half_on_four"]
LastHand: TypeAlias = Literal["this", "one_more"]


class OptionError(RulesError):
    """An option that is unknown for the game or has a value the rules do not allow."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"option {key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True, slots=True)
class BaccaratOptions:
    """Art. 9 drawing method (which also picks the Art. 16 pay table), Art. 17 commission mode,
    Art. 3 last-hand rule, and the number of decks a shoe holds by default (Art. 1)."""

    method: BaccaratMethod = 1
    commission: Commission = "five_percent"
    last_hand: LastHand = "this"
    decks: int = 8

    def __post_init__(self) -> None:
        if self.method not in (1, 2):
            raise OptionError("method", f"{self.method!r} is not 1 or 2 (Art. 9)")
        if self.commission not in ("five_percent", "half_on_four"):
            raise OptionError(
                "commission", f"{self.commission!r} is not five_percent or half_on_four (Art. 17)"
            )
        if self.last_hand not in ("this", "one_more"):
            raise OptionError("last_hand", f"{self.last_hand!r} is not this or one_more (Art. 3)")
        if not (isinstance(self.decks, int) and MIN_DECKS <= self.decks <= MAX_DECKS):
            raise OptionError("decks", f"{self.decks!r} is not {MIN_DECKS} to {MAX_DECKS} "
                                       "(Art. 1)")


@dataclass(frozen=True, slots=True)
class CrapsOptions:
    """Reading R-C4: whether the Big bets (Art. 9-11) work on a come-out roll."""

    big_bets_on_come_out: bool = True


@dataclass(frozen=True, slots=True)
class QPokerOptions:
    """Art. 2: the number of player positions at the table (8 or more seats with the dealer's)."""

    positions: int = 7

    def __post_init__(self) -> None:
        if not 7 <= self.positions <= 20:
            raise OptionError(
                "positions", f"{self.positions!r} is not 7 to 20 (Art. 2: 8 or more seats)"
            )


GameOptions: TypeAlias = BaccaratOptions | CrapsOptions | QPokerOptions
OPTION_TYPES: dict[str, type[GameOptions]] = {
    "baccarat": BaccaratOptions,
    "craps": CrapsOptions,
    "qpoker": QPokerOptions,
}


class OptionErrors(OptionError):
    """Every problem of a set of options, each an :class:`OptionError` naming its key."""

    def __init__(self, errors: list[OptionError]) -> None:
        ValueError.__init__(self, "; ".join(str(e) for e in errors))
        self.key = errors[0].key
        self.reason = errors[0].reason
        self.errors = errors


def _from_text(key: str, raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        if raw.lower() in ("true", "yes", "1", "on"):
            return True
        if raw.lower() in ("false", "no", "0", "off"):
            return False
        raise OptionError(key, f"{raw!r} is not true or false")
    if isinstance(default, int):
        if not (raw.isascii() and raw.isdigit()):
            raise OptionError(key, f"{raw!r} is not an integer")
        return int(raw)
    return raw


def build_options(game: str, values: Mapping[str, Any], *, text: bool = False) -> GameOptions:
    """The game's typed options from ``values``: a config's ``[rules]`` table (each value of
    the option's own type; a bool is not an int) or, with ``text``, ``KEY=VALUE`` strings
    (``tabled replay --option``). Raises :class:`OptionErrors` naming every bad key: unknown,
    of the wrong type, or outside what the rules allow. The one parser of options."""
    cls = OPTION_TYPES[game]
    defaults = cls()
    known = {f.name for f in fields(cls)}
    typed: dict[str, Any] = {}
    errors: list[OptionError] = []
    for key, value in values.items():
        if key not in known:
            errors.append(OptionError(
                key, f"unknown for {game} (known: {', '.join(sorted(known))})"))
            continue
        default = getattr(defaults, key)
        try:
            if text:
                value = _from_text(key, str(value), default)
            elif type(value) is not type(default):
                raise OptionError(key, f"{value!r} is not a {type(default).__name__}")
            cls(**{key: value})  # each option's own range check (Art. 1, 2, 9, 17 ...)
        except OptionError as exc:
            errors.append(exc)
            continue
        typed[key] = value
    if errors:
        raise OptionErrors(errors)
    return cls(**typed)


def parse_options(game: str, raw: Mapping[str, str]) -> GameOptions:
    """Options from ``KEY=VALUE`` strings (``tabled replay --option``), or :class:`OptionError`."""
    return build_options(game, raw, text=True)


def declare(options: GameOptions) -> dict[str, Any]:
    """The options as a plain mapping, for the start-up log line and the birth record."""
    return asdict(options)
