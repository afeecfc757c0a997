"""What the integrity monitors run with: the settings a site chooses, and every threshold that
follows from them (docs/integrity.md, "Thresholds").

Owns the false-alarm budget and its split (Bonferroni, over the statistics a table runs), the
null probabilities of the frequency statistics (exactly those of ``tabled odds``,
:mod:`tabled.games.odds`), their design shifts, and the lengths of the shoe tests. Pure:
computed once per (game, options, settings) and cached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Final

from tabled.contract.outcome import Game
from tabled.games.options import GameOptions
from tabled.games.qpoker.options import QPokerOptions
from tabled.games.registry import game_names, odds, option_type
from tabled.pit.integrity.stats import (
    TABLE_HOURS,
    block_bound,
    cusum_threshold,
    kl,
    rank_run_bound,
    shifted,
    shortest_run,
    sprt_threshold,
    suit_run_bound,
)

#: Every monitor, by the name its findings and alerts (``integrity:<monitor>``) carry.
MONITORS: Final = ("dice", "frequency", "shoe_count", "shoe_runs", "slug", "riffle",
                   "result_mismatch", "pace")
#: The games each monitor watches.
GAMES: Final = tuple(game_names())
MONITOR_GAMES: Final[Mapping[str, tuple[Game, ...]]] = MappingProxyType({
    "dice": ("craps",), "frequency": GAMES, "shoe_count": ("baccarat",),
    "shoe_runs": ("baccarat",), "slug": ("baccarat",), "riffle": ("baccarat",),
    "result_mismatch": GAMES, "pace": GAMES,
})
#: How many statistics each statistical monitor runs per game: the Bonferroni ``m`` shares
#: the table's false-alarm budget among them. ``shoe_count``, ``result_mismatch`` and ``pace``
#: are not statistical (a fair table never trips them) and take no share.
STATISTICS: Final[Mapping[str, Mapping[Game, int]]] = MappingProxyType({
    "dice": {"craps": 12},  # 2 dice x 6 faces, each "this face comes up more often"
    "frequency": {"craps": 22, "baccarat": 12, "qpoker": 14},  # each rate, up and down
    "shoe_runs": {"baccarat": 2},  # rank runs, suit runs
    "slug": {"baccarat": 1},
    "riffle": {"baccarat": 1},
})
#: The probability of the loaded face the dice statistics are tuned to (a face at 1/4).
LOADED_FACE: Final = 0.25
#: A frequency statistic is tuned to the shift of its rate that brings this much evidence per
#: observation (nats): the Banker rate moving 5 points, the 7 about 3.8 points, the dealer's
#: qualifying rate about 4.6 points (docs/integrity.md). A rate too rare to fall that far (a
#: straight flush) is tested for a drought: its "less often" statistic counts the rounds
#: without one.
DESIGN_DIVERGENCE: Final = 0.005


@dataclass(frozen=True, slots=True)
class GameSettings:
    """A game's pace: the rate the thresholds are calibrated for (rounds per hour: the higher,
    the stricter) and the bounds of the ``pace`` monitor."""

    assumed_pace: float
    pace_min: float
    pace_max: float

    def __post_init__(self) -> None:
        if not (self.assumed_pace > 0 and 0 <= self.pace_min < self.pace_max):
            raise ValueError("assumed_pace > 0 and 0 <= pace_min < pace_max")


@dataclass(frozen=True, slots=True)
class Settings:
    """What a site chooses (the pit's ``[integrity]`` section; defaults for the command).

    The assumed paces are the upper ends of what tables run at: craps about 100 rolls an hour
    at a busy table, baccarat 60-80 hands at a squeeze table and up to 200 dealt fast, Q Poker
    about 40 to 60 rounds (docs/integrity.md, "Pace")."""

    monitors: frozenset[str] = frozenset(MONITORS)
    #: The whole table's false alarms per 10,000 table-hours, at the assumed pace.
    false_alarms_per_10k_hours: float = 1.0
    baccarat: GameSettings = GameSettings(120.0, 20.0, 200.0)
    craps: GameSettings = GameSettings(120.0, 30.0, 250.0)
    qpoker: GameSettings = GameSettings(60.0, 10.0, 120.0)
    #: The ``pace`` monitor counts rounds over this window (seconds) ...
    pace_window: float = 1800.0
    #: ... once the table has played that long without a pause longer than this (seconds).
    idle_gap: float = 600.0
    #: How many earlier shoes of the floor the ``slug`` monitor remembers.
    slug_horizon_shoes: int = 1000
    #: Unused keys of a monitor set are an error (a typo would silence a monitor).
    extra: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        unknown = sorted(self.monitors - set(MONITORS))
        if unknown:
            raise ValueError(f"unknown monitors {unknown} (known: {', '.join(MONITORS)})")
        if not self.false_alarms_per_10k_hours > 0:
            raise ValueError("false_alarms_per_10k_hours must be positive")
        if self.slug_horizon_shoes < 2:
            raise ValueError("slug_horizon_shoes must be at least 2")

    def game(self, game: Game) -> GameSettings:
        return {"baccarat": self.baccarat, "craps": self.craps, "qpoker": self.qpoker}[game]

    def runs(self, monitor: str, game: Game) -> bool:
        """Whether ``monitor`` runs at a table of ``game``."""
        return monitor in self.monitors and game in MONITOR_GAMES[monitor]


#: The defaults (``tabled integrity``, and a pit without an ``[integrity]`` section).
DEFAULT_SETTINGS: Final = Settings()


@dataclass(frozen=True, slots=True)
class FrequencyGroup:
    """Rates observed together: their null probabilities (``tabled odds``), the design shift
    up and down of each, how many observations a round gives, and the one threshold."""

    observation: str  # what one observation is: "hand", "roll", "round"
    names: tuple[str, ...]
    p0: tuple[float, ...]
    up: tuple[float, ...]
    down: tuple[float, ...]
    per_round: float
    h: float


@dataclass(frozen=True, slots=True)
class ShoeLimits:
    """The shoe tests for a shoe of ``decks`` decks: the per-shoe false-alarm probability each
    test may have, the run lengths that are rarer than that, and the riffle test's threshold."""

    decks: int
    alpha: float
    rank_run: int
    suit_run: int
    riffle_h: float


@dataclass(frozen=True)
class Calibration:
    """Every threshold of one table's monitors."""

    game: Game
    options: GameOptions
    settings: Settings
    #: the statistics sharing the budget (Bonferroni's m)
    statistics: int
    #: false alarms per 10,000 table-hours each statistic may raise
    per_statistic: float
    dice_h: float
    frequency: tuple[FrequencyGroup, ...]
    slug_length: int
    _shoes: dict[int, ShoeLimits] = field(default_factory=dict, repr=False, compare=False)

    @property
    def pace(self) -> GameSettings:
        return self.settings.game(self.game)

    @property
    def rounds(self) -> float:
        """Rounds per 10,000 table-hours at the assumed pace."""
        return self.pace.assumed_pace * TABLE_HOURS

    def shoe(self, decks: int) -> ShoeLimits:
        """The shoe tests' limits for a shoe of ``decks`` decks (any positive number: a shoe
        outside Art. 1's 6-12 is still tested)."""
        limits = self._shoes.get(decks)
        if limits is None:
            alpha = shoe_alpha(self.per_statistic, self.pace.assumed_pace, decks)
            limits = self._shoes[decks] = ShoeLimits(
                decks, alpha,
                shortest_run(alpha, lambda n: rank_run_bound(n, decks)),
                shortest_run(alpha, lambda n: suit_run_bound(n, decks)),
                sprt_threshold(alpha))
        return limits


def hands_per_shoe(decks: int) -> float:
    """The fewest hands a shoe deals: all but ~26 cards (the cut card 12-16 from the end, up to
    10 burned) at most 6 cards a hand. Fewer hands, more shoes an hour: a conservative count."""
    return max(1.0, (52 * decks - 26) / 6)


def shoe_alpha(per_statistic: float, pace: float, decks: int) -> float:
    """A per-shoe test's false-alarm probability: its share of the budget over the shoes of
    10,000 table-hours."""
    shoes = pace * TABLE_HOURS / hands_per_shoe(decks)
    return per_statistic / shoes


def statistics_of(game: Game, settings: Settings) -> int:
    return sum(count.get(game, 0) for monitor, count in STATISTICS.items()
               if settings.runs(monitor, game))


def _qpoker_groups(options: GameOptions) -> list[tuple[str, tuple[str, ...], float]]:
    assert isinstance(options, QPokerOptions)
    classes = ("straight_flush", "three_of_a_kind", "straight", "flush", "pair", "high_card")
    # every position with a bet and the dealer hold a hand each round
    return [("hand", classes, float(options.positions + 1)),
            ("round", ("dealer_qualifies",), 1.0)]


#: What each game's outcome frequencies are observed on: (observation, names, per round).
_GROUPS: dict[str, Callable[[GameOptions], list[tuple[str, tuple[str, ...], float]]]] = {
    "baccarat": lambda options: [("hand", ("banker", "player", "tie", "natural",
                                           "player_pair", "banker_pair"), 1.0)],
    "craps": lambda options: [("roll", tuple(str(total) for total in range(2, 13)), 1.0)],
    "qpoker": _qpoker_groups,
}


def _frequency_groups(game: Game, options: GameOptions, h_of: dict[float, float]
                      ) -> tuple[FrequencyGroup, ...]:
    result = odds(game, options)
    p = {name: float(value) for name, value in result.probabilities.items()}
    groups = _GROUPS[game](options)
    out = []
    for observation, names, per_round in groups:
        p0 = tuple(p[name] for name in names)
        out.append(FrequencyGroup(
            observation, names, p0,
            tuple(shifted(x, DESIGN_DIVERGENCE, up=True) for x in p0),
            tuple(shifted(x, DESIGN_DIVERGENCE, up=False) for x in p0),
            per_round, h_of[per_round]))
    return tuple(out)


def slug_length(settings: Settings) -> int:
    """The block length the ``slug`` monitor alerts at: the shortest whose chance repetition
    of any block remembered (``slug_horizon_shoes`` shoes of up to 12 decks) by any shoe of 6
    to 12 decks stays below the per-shoe share."""
    m = statistics_of("baccarat", settings) or 1
    per_statistic = settings.false_alarms_per_10k_hours / m
    indexed = settings.slug_horizon_shoes * 52 * 12
    longest = 2
    for decks in range(6, 13):
        alpha = shoe_alpha(per_statistic, settings.baccarat.assumed_pace, decks)
        longest = max(longest, shortest_run(
            alpha, lambda n, d=decks: block_bound(n, d, indexed)))  # type: ignore[misc]
    return longest


def options_of(game: Game, options: GameOptions | None) -> GameOptions:
    return options if options is not None else option_type(game)()


@cache
def calibrate(game: Game, options: GameOptions | None = None,
              settings: Settings = DEFAULT_SETTINGS) -> Calibration:
    """Every threshold for a table of ``game`` with ``options`` under ``settings``."""
    options = options_of(game, options)
    m = statistics_of(game, settings)
    budget = settings.false_alarms_per_10k_hours
    per_statistic = budget / max(m, 1)
    rounds = settings.game(game).assumed_pace * TABLE_HOURS
    h_of = {per_round: cusum_threshold(rounds * per_round, max(m, 1), budget)
            for per_round in {1.0, float(getattr(options, "positions", 0) + 1)}}
    frequency = (_frequency_groups(game, options, h_of) if settings.runs("frequency", game)
                 else ())
    return Calibration(
        game=game, options=options, settings=settings, statistics=m,
        per_statistic=per_statistic, dice_h=h_of[1.0], frequency=frequency,
        slug_length=slug_length(settings) if settings.runs("slug", game) else 0)


def design_delay(p0: float, p1: float, h: float) -> float:
    """Wald's approximation of a CUSUM's mean detection delay at its design shift, in
    observations (``h`` over the evidence per observation; overshoot not counted)."""
    return h / kl(p1, p0)

