"""The rate monitors, on outcome records: ``dice`` (each die's faces) and ``frequency`` (the
rates of ``tabled odds``: baccarat winners, naturals and pairs; craps totals; Q Poker hand
classes and the dealer's qualifying rate).

Each rate is a pair of restarting Bernoulli CUSUMs (:class:`~.stats.Cusums`), one for "more
often", one for "less often" (a die's faces: "more often" only, since a loaded die shows some
face more often). O(statistics) per outcome; nothing is recomputed over history. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.games.baccarat.record import BaccaratOutcome
from tabled.games.craps.record import CrapsOutcome
from tabled.games.qpoker.record import QPokerOutcome
from tabled.pit.integrity.calibration import LOADED_FACE, Calibration, FrequencyGroup
from tabled.pit.integrity.findings import Finding, finding
from tabled.pit.integrity.stats import Alarm, Cusums

#: One observation: the index of the one category that occurred (one-hot), or whether each
#: statistic's event occurred.
Observation = int | Sequence[bool]

_FACE_NAMES = ("ones", "twos", "threes", "fours", "fives", "sixes")
#: Rates as a sentence names them.
_SPOKEN: Mapping[str, str] = {
    "banker": "Banker wins", "player": "Player wins", "tie": "ties", "natural": "naturals",
    "player_pair": "Player pairs", "banker_pair": "Banker pairs",
    "straight_flush": "straight flushes", "three_of_a_kind": "three of a kinds",
    "straight": "straights", "flush": "flushes", "pair": "pairs", "high_card": "high cards",
    "dealer_qualifies": "rounds where the dealer qualifies",
}
_CLASS_INDEX = {name: i for i, name in enumerate(
    ("straight_flush", "three_of_a_kind", "straight", "flush", "pair", "high_card"))}
_WINNERS = ("banker", "player", "tie")


def percent(p: float) -> str:
    return f"{100 * p:.2f} %"


def _budget_text(calibration: Calibration) -> str:
    c = calibration
    return (f"{c.settings.false_alarms_per_10k_hours:g} false alarm per 10,000 table-hours "
            f"at {c.pace.assumed_pace:g} rounds an hour, shared by {c.statistics} statistics")


def _cusum_evidence(cusums: Cusums, alarm: Alarm, calibration: Calibration,
                    observation: str) -> dict[str, Any]:
    i = alarm.index
    return {"observations": alarm.observations, "observed": observation,
            "count": alarm.hits, "expected": round(cusums.p0[i] * alarm.observations, 1),
            "p0": cusums.p0[i], "p1": cusums.p1[i], "cusum": round(alarm.statistic, 3),
            "threshold": round(cusums.h, 3),
            "false_alarms_per_10k_hours": calibration.settings.false_alarms_per_10k_hours,
            "statistics": calibration.statistics}


class DiceMonitor:
    """``dice``: for each die and face, a CUSUM for "this face comes up more often" (tuned to a
    face at 1/4). A round is a craps outcome with dice; no-rolls and voids are not throws."""

    def __init__(self, calibration: Calibration, table: str = "") -> None:
        self.calibration = calibration
        self.table = table
        fair, loaded = 1.0 / 6.0, LOADED_FACE
        self.dice = tuple(Cusums([f"die {d} face {f}" for f in range(1, 7)], [fair] * 6,
                                 [loaded] * 6, calibration.dice_h) for d in (1, 2))

    def outcome(self, record: OutcomeRecord, round_no: int | None) -> list[Finding]:
        if not isinstance(record, CrapsOutcome) or record.status != "complete":
            return []
        dice = record.result.dice
        if dice is None:
            return []
        found: list[Finding] = []
        for die, (face, cusums) in enumerate(zip(dice, self.dice, strict=True), 1):
            for alarm in cusums.observe_one(face - 1):
                shown = alarm.index + 1
                evidence = _cusum_evidence(cusums, alarm, self.calibration, "rolls")
                found.append(finding(
                    "dice", self.table, round_no, f"die {die} face {shown}",
                    f"die {die} shows {shown} too often: {alarm.hits} "
                    f"{_FACE_NAMES[shown - 1]} in the last {alarm.observations} rolls, "
                    f"{evidence['expected']:g} expected for a fair die; the evidence "
                    f"({alarm.statistic:.1f}) reached its threshold ({cusums.h:.1f}: "
                    f"{_budget_text(self.calibration)})",
                    die=die, face=shown, **evidence))
        return found


def _baccarat(record: OutcomeRecord) -> list[list[Observation]] | None:
    if not isinstance(record, BaccaratOutcome) or record.status != "complete" \
            or record.demo is True:
        return None  # a demonstration hand settles nothing (Art. 2.2): not counted
    result = record.result
    winner = result.winner
    if winner not in _WINNERS:
        return None
    pairs = [_pair(result.player_cards), _pair(result.banker_cards)]
    return [[(winner == "banker", winner == "player", winner == "tie",
              bool(result.natural), *pairs)]]


def _pair(cards: Sequence[str]) -> bool:
    return len(cards) >= 2 and cards[0][:1] == cards[1][:1]


def _craps(record: OutcomeRecord) -> list[list[Observation]] | None:
    if not isinstance(record, CrapsOutcome) or record.status != "complete":
        return None
    total = record.result.total
    if total is None or record.no_roll is True:
        return None
    return [[total - 2]]


def _qpoker(record: OutcomeRecord) -> list[list[Observation]] | None:
    if not isinstance(record, QPokerOutcome) or record.status != "complete":
        return None
    result = record.result
    dealer = result.dealer
    hands: list[Observation] = []
    # every hand dealt is a random three cards, a void seat's too (Art. 11.4: no bet, still
    # dealt); the dealer's last
    for seat in result.seats.values():
        index = _CLASS_INDEX.get(str(seat.hand))
        if index is not None:
            hands.append(index)
    index = _CLASS_INDEX.get(str(dealer.hand))
    if index is not None:
        hands.append(index)
    qualifies = dealer.qualifies
    return [hands, [(qualifies,)] if isinstance(qualifies, bool) else []]


_EXTRACT: Mapping[str, Callable[[OutcomeRecord], list[list[Observation]] | None]] = {
    "baccarat": _baccarat, "craps": _craps, "qpoker": _qpoker,
}


class FrequencyMonitor:
    """``frequency``: every rate of ``tabled odds`` for the game, each a CUSUM up and one down,
    tuned to shifts of equal evidence (:data:`~.calibration.DESIGN_DIVERGENCE`)."""

    def __init__(self, calibration: Calibration, table: str = "") -> None:
        self.calibration = calibration
        self.table = table
        self.groups: list[tuple[FrequencyGroup, Cusums, Cusums]] = [
            (group, Cusums(group.names, group.p0, group.up, group.h),
             Cusums(group.names, group.p0, group.down, group.h))
            for group in calibration.frequency]
        self._extract = _EXTRACT[calibration.game]

    def outcome(self, record: OutcomeRecord, round_no: int | None) -> list[Finding]:
        observations = self._extract(record)
        if observations is None:
            return []
        found: list[Finding] = []
        for (group, up, down), seen in zip(self.groups, observations, strict=True):
            for observation in seen:
                for cusums, more in ((up, True), (down, False)):
                    alarms = (cusums.observe_one(observation) if isinstance(observation, int)
                              else cusums.observe(observation))
                    for alarm in alarms:
                        found.append(self._finding(group, cusums, alarm, more, round_no))
        return found

    def _finding(self, group: FrequencyGroup, cusums: Cusums, alarm: Alarm, more: bool,
                 round_no: int | None) -> Finding:
        name = group.names[alarm.index]
        # craps observes totals (named by their number), the card games named classes
        totals = name.isdigit()
        spoken = f"totals of {name}" if totals else _SPOKEN[name]
        subject = f"{'total ' + name if totals else name} " \
                  f"{'up' if more else 'down'}"
        what = f"{group.observation}s"
        evidence = _cusum_evidence(cusums, alarm, self.calibration, what)
        p0 = cusums.p0[alarm.index]
        return finding(
            "frequency", self.table, round_no, subject,
            f"{spoken} {'more' if more else 'less'} often than the exact odds: "
            f"{alarm.hits} in the last {alarm.observations} {what}, "
            f"{evidence['expected']:g} expected at {percent(p0)} (tabled odds); the evidence "
            f"({alarm.statistic:.1f}) reached its threshold ({cusums.h:.1f}: "
            f"{_budget_text(self.calibration)})",
            statistic=name, direction="up" if more else "down", **evidence)

    def reset(self) -> None:
        for _, up, down in self.groups:
            up.reset()
            down.reset()
