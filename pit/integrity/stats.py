"""The statistics behind the integrity monitors: Bernoulli CUSUMs, thresholds from a false-alarm
budget, and exact tail bounds for the shoe tests.

Pure arithmetic on floats with the standard library's ``math``: no I/O, no clock, no randomness.
Why these statistics, and how each threshold follows from the budget, is docs/integrity.md.

- A **Bernoulli CUSUM** tests, round after round, whether an event of null probability ``p0``
  now has probability ``p1``: ``S = max(0, S + log LR)``; it alarms at ``S >= h`` and starts
  again from 0 (restarting). Under the null its log likelihood ratio is a martingale, so by
  Ville's inequality a test started at any round ever reaches ``h`` with probability at most
  ``exp(-h)``; an alarm is the first crossing of one of these tests, each alarm a different
  start, so over ``N`` rounds the expected number of false alarms is at most ``N exp(-h)``.
- The **budget**: the whole table may raise ``F`` false alarms per 10,000 table-hours at its
  assumed pace; with ``m`` statistics each gets ``F / m`` (Bonferroni). A CUSUM updated ``N``
  times in 10,000 hours gets ``h = ln(N m / F)``; a test run once per shoe gets a per-shoe
  false-alarm probability ``alpha = F / (m * shoes)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import exp, log, prod

#: The false-alarm target is stated per this many table-hours.
TABLE_HOURS = 10_000.0


def kl(p1: float, p0: float) -> float:
    """The Kullback-Leibler divergence of Bernoulli(p1) from Bernoulli(p0), in nats: the
    evidence one observation brings, on average, when the truth is ``p1``."""
    out = 0.0
    if p1 > 0.0:
        out += p1 * log(p1 / p0)
    if p1 < 1.0:
        out += (1.0 - p1) * log((1.0 - p1) / (1.0 - p0))
    return out


def shifted(p0: float, divergence: float, up: bool) -> float:
    """The probability above (``up``) or below ``p0`` whose divergence from ``p0`` is
    ``divergence``: every frequency statistic is tuned to a shift of the same evidence per
    round. Bisection; clamped inside (0, 1)."""
    low, high = (p0, 1.0 - 1e-12) if up else (1e-12, p0)
    if kl(high if up else low, p0) <= divergence:
        return high if up else low
    for _ in range(200):
        mid = (low + high) / 2.0
        if (kl(mid, p0) < divergence) == up:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def cusum_threshold(updates: float, statistics: int, false_alarms: float) -> float:
    """``h`` for a CUSUM updated ``updates`` times per 10,000 table-hours, one of
    ``statistics`` sharing ``false_alarms`` false alarms per 10,000 table-hours."""
    return log(updates * statistics / false_alarms)


@dataclass(frozen=True, slots=True)
class Alarm:
    """One CUSUM that reached its threshold: which one, its value, and the stretch it built
    up over (the observations since it last left 0, and how many of them were hits)."""

    index: int
    statistic: float
    observations: int
    hits: int


class Cusums:
    """``K`` upper Bernoulli CUSUMs with one threshold ``h``, each testing ``p0[i] -> p1[i]``
    (``p1 > p0``: more often; ``p1 < p0``: less often). O(K) per observation, nothing kept
    but three numbers per statistic."""

    __slots__ = ("_hit", "_miss", "h", "hits", "names", "observations", "p0", "p1", "value")

    def __init__(self, names: Sequence[str], p0: Sequence[float], p1: Sequence[float],
                 h: float) -> None:
        if not len(names) == len(p0) == len(p1):
            raise ValueError("one p0 and one p1 per statistic")
        for a, b in zip(p0, p1, strict=True):
            if not (0.0 < a < 1.0 and 0.0 < b < 1.0 and a != b):
                raise ValueError(f"a CUSUM needs 0 < p0, p1 < 1 apart, not {a}, {b}")
        self.names = tuple(names)
        self.p0 = tuple(p0)
        self.p1 = tuple(p1)
        self.h = h
        self._hit = [log(b / a) for a, b in zip(p0, p1, strict=True)]
        self._miss = [log((1.0 - b) / (1.0 - a)) for a, b in zip(p0, p1, strict=True)]
        self.value = [0.0] * len(names)
        self.observations = [0] * len(names)
        self.hits = [0] * len(names)

    def __len__(self) -> int:
        return len(self.names)

    def observe_one(self, hit: int) -> list[Alarm]:
        """One observation in which statistic ``hit`` occurred and every other did not (a
        category of a one-hot outcome; ``-1``: none of them)."""
        value, seen, hits, h = self.value, self.observations, self.hits, self.h
        alarms: list[Alarm] = []
        miss = self._miss
        for i in range(len(value)):
            v = value[i] + (self._hit[i] if i == hit else miss[i])
            if v <= 0.0:
                if seen[i]:
                    value[i] = 0.0
                    seen[i] = hits[i] = 0
                continue
            value[i] = v
            seen[i] += 1
            if i == hit:
                hits[i] += 1
            if v >= h:
                alarms.append(Alarm(i, v, seen[i], hits[i]))
                value[i] = 0.0
                seen[i] = hits[i] = 0
        return alarms

    def observe(self, occurred: Sequence[bool]) -> list[Alarm]:
        """One observation of every statistic: ``occurred[i]`` whether event ``i`` happened."""
        value, seen, hits, h = self.value, self.observations, self.hits, self.h
        alarms: list[Alarm] = []
        for i, happened in enumerate(occurred):
            v = value[i] + (self._hit[i] if happened else self._miss[i])
            if v <= 0.0:
                if seen[i]:
                    value[i] = 0.0
                    seen[i] = hits[i] = 0
                continue
            value[i] = v
            seen[i] += 1
            if happened:
                hits[i] += 1
            if v >= h:
                alarms.append(Alarm(i, v, seen[i], hits[i]))
                value[i] = 0.0
                seen[i] = hits[i] = 0
        return alarms

    def reset(self) -> None:
        for i in range(len(self.value)):
            self.value[i] = 0.0
            self.observations[i] = self.hits[i] = 0


# -- the shoe tests: exact per-shoe tail bounds (union bounds over positions) -----------------
#
# A shuffled shoe is a uniformly random order of its cards, so any L positions hold what the
# first L would: each bound below is (positions) x (the chance at one position), and the chance
# at one position is a product of "the next card is one of these" over the cards before it.


def rank_run_bound(length: int, decks: int) -> float:
    """The chance that a shuffled shoe of ``decks`` decks holds a run of ``length`` cards whose
    ranks step by one, all up or all down (K to A and A to K count as a step): at most
    ``2 (n - L + 1) prod_j 4D / (52D - j)``."""
    cards = 52 * decks
    if length < 2:
        return 1.0
    per = prod(4 * decks / (cards - j) for j in range(1, length))
    return min(1.0, 2 * (cards - length + 1) * per)


def suit_run_bound(length: int, decks: int) -> float:
    """The chance that a shuffled shoe holds ``length`` cards in a row of one suit: at most
    ``(n - L + 1) prod_j (13D - j) / (52D - j)``."""
    cards = 52 * decks
    if length < 2:
        return 1.0
    per = prod((13 * decks - j) / (cards - j) for j in range(1, length))
    return min(1.0, (cards - length + 1) * per)


def block_bound(length: int, decks: int, indexed: int) -> float:
    """The chance that some ``length`` consecutive cards of a shuffled shoe of ``decks`` decks
    repeat, in order, one of ``indexed`` earlier blocks: at most ``n * indexed *
    prod_j D / (52D - j)`` (each card is a given one with probability at most D / (52D - j))."""
    cards = 52 * decks
    per = prod(decks / (cards - j) for j in range(length))
    return min(1.0, cards * indexed * per)


def shortest_run(alpha: float, bound: Callable[[int], float], longest: int = 200) -> int:
    """The smallest length ``L`` with ``bound(L) <= alpha``."""
    for length in range(2, longest + 1):
        if bound(length) <= alpha:
            return length
    raise ValueError(f"no run up to {longest} cards is rare enough for alpha={alpha:g}")


def sprt_threshold(alpha: float) -> float:
    """The threshold of a one-sided SPRT started once (per shoe): Ville's inequality gives a
    false alarm with probability at most ``exp(-h) = alpha``."""
    return -log(alpha)


def tail(h: float) -> float:
    """``exp(-h)``: the most a restarting CUSUM's false alarms per update can be."""
    return exp(-h)
