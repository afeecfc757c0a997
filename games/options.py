"""The regulated options of each game (docs/rules/; Baccarat Art. 18): typed, validated, declared.

A table's options are chosen by the house with the regulator's approval. They are fixed for the
life of a table object: nothing in the rules core changes them, and ``declare()`` gives the form
the daemon logs at start and publishes in its birth record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any, ClassVar, Protocol

from tabled.games.errors import RulesError


class OptionError(RulesError):
    """An option that is unknown for the game or has a value the rules do not allow."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"option {key}: {reason}")
        self.key = key
        self.reason = reason


class GameOptions(Protocol):
    """Any game's options: a frozen dataclass its game declares (``GameDeclaration.options``)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def __hash__(self) -> int: ...


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


def build_options(cls: type[Any], values: Mapping[str, Any], *, text: bool = False,
                  game: str = "") -> GameOptions:
    """The typed options ``cls`` (a game's declared options) from ``values``: a config's
    ``[rules]`` table (each value of the option's own type; a bool is not an int) or, with
    ``text``, ``KEY=VALUE`` strings (``tabled replay --option``). Raises
    :class:`OptionErrors` naming every bad key: unknown, of the wrong type, or outside what the
    rules allow. The one parser of options."""
    game = game or cls.__name__
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
    made: GameOptions = cls(**typed)
    return made


def declare(options: GameOptions) -> dict[str, Any]:
    """The options as a plain mapping, for the start-up log line and the birth record."""
    return asdict(options)

