"""Independent reference oracles for the three games, and the rule for comparing their records.

This package owns a second reading of docs/rules/, docs/contract.md and the project's decisions,
written without looking at ``games/baccarat/rules.py``, ``craps.py`` or ``qpoker.py``: each oracle
takes a list of event dicts and returns the outcome dicts the rules say. It must never import the
rules core (``tabled.games.table``); agreeing with it by construction would prove nothing.

The oracles model what the generators of :mod:`tests.oracle.streams` produce, the irregular events
included. Where the project's decisions leave a detail open (for instance the moment a count
violation voids a baccarat hand), an oracle raises :class:`OutOfScope` instead of guessing, and the
generators never produce that case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Record = dict[str, Any]

#: Top-level flags an outcome may carry; absent means false.
FLAGS = ("demo", "no_roll")


class OutOfScope(Exception):
    """A stream reached a case the oracle does not model (the generators never produce it)."""


def _subset_differences(path: str, expected: Any, actual: Any) -> list[str]:
    """Where ``expected`` is not contained in ``actual``: dicts may gain keys (docs/contract.md:
    fields may be added), everything else must be equal."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected an object {expected!r}, got {actual!r}"]
        found: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                found.append(f"{path}.{key}: missing (expected {value!r})")
            else:
                found.extend(_subset_differences(f"{path}.{key}", value, actual[key]))
        return found
    if expected != actual:
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []


def _is_bet(value: Any) -> bool:
    return isinstance(value, Mapping) and "result" in value


def _bet_differences(path: str, expected: Mapping[str, Any], actual: Any) -> list[str]:
    """One wager: ``result``, ``pays`` and ``moves_to`` always; ``unit`` where money depends on
    it (a win). The bet's ``article`` and ``void_reason`` are prose and are not compared."""
    if not _is_bet(actual):
        return [f"{path}: expected a bet {dict(expected)!r}, got {actual!r}"]
    found = []
    for key in ("result", "pays", "moves_to"):
        if expected.get(key) != actual.get(key):
            found.append(f"{path}.{key}: expected {expected.get(key)!r}, got {actual.get(key)!r}")
    if expected["result"] == "win" and expected.get("unit") != actual.get("unit"):
        found.append(f"{path}.unit: expected {expected.get('unit')!r}, got {actual.get('unit')!r}")
    return found


def _all_void(value: Any) -> bool:
    if _is_bet(value):
        return bool(value["result"] == "void")
    return isinstance(value, Mapping) and all(_all_void(v) for v in value.values())


def _bets_differences(path: str, expected: Mapping[str, Any], actual: Any) -> list[str]:
    """Every expected wager must be there and agree; an extra entry is allowed only when all its
    wagers are ``void`` (a Q Poker seat dealt cards without a bet, Art. 11.4: "its bets, if
    listed, are void")."""
    if not isinstance(actual, Mapping):
        return [f"{path}: expected an object, got {actual!r}"]
    found: list[str] = []
    for name, value in expected.items():
        where = f"{path}.{name}"
        if name not in actual:
            found.append(f"{where}: missing")
        elif _is_bet(value):
            found.extend(_bet_differences(where, value, actual[name]))
        else:
            found.extend(_bets_differences(where, value, actual[name]))
    found.extend(
        f"{path}.{name}: unexpected {actual[name]!r}"
        for name in actual
        if name not in expected and not _all_void(actual[name])
    )
    return found


def record_differences(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """How one actual outcome record departs from the oracle's.

    Compared: ``game``, ``round``, ``status``, ``article`` (when the oracle sets one), the flags
    ``demo``/``no_roll``, a non-empty ``void_reason`` on voids, ``result`` (the oracle's fields
    must be there and equal; a void's result holds only what the decisions pin down), and every
    wager (see :func:`_bet_differences`).
    """
    found = [
        f"{key}: expected {expected[key]!r}, got {actual.get(key)!r}"
        for key in ("game", "round", "status", "article")
        if key in expected and expected[key] != actual.get(key)
    ]
    found.extend(
        f"{flag}: expected {bool(expected.get(flag))}, got {actual.get(flag)!r}"
        for flag in FLAGS
        if bool(expected.get(flag)) != bool(actual.get(flag))
    )
    if expected["status"] == "void":
        reason = actual.get("void_reason")
        if not (isinstance(reason, str) and reason):
            found.append(f"void_reason: expected a reason, got {reason!r}")
    found.extend(_subset_differences("result", expected["result"], actual.get("result")))
    found.extend(_bets_differences("bets", expected["bets"], actual.get("bets")))
    return found


def stream_differences(
    expected: Sequence[Mapping[str, Any]], actual: Sequence[Mapping[str, Any]], limit: int = 10
) -> list[str]:
    """The first ``limit`` differences between two outcome streams, record by record, each
    prefixed with the record's position and the oracle's round number."""
    found: list[str] = []
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        found.extend(
            f"record {index} (round {want.get('round')}): {problem}"
            for problem in record_differences(want, got)
        )
        if len(found) >= limit:
            return found[:limit]
    if len(expected) != len(actual):
        found.append(f"the oracle has {len(expected)} outcomes, replay {len(actual)}")
    return found[:limit]
