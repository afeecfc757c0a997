"""The published outcomes against what the devices really dealt and threw: their simulators'
ledgers (docs/protocols/ledger.md).

Owns the one comparison that the fault campaigns (``tests/campaigns/``) and the end-to-end
tests (``tests/integration/test_outcomes_match_the_device.py``) share. A replay of the
*published* events is self-consistent, so it cannot see a card dealt into the wrong round or a
throw that never reached the daemon (issue 16, items 1 and 9); the ledger is written by the
device's side as it plays its script, so it can. This module never looks at the journal and
never decides an outcome: it compares, and says precisely where the publication and the table
part ways.

Per game (the rules of docs/reliability.md, "The audit against the devices"):

- **baccarat** — outcomes and ledger lines pair up by ``round``. A complete outcome equals the
  line's ``outcome`` (the simulator's own rules core over the very events its reports stand
  for). A void one names its article and its reason and shows only cards of that hand; it is
  void at the table too (and then equal to the line's outcome), or voided by the daemon for a
  cause the device cannot see, named in its reason (:data:`HOST_CAUSES`). No outcome without a
  line, no line without an outcome.
- **craps** — the throws the sensor made (``roll`` and ``no_roll`` lines, in report order) and
  the throws published (roll outcomes by their dice, no-roll outcomes), in round order, are the
  same sequence. A report the sensor itself says it no longer holds (a published
  ``link_errors`` fault, "dice reports A-B lost") is accounted for, not lost: that is all the
  daemon can know of it, and it says so. A throw the daemon could not apply is accounted for by
  the void outcome that names why. A sensor fault report is a published ``sensor_fault``
  fault. Every published throw event's ``device_msg`` names a report of that kind and dice.
- **qpoker** — outcomes and ledger lines pair up by ``round``. A complete outcome's seats are
  the line's seats and each seat's and the dealer's cards are the line's ``hands``. A round the
  machine halted is void under qpoker.art11.5. A void outcome names its article and reason,
  shows only cards of its own round's hands, and has a cause: the halt, a dealer's card the
  machine saw exposed (qpoker.art11.3), or a host cause named in its reason. No outcome
  without a line, no line without an outcome.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ENVELOPE = ("table_seq", "ts")

#: What the daemon names in a void's reason when it voided a round for a cause the device
#: cannot see (the device dealt it whole): the device was lost too long (``device_lost``), an
#: event it could not make durable or apply (``event_not_applied``), cards that never reached
#: it, or a deal it could no longer follow after one of those.
HOST_CAUSES = ("device_lost", "could not apply", "never reached the daemon", "cannot follow",
               "the point is not known")

#: The detail of the dice driver's ``link_errors`` fault (docs/protocols/dice.md, "Delivery").
_LOST_REPORTS = re.compile(r"dice reports (\d+)-(\d+) lost")


@dataclass
class Truth:
    """What the comparison of one table's publication with its devices' ledger found.

    ``dealt`` counts the ledger's rounds (baccarat hands, Q Poker rounds, craps throws);
    ``matched`` the outcomes that are what the device dealt (void ones included, when the
    ledger has the same void); ``voided_by_device`` the voids the device's own round carries
    (by article); ``voided_by_host`` the rounds the device dealt whole that the daemon voided
    for a cause it names (by article); ``named_lost`` the craps throws the sensor reported lost
    (a published ``link_errors`` fault). ``lost``, ``invented``, ``duplicated`` and ``wrong``
    must be 0; ``problems`` says, round by round, what was published against what was dealt.
    """

    game: str
    dealt: int = 0
    published: int = 0
    matched: int = 0
    lost: int = 0
    invented: int = 0
    duplicated: int = 0
    wrong: int = 0
    named_lost: int = 0
    voided_by_device: Counter[str] = field(default_factory=Counter)
    voided_by_host: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.problems or self.lost or self.invented or self.duplicated or self.wrong)

    def summary(self) -> dict[str, Any]:
        return {"game": self.game, "dealt": self.dealt, "published": self.published,
                "matched": self.matched, "lost": self.lost, "invented": self.invented,
                "duplicated": self.duplicated, "wrong": self.wrong,
                "named_lost": self.named_lost,
                "voided_by_device": dict(self.voided_by_device),
                "voided_by_host": dict(self.voided_by_host),
                "problems": self.problems[:20] + (
                    [f"... and {len(self.problems) - 20} more"] if len(self.problems) > 20
                    else [])}

    def report(self) -> str:
        """The problems, one a line, for an assertion message."""
        return "\n".join([f"{self.game}: the publication is not what the device dealt",
                          *(f"  {p}" for p in self.problems)])

    def _lost(self, text: str) -> None:
        self.lost += 1
        self.problems.append(text)

    def _invented(self, text: str) -> None:
        self.invented += 1
        self.problems.append(text)

    def _wrong(self, text: str) -> None:
        self.wrong += 1
        self.problems.append(text)


def compare(game: str, outcomes: Sequence[Mapping[str, Any]],
            ledger: Sequence[Mapping[str, Any]],
            events: Sequence[Mapping[str, Any]] = ()) -> Truth:
    """Compare a table's published ``outcomes`` (each once, in ``table_seq`` order) with its
    device's ``ledger`` (read_ledger). Craps also needs the published ``events`` (each once,
    in order): the sensor's own word that reports were lost, and each throw's report number."""
    if game == "baccarat":
        return compare_baccarat(outcomes, ledger)
    if game == "craps":
        return compare_craps(outcomes, ledger, events)
    if game == "qpoker":
        return compare_qpoker(outcomes, ledger)
    raise ValueError(f"no ledger comparison for {game!r}")


def expected_outcomes(game: str, ledger: Sequence[Mapping[str, Any]],
                      events: Sequence[Mapping[str, Any]] = ()) -> int:
    """How many outcomes the table owes for ``ledger``: one per hand or round; one per throw
    for craps, less the reports the sensor said were lost."""
    if game != "craps":
        return len(ledger)
    lost = named_lost_reports(events)
    return sum(1 for line in ledger
               if line["kind"] in ("roll", "no_roll") and line["number"] not in lost)


def strip_envelope(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ENVELOPE}


def names_host_cause(record: Mapping[str, Any]) -> bool:
    reason = record.get("void_reason") or ""
    return any(cause in reason for cause in HOST_CAUSES)


def _by_round(truth: Truth, outcomes: Iterable[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    rounds: dict[int, dict[str, Any]] = {}
    for outcome in outcomes:
        record = strip_envelope(outcome)
        if record["round"] in rounds:
            truth.duplicated += 1
            truth.problems.append(f"round {record['round']} published twice")
            continue
        rounds[record["round"]] = record
    truth.published = len(rounds)
    return rounds


def _names_its_void(truth: Truth, record: Mapping[str, Any], what: str) -> bool:
    if record.get("article") and record.get("void_reason"):
        return True
    truth._wrong(f"round {record['round']}: void without an article or a reason ({what})")
    return False


# -- baccarat ------------------------------------------------------------------------------------


def hand_text(record: Mapping[str, Any]) -> str:
    """``complete P 5S 9H / B KD 2C 7H banker`` (and the void's article)."""
    result = record.get("result") or {}
    text = (f"{record['status']} P {' '.join(result.get('player_cards', []))} / B "
            f"{' '.join(result.get('banker_cards', []))} {result.get('winner') or ''}").rstrip()
    return text + (f" ({record.get('article')})" if record["status"] == "void" else "")


def compare_baccarat(outcomes: Sequence[Mapping[str, Any]],
                     ledger: Sequence[Mapping[str, Any]]) -> Truth:
    truth = Truth("baccarat", dealt=len(ledger))
    published = _by_round(truth, outcomes)
    lines: dict[int, Mapping[str, Any]] = {}
    for line in ledger:
        if line["round"] in lines:
            truth.problems.append(f"the ledger has round {line['round']} twice")
        lines[line["round"]] = line
    for number in sorted(lines.keys() - published.keys()):
        line = lines[number]
        truth._lost(f"round {number}: the device dealt {_cards(line)} "
                    f"({hand_text(line['outcome'])}); no outcome was published")
    for number in sorted(published.keys() - lines.keys()):
        truth._invented(f"round {number}: published {hand_text(published[number])}; the device "
                        "dealt no such hand")
    for number in sorted(published.keys() & lines.keys()):
        _baccarat_round(truth, published[number], lines[number])
    return truth


def _cards(line: Mapping[str, Any]) -> str:
    return " ".join(str(card) for card in line["cards"]) or "no card"


def _baccarat_round(truth: Truth, record: dict[str, Any], line: Mapping[str, Any]) -> None:
    dealt = line["outcome"]
    number = record["round"]
    versus = (f"published {hand_text(record)}; the device dealt {_cards(line)} "
              f"({hand_text(dealt)})")
    if record["status"] == "complete":
        if record == dealt:
            truth.matched += 1
        else:
            truth._wrong(f"round {number} is not what was dealt: {versus}")
        return
    if not _names_its_void(truth, record, versus):
        return
    result = record.get("result") or {}
    shown = Counter([*result.get("player_cards", []), *result.get("banker_cards", [])])
    foreign = shown - Counter(card for card in line["cards"] if card)
    if foreign:
        truth._wrong(f"round {number} shows cards of another hand "
                     f"({' '.join(sorted(foreign.elements()))}): {versus}")
    elif record == dealt:
        truth.matched += 1
        truth.voided_by_device[record["article"]] += 1
    elif names_host_cause(record):
        truth.voided_by_host[record["article"]] += 1
    else:
        truth._wrong(f"round {number} is void for no cause the device or the host names: "
                     f"{versus}; reason: {record['void_reason']}")


# -- craps ---------------------------------------------------------------------------------------


def named_lost_reports(events: Iterable[Mapping[str, Any]]) -> set[int]:
    """The report numbers the sensor said it no longer held: every published ``link_errors``
    fault ("dice reports A-B lost")."""
    lost: set[int] = set()
    for event in events:
        if event.get("type") != "fault" or event.get("code") != "link_errors":
            continue
        match = _LOST_REPORTS.search(event.get("detail") or "")
        if match:
            first, last = int(match[1]), int(match[2])
            lost.update(range(first, last + 1) if last >= first else ())
    return lost


def _throw(line: Mapping[str, Any]) -> tuple[Any, ...]:
    return ("roll", *line["dice"]) if line["kind"] == "roll" else ("no_roll",)


def _published_throw(record: Mapping[str, Any]) -> tuple[Any, ...]:
    if record.get("no_roll"):
        return ("no_roll",)
    dice = (record.get("result") or {}).get("dice")
    return ("roll", *dice) if dice else ("void",)


def _throw_text(throw: tuple[Any, ...]) -> str:
    return f"{throw[1]}-{throw[2]}" if throw[0] == "roll" else throw[0].replace("_", "-")


def compare_craps(outcomes: Sequence[Mapping[str, Any]], ledger: Sequence[Mapping[str, Any]],
                  events: Sequence[Mapping[str, Any]]) -> Truth:
    lost_reports = named_lost_reports(events)
    throws = [line for line in ledger if line["kind"] in ("roll", "no_roll")]
    truth = Truth("craps", dealt=len(throws))
    rounds = _by_round(truth, outcomes)
    records = [rounds[k] for k in sorted(rounds)]
    owed: list[Mapping[str, Any]] = []
    for line in throws:
        if line["number"] in lost_reports:
            truth.named_lost += 1
        else:
            owed.append(line)
    # The two sequences are compared whole: equal, they pair one to one; where they part, the
    # alignment says what is missing (lost), extra (invented) or different (wrong).
    dealt = [_throw(line) for line in owed]
    shown = [_published_throw(record) for record in records]
    matcher = difflib.SequenceMatcher(None, dealt, shown, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            _craps_pair(truth, op, owed[i1 + k] if i1 + k < i2 else None,
                        records[j1 + k] if j1 + k < j2 else None)
    _craps_reports(truth, ledger, events, lost_reports)
    return truth


def _craps_pair(truth: Truth, op: str, line: Mapping[str, Any] | None,
                record: Mapping[str, Any] | None) -> None:
    if record is None:
        assert line is not None
        truth._lost(f"throw {_throw_text(_throw(line))} (report {line['number']}): no outcome "
                    "was published and nothing names it lost")
        return
    published = _published_throw(record)
    where = f"round {record['round']}"
    if line is None:
        truth._invented(f"{where}: published {_throw_text(published)}; the sensor threw no "
                        "such throw there")
        return
    dealt = f"the sensor threw {_throw_text(_throw(line))} (report {line['number']})"
    if op == "equal":
        if record["status"] == "complete":
            truth.matched += 1
        elif _names_its_void(truth, record, dealt) and names_host_cause(record):
            truth.voided_by_host[record["article"]] += 1
        else:
            truth._wrong(f"{where}: void for no cause the host names ({dealt}); reason: "
                         f"{record.get('void_reason')}")
    elif published == ("void",) and record["status"] == "void" and names_host_cause(record):
        truth.voided_by_host[record["article"]] += 1  # a throw it could not apply, said so
    else:
        truth._wrong(f"{where}: published {_throw_text(published)}; {dealt}")


def _report_text(line: Mapping[str, Any] | None) -> str:
    if line is None:
        return "never made"
    if line["kind"] == "sensor_fault":
        return f"a sensor fault (code {line['code']})"
    return _throw_text(_throw(line))


def _craps_reports(truth: Truth, ledger: Sequence[Mapping[str, Any]],
                   events: Sequence[Mapping[str, Any]], lost_reports: set[int]) -> None:
    """Each published event that came from a report names it (``device_msg``): the report must
    be one the sensor made, of that kind and with those dice; each sensor fault report is a
    published ``sensor_fault`` fault."""
    by_number = {line["number"]: line for line in ledger}
    faults_seen = set()
    boots = {e.get("device_boot") for e in events if e.get("device_msg") is not None}
    if len(boots) > 1:
        truth.problems.append(f"reports of {len(boots)} sensor boots: one ledger holds one boot")
        return
    for event in events:
        number = event.get("device_msg")
        if number is None or event.get("type") not in ("roll", "no_roll", "fault"):
            continue
        line = by_number.get(number)
        kind = event["type"]
        if kind == "fault":
            if event.get("code") != "sensor_fault":
                continue  # a cocked die's fault rides with its roll's report
            kind = "sensor_fault"
            faults_seen.add(number)
        if line is None or line["kind"] != kind or (
                kind == "roll" and list(event.get("dice", [])) != line["dice"]):
            text = (f"event {event.get('table_seq')}: a {event['type']} "
                    f"{event.get('dice') or ''} from report {number}; the sensor's report "
                    f"{number} was {_report_text(line)}")
            if line is None:
                truth._invented(text)
            else:
                truth._wrong(text)
    for line in ledger:
        if (line["kind"] == "sensor_fault" and line["number"] not in faults_seen
                and line["number"] not in lost_reports):
            truth._lost(f"sensor fault report {line['number']} (code {line['code']}): no "
                        "sensor_fault fault was published")


# -- Q Poker -------------------------------------------------------------------------------------


def _seat_cards(record: Mapping[str, Any]) -> dict[str, list[str]]:
    result = record.get("result") or {}
    cards = {seat: list(s.get("cards") or []) for seat, s in (result.get("seats") or {}).items()}
    cards["dealer"] = list((result.get("dealer") or {}).get("cards") or [])
    return cards


def _round_text(cards: Mapping[str, Sequence[str]]) -> str:
    return "; ".join(f"{seat} {' '.join(hand) or '-'}" for seat, hand in cards.items())


def compare_qpoker(outcomes: Sequence[Mapping[str, Any]],
                   ledger: Sequence[Mapping[str, Any]]) -> Truth:
    truth = Truth("qpoker", dealt=len(ledger))
    published = _by_round(truth, outcomes)
    lines = {line["round"]: line for line in ledger}
    for number in sorted(lines.keys() - published.keys()):
        truth._lost(f"round {number}: the machine dealt {_round_text(lines[number]['hands'])}"
                    f"{' (halted)' if lines[number]['halted'] else ''}; no outcome was "
                    "published")
    for number in sorted(published.keys() - lines.keys()):
        truth._invented(f"round {number}: published {published[number]['status']} "
                        f"{_round_text(_seat_cards(published[number]))}; the machine dealt no "
                        "such round")
    for number in sorted(published.keys() & lines.keys()):
        _qpoker_round(truth, published[number], lines[number])
    return truth


def _qpoker_round(truth: Truth, record: dict[str, Any], line: Mapping[str, Any]) -> None:
    number = record["round"]
    shown = _seat_cards(record)
    hands: Mapping[str, list[str]] = line["hands"]
    versus = (f"published {record['status']} {_round_text(shown)}; the machine dealt "
              f"{_round_text(hands)}" + (f", halted ({line['halted']})" if line["halted"]
                                         else ""))
    if record["status"] == "complete":
        seats = {str(seat) for seat in line["seats"]}
        if line["halted"]:
            truth._wrong(f"round {number} is complete though the machine halted: {versus}")
        elif set(shown) - {"dealer"} != seats or any(shown[s] != hands.get(s) for s in shown):
            truth._wrong(f"round {number} is not what was dealt: {versus}")
        else:
            truth.matched += 1
        return
    if not _names_its_void(truth, record, versus):
        return
    foreign = {seat: cards for seat, cards in shown.items()
               if Counter(cards) - Counter(hands.get(seat, []))}
    if foreign:
        truth._wrong(f"round {number} shows cards the machine did not deal to those seats in "
                     f"that round ({_round_text(foreign)}): {versus}")
    elif line["halted"]:
        if record["article"] == "qpoker.art11.5":
            truth.matched += 1
            truth.voided_by_device[record["article"]] += 1
        else:
            truth._wrong(f"round {number}: the machine halted, so void under qpoker.art11.5, "
                         f"not {record['article']}: {versus}")
    elif record["article"] == "qpoker.art11.3" and "dealer" in line["exposed"]:
        truth.matched += 1
        truth.voided_by_device[record["article"]] += 1
    elif names_host_cause(record):
        truth.voided_by_host[record["article"]] += 1
    else:
        truth._wrong(f"round {number} is void for no cause the machine or the host names: "
                     f"{versus}; reason: {record['void_reason']}")
