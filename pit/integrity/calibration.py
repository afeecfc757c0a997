"""What the integrity monitors run with: the settings a site chooses, and every threshold that
follows from them (docs/integrity.md, "Thresholds").

Owns the false-alarm budget and its split (Bonferroni, over the statistics a table runs), the
null probabilities of the frequency statistics (exactly those of ``tabled odds``,
:mod:`tabled.games.odds`), their design shifts, and the lengths of the shoe tests. It names no
game: what a game's tables are watched for (its rates, dice, shoe, default pace) is the game's
integrity part (:mod:`tabled.games.parts.integrity`), asked through the registry; a game that
declares none is not monitored. Pure: computed once per (game, options, settings) and cached.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from types import MappingProxyType
from typing import Final

from tabled.contract.outcome import Game
from tabled.games.options import GameOptions
from tabled.games.parts.integrity import IntegrityPart, Pace, Rate, RateGroup
from tabled.games.registry import BadGame, game_names, odds, option_type, part
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
#: The monitors of a game whose part says its cards leave a watched shoe (``shoe``).
SHOE_MONITORS: Final = ("shoe_count", "shoe_runs", "slug", "riffle")
#: How many statistics each shoe monitor runs at a table: the Bonferroni ``m`` shares the
#: table's false-alarm budget among every statistic it runs. ``dice``: six a die, each "this
#: face comes up more often"; ``frequency``: two a rate (up and down). ``shoe_count``,
#: ``result_mismatch`` and ``pace`` are not statistical (a fair table never trips them) and
#: take no share.
SHOE_STATISTICS: Final[Mapping[str, int]] = MappingProxyType({
    "shoe_runs": 2,  # rank runs, suit runs
    "slug": 1,
    "riffle": 1,
})
#: A die's faces.
FACES: Final = 6
#: The probability of the loaded face the dice statistics are tuned to (a face at 1/4).
LOADED_FACE: Final = 0.25
#: A frequency statistic is tuned to the shift of its rate that brings this much evidence per
#: observation (nats): the Banker rate moving 5 points, the 7 about 3.8 points, the dealer's
#: qualifying rate about 4.6 points (docs/integrity.md). A rate too rare to fall that far (a
#: straight flush) is tested for a drought: its "less often" statistic counts the rounds
#: without one.
DESIGN_DIVERGENCE: Final = 0.005


#: A game's pace: the rate the thresholds are calibrated for (rounds per hour: the higher, the
#: stricter) and the bounds of the ``pace`` monitor (each game's part declares its default).
GameSettings = Pace


class NotMonitored(LookupError):
    """The game declares no integrity part: its tables are not monitored."""


def integrity_part(game: str) -> IntegrityPart | None:
    """Game ``game``'s integrity part, None when it declares none (it is not monitored);
    :class:`~tabled.games.registry.UnknownGame` for a game not installed."""
    found = part(game, "integrity")
    if found is not None and not isinstance(found, IntegrityPart):
        raise BadGame(f"game {game!r}'s integrity part is a {type(found).__name__}, "
                      "not an IntegrityPart")
    return found


def monitored(game: str) -> bool:
    """Whether the installed game ``game`` is monitored (it declares an integrity part)."""
    return integrity_part(game) is not None


def watches(monitor: str, found: IntegrityPart) -> bool:
    """Whether ``monitor`` has anything to watch at a game with the part ``found``."""
    if monitor == "dice":
        return found.dice > 0
    if monitor in SHOE_MONITORS:
        return found.shoe
    return True


@dataclass(frozen=True, slots=True)
class Settings:
    """What a site chooses (the pit's ``[integrity]`` section; defaults for the command).

    A game's pace is the one ``paces`` gives it, else its integrity part's default (the upper
    end of what its tables run at; docs/integrity.md, "Pace")."""

    monitors: frozenset[str] = frozenset(MONITORS)
    #: The whole table's false alarms per 10,000 table-hours, at the assumed pace.
    false_alarms_per_10k_hours: float = 1.0
    #: The paces a site chose, as ``(game, pace)`` pairs (kept sorted by game, without those
    #: equal to the game's default).
    paces: tuple[tuple[str, GameSettings], ...] = ()
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
        paces = dict(self.paces)
        if len(paces) != len(self.paces):
            raise ValueError("a game's pace is given twice")
        # one form for the same settings: a game's own default pace is not kept
        object.__setattr__(self, "paces", tuple(sorted(
            (game, pace) for game, pace in paces.items()
            if (found := integrity_part(game)) is None or found.pace != pace)))

    def game(self, game: str) -> GameSettings:
        """The pace of ``game``: the site's, else its part's (:class:`NotMonitored` when it
        declares no integrity part)."""
        for name, pace in self.paces:
            if name == game:
                return pace
        found = integrity_part(game)
        if found is None:
            raise NotMonitored(f"{game} declares no integrity part: it is not monitored")
        return found.pace

    def with_pace(self, game: str, pace: GameSettings) -> Settings:
        """These settings with ``game``'s pace set to ``pace``."""
        return replace(self, paces=tuple({**dict(self.paces), game: pace}.items()))

    def runs(self, monitor: str, game: str) -> bool:
        """Whether ``monitor`` runs at a table of ``game`` (never at a game not monitored)."""
        if monitor not in self.monitors:
            return False
        found = integrity_part(game)
        return found is not None and watches(monitor, found)


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
    #: the game's rates, as its part names them (a sentence's words, a finding's subject)
    rates: tuple[Rate, ...] = field(default=(), repr=False, compare=False)


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
    #: the game's integrity part
    part: IntegrityPart = field(repr=False, compare=False)
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


def statistics(monitor: str, game: str, options: GameOptions | None = None) -> int:
    """How many statistics ``monitor`` runs at a table of ``game`` with ``options`` (0: none,
    or it is not statistical)."""
    found = integrity_part(game)
    if found is None or not watches(monitor, found):
        return 0
    if monitor == "dice":
        return found.dice * FACES
    if monitor == "frequency":
        return 2 * sum(len(group.rates) for group in found.rates(options_of(game, options)))
    return SHOE_STATISTICS.get(monitor, 0)


def statistics_of(game: str, settings: Settings, options: GameOptions | None = None) -> int:
    """Bonferroni's m: the statistics a table of ``game`` runs under ``settings``."""
    return sum(statistics(monitor, game, options) for monitor in MONITORS
               if settings.runs(monitor, game))


def _frequency_groups(game: str, options: GameOptions, groups: tuple[RateGroup, ...],
                      h_of: dict[float, float]) -> tuple[FrequencyGroup, ...]:
    result = odds(game, options)
    p = {name: float(value) for name, value in result.probabilities.items()}
    out = []
    for group in groups:
        p0 = tuple(p[name] for name in group.names)
        out.append(FrequencyGroup(
            group.observation, group.names, p0,
            tuple(shifted(x, DESIGN_DIVERGENCE, up=True) for x in p0),
            tuple(shifted(x, DESIGN_DIVERGENCE, up=False) for x in p0),
            group.per_round, h_of[group.per_round], group.rates))
    return tuple(out)


def shoe_games() -> tuple[str, ...]:
    """The installed games whose cards leave a watched shoe (their part's ``shoe``)."""
    return tuple(game for game in game_names()
                 if (found := integrity_part(game)) is not None and found.shoe)


def slug_length(settings: Settings) -> int:
    """The block length the ``slug`` monitor alerts at: the shortest whose chance repetition
    of any block remembered (``slug_horizon_shoes`` shoes of up to 12 decks) by any shoe of 6
    to 12 decks stays below the per-shoe share of every game dealt from a shoe (one index
    serves the floor)."""
    indexed = settings.slug_horizon_shoes * 52 * 12
    longest = 2
    for game in shoe_games():
        m = statistics_of(game, settings) or 1
        per_statistic = settings.false_alarms_per_10k_hours / m
        for decks in range(6, 13):
            alpha = shoe_alpha(per_statistic, settings.game(game).assumed_pace, decks)
            longest = max(longest, shortest_run(
                alpha, lambda n, d=decks: block_bound(n, d, indexed)))  # type: ignore[misc]
    return longest


def options_of(game: str, options: GameOptions | None) -> GameOptions:
    return options if options is not None else option_type(game)()


@cache
def calibrate(game: Game, options: GameOptions | None = None,
              settings: Settings = DEFAULT_SETTINGS) -> Calibration:
    """Every threshold for a table of ``game`` with ``options`` under ``settings``
    (:class:`NotMonitored` for a game that declares no integrity part)."""
    found = integrity_part(game)
    if found is None:
        raise NotMonitored(f"{game} declares no integrity part: it is not monitored")
    options = options_of(game, options)
    m = statistics_of(game, settings, options)
    budget = settings.false_alarms_per_10k_hours
    per_statistic = budget / max(m, 1)
    rounds = settings.game(game).assumed_pace * TABLE_HOURS
    groups = found.rates(options)
    h_of = {per_round: cusum_threshold(rounds * per_round, max(m, 1), budget)
            for per_round in {1.0, *(group.per_round for group in groups)}}
    frequency = (_frequency_groups(game, options, groups, h_of)
                 if settings.runs("frequency", game) else ())
    return Calibration(
        game=game, options=options, settings=settings, statistics=m,
        per_statistic=per_statistic, dice_h=h_of[1.0], frequency=frequency,
        slug_length=slug_length(settings) if settings.runs("slug", game) else 0, part=found)


def design_delay(p0: float, p1: float, h: float) -> float:
    """Wald's approximation of a CUSUM's mean detection delay at its design shift, in
    observations (``h`` over the evidence per observation; overshoot not counted)."""
    return h / kl(p1, p0)

