"""The rate monitors, on outcome records: ``dice`` (each die's faces) and ``frequency`` (the
rates of ``tabled odds``: baccarat winners, naturals and pairs; craps totals; Q Poker hand
classes and the dealer's qualifying rate). What a game's record shows (its dice, its rates) is
read by the game's integrity part (:mod:`tabled.games.parts.integrity`); this module names no
game.

Each rate is a pair of restarting Bernoulli CUSUMs (:class:`~.stats.Cusums`), one for "more
often", one for "less often" (a die's faces: "more often" only, since a loaded die shows some
face more often). O(statistics) per outcome; nothing is recomputed over history. Pure.
"""

from __future__ import annotations

from typing import Any

from tabled.contract.outcome import OutcomeRecord
from tabled.pit.integrity.calibration import FACES, LOADED_FACE, Calibration, FrequencyGroup
from tabled.pit.integrity.findings import Finding, finding
from tabled.pit.integrity.stats import Alarm, Cusums

_FACE_NAMES = ("ones", "twos", "threes", "fours", "fives", "sixes")


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
    """``dice``: for each die of the game's throw and each face, a CUSUM for "this face comes
    up more often" (tuned to a face at 1/4). A round is a throw the game's part reads
    (``throw``); no-rolls and voids are not throws."""

    def __init__(self, calibration: Calibration, table: str = "") -> None:
        self.calibration = calibration
        self.table = table
        fair, loaded = 1.0 / FACES, LOADED_FACE
        part = calibration.part
        assert part.throw is not None
        self._throw = part.throw
        self.dice = tuple(Cusums([f"die {d} face {f}" for f in range(1, FACES + 1)],
                                 [fair] * FACES, [loaded] * FACES, calibration.dice_h)
                          for d in range(1, part.dice + 1))

    def outcome(self, record: OutcomeRecord, round_no: int | None) -> list[Finding]:
        dice = self._throw(record)
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


class FrequencyMonitor:
    """``frequency``: every rate of ``tabled odds`` the game's part names, each a CUSUM up and
    one down, tuned to shifts of equal evidence (:data:`~.calibration.DESIGN_DIVERGENCE`); the
    part classifies each record (``observe``)."""

    def __init__(self, calibration: Calibration, table: str = "") -> None:
        self.calibration = calibration
        self.table = table
        self.groups: list[tuple[FrequencyGroup, Cusums, Cusums]] = [
            (group, Cusums(group.names, group.p0, group.up, group.h),
             Cusums(group.names, group.p0, group.down, group.h))
            for group in calibration.frequency]
        self._extract = calibration.part.observe

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
        rate = group.rates[alarm.index]
        spoken = rate.spoken
        subject = f"{name if rate.subject is None else rate.subject} " \
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
