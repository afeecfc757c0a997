"""Games as plugins: one declaration per game, found through the ``tabled.games`` entry points.

This module owns the list of installed games. Each game's package declares a
:class:`GameDeclaration` under the ``tabled.games`` entry-point group — the built-in games exactly
as an outside game would (pyproject.toml; ``examples/tabled-sicbo``) — and everything that needs
to know the games asks here: the config (which games exist, their options), the daemon (a fresh
table), ``tabled replay`` and ``tabled odds``, the contract's per-game checks, the pit (a game's
view, scoreboard and integrity rates), the demos (a game's devices and dealing recipe) and the
console (a game's vocabulary). It never names a game itself.

The declaration holds what is pure (the rules, options, odds, policy, and the game's part of the
contract: the fields and words its events need, its typed outcome record and that record's part
of the outcome schema); the parts other layers need (``pit``, ``integrity``, ``demo``,
``console``) are named as ``"module:attribute"`` and loaded only by the layer that asks
(:func:`part`), so the table service never loads the pit's view.
"""

from __future__ import annotations

import copy
import functools
import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from importlib import resources
from importlib.metadata import EntryPoint
from random import Random
from types import MappingProxyType
from typing import Any

from tabled.contract import outcome as contract_outcome
from tabled.contract.events import (
    Declare,
    Event,
    EventCheck,
    EventChecks,
    GameChecks,
    check_declared,
    require_fields,
)
from tabled.contract.limits import valid_id
from tabled.contract.outcome import GameRecord, OutcomeRecord
from tabled.contract.plugins import forget, plugins
from tabled.games.errors import RulesError
from tabled.games.odds.model import Odds
from tabled.games.options import GameOptions, build_options
from tabled.games.policy import GamePolicy
from tabled.games.table import Table

#: The entry-point group of games.
ENTRY_POINTS = "tabled.games"


@dataclass(frozen=True, slots=True)
class GameDeclaration:
    """One game's declaration.

    ``name`` is the contract's ``game`` (an id, docs/mqtt.md) and the config's ``[table] game``.
    ``options`` is the frozen dataclass of its regulated options (each field with its default;
    its ``__post_init__`` refuses a value the rules do not allow, naming the article);
    ``table(options)`` a fresh table (:class:`tabled.games.table.Table`), or its name as
    ``"module:attribute"``, loaded when the first table is made (so listing the games, as a
    command line's help does, loads no game's rules core). ``odds`` names
    (``"module:attribute"``, loaded only when asked: the table service never loads a game's
    combinatorics) its exact odds, ``f(options)`` or ``f(options, decks)`` returning an
    :class:`~tabled.games.odds.model.Odds` (``tabled odds``); ``odds_markdown``, a function of
    no argument returning the tables of its document under docs/rules/ (``tabled odds
    --markdown``). ``declarations``: the words a dealer may declare on the console (a
    ``declare`` event), which the pit compares with the outcome.
    ``required``: fields an event type must carry at this game beyond what docs/contract.md
    requires of every game (Q Poker: a ``card``'s ``seat``). ``checks``: the game's own
    checks of an event type, beyond those (each raises
    :class:`~tabled.contract.events.EventError`). ``dice``: how many dice its ``roll`` has
    (craps: 2), stated as data so that its streams are read by a decoder that checks it as it
    decodes (:class:`~tabled.contract.events.GameChecks`); None for a game without dice or
    one that takes the contract's two or more. ``record``: its typed outcome record, a
    :class:`~tabled.contract.outcome.GameRecord` tagged with ``name`` (what
    :func:`decode_outcome` gives for its records), and ``schema`` its part of the outcome JSON
    schema as ``"package:resource"`` (package data: the ``properties``, ``if``/``then`` and
    ``$defs`` a record of this game has beyond the envelope, :func:`outcome_schema`).
    ``option_values``: each option's values as a command line's help says them
    (``{"method": "1|2"}``); ``odds_help``: what ``tabled odds`` computes of it, where that
    needs saying (``"Baccarat: the first hand of a full shoe"``). ``parts``: the other layers'
    parts, by name, as ``"module:attribute"`` (loaded with :func:`part`).
    """

    name: str
    title: str
    summary: str
    options: type[Any]
    table: Callable[[Any], Table] | str
    odds: str
    odds_markdown: str | None = None
    declarations: tuple[str, ...] = ()
    required: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    checks: Mapping[str, EventCheck] = field(default_factory=dict)
    dice: int | None = None
    record: type[GameRecord] | None = None
    schema: str | None = None
    option_values: Mapping[str, str] = field(default_factory=dict)
    odds_help: str = ""
    parts: Mapping[str, str] = field(default_factory=dict)
    #: Names (``"module:attribute"``, loaded only when asked: :func:`stream_maker`) the
    #: function ``f(rng, rounds)`` giving a valid event stream of the game under its default
    #: options, ``rounds`` rounds all closed by its end, as JSON Lines without their newlines,
    #: made only with ``rng`` (the same seed, the same lines): what the games conformance kit
    #: plays (``tabled conformance --game``, docs/games.md).
    streams: str | None = None


class UnknownGame(RulesError, LookupError):
    """No installed game has that name."""


class BadGame(RulesError):
    """An installed entry point of ``tabled.games`` is not a usable game declaration."""


@functools.cache
def _entries() -> Mapping[str, EntryPoint]:
    """The ``tabled.games`` entry points by name (:mod:`tabled.contract.plugins` reads the
    installed distributions once)."""
    return MappingProxyType({entry.name: entry for entry in plugins(ENTRY_POINTS)})


def game_names() -> list[str]:
    """The installed games' names, without loading them (for a command line's choices)."""
    return sorted(_entries())


@functools.cache
def games() -> Mapping[str, GameDeclaration]:
    """Every installed game by name, loaded once from the ``tabled.games`` entry points."""
    return MappingProxyType({name: game(name) for name in game_names()})


@functools.cache
def game(name: str) -> GameDeclaration:
    """The declaration of the installed game ``name`` (loading that game only), or
    :class:`UnknownGame`."""
    entry = _entries().get(name)
    if entry is None:
        raise UnknownGame(f"unknown game {name!r} (known: {', '.join(game_names())})")
    try:
        declared = entry.load()
    except Exception as exc:  # a broken plugin names itself, and stops nothing else
        raise BadGame(f"game {entry.name!r} ({entry.value}) does not load: "
                      f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(declared, GameDeclaration):
        raise BadGame(f"game {entry.name!r} ({entry.value}) is a "
                      f"{type(declared).__name__}, not a GameDeclaration")
    if declared.name != entry.name or not valid_id(declared.name):
        raise BadGame(f"game {entry.name!r} ({entry.value}) declares the name "
                      f"{declared.name!r}: it must be the entry point's, an id")
    if declared.record is not None and declared.record.__struct_config__.tag != entry.name:
        raise BadGame(f"game {entry.name!r} ({entry.value}) declares the record "
                      f"{declared.record.__name__}, which is not tagged {entry.name!r}")
    bad_words = [word for word in declared.declarations if not valid_id(word)]
    if bad_words:
        raise BadGame(f"game {entry.name!r} ({entry.value}) declares the words "
                      f"{bad_words!r}: a declared word is an id")
    return declared


def reload() -> None:
    """Forget what was loaded: the next question finds the installed games again (a test that
    installs a game, a process that installed one meanwhile)."""
    forget()
    _entries.cache_clear()
    games.cache_clear()
    game.cache_clear()
    declared_words.cache_clear()
    _load.cache_clear()
    event_checks.cache_clear()
    records.cache_clear()
    _schema_part.cache_clear()


def part(name: str, which: str) -> Any | None:
    """Game ``name``'s part ``which`` (``"pit"``, ``"integrity"``, ``"demo"``, ``"console"`` …),
    loaded from the module its declaration names; None when the game declares none."""
    target = game(name).parts.get(which)
    if target is None:
        return None
    return _load(target)


def stream_maker(name: str) -> Callable[[Random, int], list[str]] | None:
    """Game ``name``'s event streams (``GameDeclaration.streams``), or None if it declares
    none; :class:`BadGame` when they do not load."""
    target = game(name).streams
    if target is None:
        return None
    maker: Callable[[Random, int], list[str]] = _load(target)
    return maker


@functools.cache
def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise BadGame(f"{target} does not load: {type(exc).__name__}: {exc}") from exc


# -- what a game makes, by name ---------------------------------------------------------------


def option_type(name: str) -> type[Any]:
    """The options dataclass game ``name`` declares."""
    return game(name).options


def options_of(name: str, values: Mapping[str, Any], *, text: bool = False) -> GameOptions:
    """Game ``name``'s typed options from a config's ``[rules]`` table (or, with ``text``,
    ``KEY=VALUE`` strings); :class:`~tabled.games.options.OptionErrors` naming every bad key."""
    return build_options(option_type(name), values, text=text, game=name)


def parse_options(name: str, raw: Mapping[str, str]) -> GameOptions:
    """Options from ``KEY=VALUE`` strings (``tabled replay --option``), or
    :class:`~tabled.games.options.OptionError`."""
    return options_of(name, raw, text=True)


def make_table(name: str, options: GameOptions | Mapping[str, str] | None = None) -> Table:
    """A fresh table for game ``name`` with typed options, or options parsed from
    ``KEY=VALUE``. :class:`UnknownGame` (a ``LookupError``) for a game not installed,
    :class:`ValueError` for options of another game."""
    declared = game(name)
    if options is None or isinstance(options, Mapping):
        options = parse_options(name, options or {})
    if not isinstance(options, declared.options):
        raise ValueError(f"{type(options).__name__} are not options of {name}")
    make = declared.table if callable(declared.table) else _load(declared.table)
    table: Table = make(options)
    return table


def game_policy(name: str) -> GamePolicy:
    """The demands of game ``name`` on the table service (which devices, what a loss means)."""
    return make_table(name).policy


def odds(name: str, options: GameOptions | None = None, decks: int | None = None) -> Odds:
    """The exact odds of game ``name`` under ``options`` (the defaults when ``None``).

    ``decks`` is for a game dealt from a shoe (options with ``decks``): the shoe size,
    overriding ``options.decks``; the returned ``options`` carry the size used.
    :class:`ValueError` for an unknown game, options of another game, or ``decks`` for a game
    without a shoe (:class:`~tabled.games.options.OptionError`, a ``ValueError``, for decks out
    of range).
    """
    try:
        declared = game(name)
    except UnknownGame as exc:
        raise ValueError(str(exc)) from None
    if options is None:
        options = declared.options()
    elif not isinstance(options, declared.options):
        raise ValueError(f"{type(options).__name__} are not options of {name}")
    compute = _load(declared.odds)
    if decks is None:
        result: Odds = compute(options)
        return result
    if "decks" not in {f.name for f in dataclass_fields(declared.options)}:
        raise ValueError(f"{name} has no shoe: decks is for a game dealt from a shoe only")
    result = compute(options, decks)
    return result


def odds_markdown(name: str) -> str | None:
    """The tables of game ``name``'s document under docs/rules/, or None if it declares none."""
    target = game(name).odds_markdown
    if target is None:
        return None
    text: str = _load(target)()
    return text


# -- the game's part of the contract ----------------------------------------------------------


@functools.cache
def event_checks(name: str) -> EventChecks:
    """Game ``name``'s checks of events beyond the contract, by event type (what
    :func:`tabled.contract.events.read_events` and ``parse_line`` take): the fields its
    declaration's ``required`` names, a ``declare`` of a word some installed game declares
    (:func:`_declared`), the game's own ``checks`` and its shape (``dice``: a
    :class:`~tabled.contract.events.GameChecks`). :class:`UnknownGame` for a game not
    installed."""
    declared = game(name)
    checks: dict[str, list[EventCheck]] = {}
    for etype, names in declared.required.items():
        checks.setdefault(etype, []).append(
            functools.partial(require_fields, names=names, game=name))
    checks.setdefault(Declare.TYPE, []).append(_declared)
    for etype, check in declared.checks.items():
        checks.setdefault(etype, []).append(check)
    return GameChecks({etype: found[0] if len(found) == 1 else _all(tuple(found))
                       for etype, found in checks.items()}, dice=declared.dice)


def check_event(event: Event, name: str) -> None:
    """Raise :class:`~tabled.contract.events.EventError` if game ``name`` refuses ``event``
    (:func:`event_checks`): the one check ``tabled replay`` and the daemon's runtime both make
    before an event reaches the rules, so that both refuse the same events."""
    check = event_checks(name).get(event.TYPE)
    if check is not None:
        check(event)


def _declared(event: Event) -> None:
    """A ``declare`` of one of the words the installed games declare. A word of another game
    than the table's is not malformed: it is journaled and published like any declaration, and
    the pit's integrity monitors find the dealer's call wrong (``result_mismatch``, "not a
    result of baccarat"), so the record keeps the console's mistake, as it always has."""
    if isinstance(event, Declare):
        check_declared(event, declared_words())


@functools.cache
def declared_words() -> frozenset[str]:
    """Every word an installed game declares (loaded when the first ``declare`` is checked)."""
    return frozenset(word for declared in games().values() for word in declared.declarations)


def _all(checks: tuple[EventCheck, ...]) -> EventCheck:
    def check(event: Event) -> None:
        for one in checks:
            one(event)
    return check


@functools.cache
def records() -> Mapping[str, type[GameRecord]]:
    """Each installed game's typed outcome record, by name (the games that declare one)."""
    return MappingProxyType({name: declared.record for name, declared in games().items()
                             if declared.record is not None})


def decode_outcome(data: bytes | str | Mapping[str, Any]) -> OutcomeRecord:
    """:func:`tabled.contract.outcome.decode_outcome` with the installed games' records: an
    installed game's record decodes typed, another game's (an id) to its envelope only
    (:class:`~tabled.contract.outcome.UntypedRecord`)."""
    return contract_outcome.decode_outcome(data, records())


def outcome_schema(names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The outcome record's JSON schema: the contract's envelope
    (``tabled.contract.schemas/outcome.schema.json``) with each installed game's part (or of
    the games ``names``), a branch ``if game is NAME then …`` each, their ``$defs`` merged."""
    text = resources.files("tabled.contract.schemas").joinpath("outcome.schema.json")
    whole: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    defs = whole.setdefault("$defs", {})
    branches = whole.setdefault("allOf", [])
    for name in (names if names is not None else tuple(games())):
        part_ = _schema_part(name)
        if part_ is None:
            continue
        own = dict(copy.deepcopy(part_))
        for key, value in own.pop("$defs", {}).items():
            if key in defs and defs[key] != value:
                raise BadGame(f"game {name!r}: its outcome schema's $defs {key!r} is another "
                              "game's or the envelope's")
            defs[key] = value
        for key in ("$schema", "$id", "title", "description", "$comment"):
            own.pop(key, None)
        branches.append({"if": {"properties": {"game": {"const": name}}}, "then": own})
    return whole


@functools.cache
def _schema_part(name: str) -> Mapping[str, Any] | None:
    target = game(name).schema
    if target is None:
        return None
    package, _, resource = target.partition(":")
    try:
        text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
        loaded: dict[str, Any] = json.loads(text)
    except (OSError, ImportError, ValueError) as exc:
        raise BadGame(f"game {name!r}: its outcome schema {target} does not load: "
                      f"{type(exc).__name__}: {exc}") from exc
    return loaded
