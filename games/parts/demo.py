"""What the demos, the simulated devices and the dealer console ask of a game: its ``demo`` and
``console`` parts.

This module owns the two protocols, as frozen dataclasses of plain data and pure functions that
a game fills in: :class:`DemoRecipe` (which device family and simulator a demo table of the game
gets, with what arguments and options, and how its rounds are dealt or thrown:
``tabled demo``, ``tabled floor``) and :class:`ConsoleVocabulary` (how a person watching the
table reads an outcome, and what the dealer console shows and plays of an open round:
``tabled console``, the demos' printed lines). It never starts a process, never imports the
simulators or the tools: the tools read these and do the work (a game's package imports only
the contract and tabled.games).

A game names them in its declaration's ``parts``::

    parts={"demo": "tabled.games.craps.demo:DEMO", "console": "tabled.games.craps.console:CONSOLE"}

and the tools load them with ``registry.part(name, "demo")`` / ``registry.part(name,
"console")``. A game without a ``demo`` part is not playable in the demos (``tabled demo``
says so); a game without a ``console`` part is shown by :data:`PLAIN` (the outcome's result as
JSON, no seats). The words a dealer may ``declare`` are the declaration's ``declarations``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class SimulatorRun:
    """One simulated device of a demo table, as a recipe's :attr:`DemoRecipe.simulator_args`
    receives it.

    ``seed``: the device's seed. ``pace``: its ``--pace``, as text (the tools format it).
    ``folder``: a directory of its own (its pseudo-terminal link or socket goes there).
    ``rounds``: how many rounds (or throws) the device plays, or None for as many as it can
    (a shoe dealing shoe after shoe). ``table``: the table's name on a floor (for a serial
    number that names it), None in ``tabled demo``. ``faults``: ``--fault`` specs to pass on."""

    seed: int
    pace: str
    folder: str
    rounds: int | None
    table: str | None = None
    faults: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DemoRecipe:
    """How the demos play one game (its ``demo`` part).

    The device:

    - ``family``: the device family of the table's ``[[devices]]`` (``tabled run``'s config);
      ``device_id`` that device's id at a demo table.
    - ``simulator_args(run)``: the arguments of ``tabled-sim`` (the simulator's name first)
      for one device (:class:`SimulatorRun`); the simulator prints ``name: value`` lines,
      ``url_line`` of them (1-based) giving what the family's ``open`` takes (the dice
      simulator prints its socket first, then the URL: 2).
    - ``options``: the table's ``[rules]`` at a demo table (the game's options, by name).
    - ``modes``: the device families that deal the game in a mode of their own, each with the
      device's word for that mode (a shuffler-dealer's ``qpoker`` and ``baccarat`` modes):
      ``tabled-sim shuffler --game G`` sets the mode G's recipe names.

    How its rounds go:

    - ``dealer``: a dealer console plays each round (the demos' automatic dealer decides for
      each seat, then reveals: the game's :class:`ConsoleVocabulary` must have ``seated``);
      the table then gets a console identity and a key.
    - ``deal``: a line the demos write to the simulator's standard input after each outcome
      (the dealer presses the machine's deal button), or None when the device plays on by
      itself. A floor table with a ``deal`` that gives no outcome for a while is dealt again.
    - ``halts``: fault codes after which the machine stops until the dealer clears it (the
      floor clears it and deals again when no outcome came).

    The floor (``tabled floor``):

    - ``short``: the prefix of its tables' names (``craps-1``); ``describes``: what the banner
      says its tables are.
    - ``pace_divisor``: the simulator's ``--pace`` is a round's pace divided by this (a hand of
      four to six cards: 5; a throw, which comes faster than a hand: 2).
    - ``script``: ``(low, high)`` when the device plays a script built before it starts (its
      length bounded to this), None when it plays for ever; ``script_unit``: what one step of
      the script takes, a ``"round"`` (the floor's pace) or a ``"device"`` message (the
      simulator's pace).
    - ``faults``: the faults of each table, by table index (cycling): ``(spec, unit)`` pairs,
      the spec's ``{n}`` filled with the simulator's count for a round number, ``unit`` how
      many of the simulator's counted things make a round (pulls, frames, reports, hands).
    """

    family: str
    device_id: str
    simulator_args: Callable[[SimulatorRun], list[str]]
    options: Mapping[str, Any] = field(default_factory=dict)
    url_line: int = 1
    dealer: bool = False
    deal: str | None = None
    halts: frozenset[str] = frozenset()
    short: str = ""
    describes: str = ""
    pace_divisor: float = 1.0
    script: tuple[int, int] | None = None
    script_unit: Literal["round", "device"] = "round"
    faults: tuple[tuple[tuple[str, float], ...], ...] = ()
    modes: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SeatedConsole:
    """A game dealt to seats and a dealer, whose players decide before the dealer's hand is
    revealed: the console shows each seat and counts the dealer's cards (never keeps them),
    the deal is complete at ``dealer_cards``, and a reveal before that (``early_reveal``) or
    with seats undecided (``undecided``, ``{seats}`` filled) needs the dealer's ``y``."""

    dealer_cards: int
    early_reveal: str
    undecided: str


@dataclass(frozen=True, slots=True)
class ConsoleVocabulary:
    """How the tools word a game (its ``console`` part).

    - ``headline(outcome)``: the one line a person reads first of a settled (not void)
      published outcome record (the demos, the console's ``last:`` line). It reads only the
      record, which carries a withheld card only once revealed.
    - ``round_word``: what a round is called in a void's line, padded to five (``"roll "``).
    - ``bets_by_seat``: the record's ``bets`` are by seat, then by bet (``--bets all``).
    - ``seated``: the game is dealt to seats and a dealer (:class:`SeatedConsole`), or None.
    """

    headline: Callable[[Mapping[str, Any]], str]
    round_word: str = "round"
    bets_by_seat: bool = False
    seated: SeatedConsole | None = None


def bet_result(bet: Mapping[str, Any] | None) -> str:
    """A bet's result as the lines show it: ``win 11:1``, ``lose``, ``-`` (no bet)."""
    if not bet:
        return "-"
    text = str(bet.get("result"))
    return f"{text} {bet['pays']}" if "pays" in bet else text


def _plain(outcome: Mapping[str, Any]) -> str:
    import json

    return f"round {outcome['round']:>4}  {json.dumps(outcome.get('result'), sort_keys=True)}"


#: The words of a game that declares no ``console`` part.
PLAIN = ConsoleVocabulary(headline=_plain)
