"""The printed forms of the odds: ``tabled odds``'s table, and the Markdown of docs/rules/.

This module owns how :class:`~tabled.daemon.rules.odds.model.Odds` read as text: the human table the
command prints, and the tables of every option combination that docs/rules/ show (a test checks
that the documents hold exactly what :func:`markdown` returns, so they cannot drift). It builds
strings only; the CLI prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from itertools import product
from typing import Final, get_args

from tabled.contract.outcome import Game
from tabled.daemon.rules.odds import odds
from tabled.daemon.rules.odds.baccarat import BaccaratOdds
from tabled.daemon.rules.odds.craps import CrapsOdds, describe
from tabled.daemon.rules.odds.model import Odds, exact
from tabled.daemon.rules.odds.qpoker import QPokerOdds, hand_text
from tabled.daemon.rules.options import (
    BaccaratMethod,
    BaccaratOptions,
    Commission,
    CrapsOptions,
    QPokerOptions,
    declare,
)

#: The one sentence that says what every edge means (also in ``--help`` and the docs).
CONVENTION: Final = (
    "house edge = the house's expected gain per unit staked on the wager, a push (tie, "
    "Don't Pass 12, returned odds) counting as a zero-return decision; positive favours the house"
)
#: The shoe sizes the baccarat document shows (Art. 1 allows all of them).
DOC_DECKS: Final = tuple(range(6, 13))


def percent(value: Fraction, places: int = 4) -> str:
    """``Fraction(7, 495)`` -> ``"1.4141 %"``, rounded half away from zero, sign kept."""
    scaled = int(abs(value) * 100 * 10**places + Fraction(1, 2))
    whole, part = divmod(scaled, 10**places)
    sign = "-" if value < 0 and scaled else ""
    return f"{sign}{whole}.{part:0{places}d} %"


def _table(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]
) -> list[str]:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.rjust(width) if align else cell.ljust(width)
            for cell, width, align in zip(cells, widths, right, strict=True)
        ).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _options_text(result: Odds) -> str:
    return " ".join(f"{key}={str(value).lower()}" for key, value in declare(result.options).items())


def text(result: Odds) -> str:
    """The human-readable report ``tabled odds`` prints without ``--json``."""
    lines = [f"{result.game}: {_options_text(result)}"]
    if isinstance(result, BaccaratOdds):
        lines.append(f"the first hand of a full shoe of {result.decks} decks, exact for its "
                     "composition (no burn seen)")
    lines += [CONVENTION, ""]
    lines += _table(
        ("probability", "per round", "exact"),
        [(name, percent(p), exact(p)) for name, p in result.probabilities.items()],
        (False, True, False),
    )
    lines.append("")
    lines += _table(
        ("bet", "house edge", "exact", "article"),
        [(name, percent(bet.house_edge), exact(bet.house_edge), bet.article)
         for name, bet in result.bets.items()],
        (False, True, False, False),
    )
    if isinstance(result, QPokerOdds):
        lines += ["", *_strategy_lines(result)]
    if isinstance(result, CrapsOdds):
        lines += ["", "come_N / dont_come_N: a wager already on N, from there on; the odds pay "
                      "true odds (0); Big bets per whole unit (R-C2)"]
    return "\n".join(lines)


def _strategy_lines(result: QPokerOdds) -> list[str]:
    strategy = result.strategy
    hands = sum(result.classes.values())
    lines = [
        f"play: the best strategy plays {strategy.played:,} of {hands:,} hands; the weakest "
        f"that plays is {hand_text(strategy.threshold)},",
        f"and every hand from {hand_text(strategy.plays_from)} up plays",
    ]
    if strategy.folds_above:
        folds = ", ".join(" ".join(hand.cards) for hand in strategy.folds_above)
        lines[-1] += f"; between them {len(strategy.folds_above)} fold: {folds}"
    lines.append("dobo and play are separate wagers; play's edge is per unit of the Play "
                 "wager, a fold losing half of it (Art. 9.3)")
    return lines


# -- docs/rules/ --------------------------------------------------------------------------------


def _baccarat_markdown() -> str:
    methods: tuple[BaccaratMethod, ...] = get_args(BaccaratMethod)
    commissions: tuple[Commission, ...] = get_args(Commission)
    lines = [
        "| method | decks | Player wins | Banker wins | Tie | natural | pair (each side) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for method, decks in product(methods, DOC_DECKS):
        p = odds("baccarat", BaccaratOptions(method=method), decks).probabilities
        lines.append(f"| {method} | {decks} | " + " | ".join(
            percent(p[name]) for name in ("player", "banker", "tie", "natural", "player_pair")
        ) + " |")
    lines += [
        "",
        "| method | commission | decks | `player` | `banker` | `tie` | "
        "`player_pair`, `banker_pair` |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for method, commission, decks in product(methods, commissions, DOC_DECKS):
        bets = odds("baccarat", BaccaratOptions(method=method, commission=commission),
                    decks).bets
        assert bets["player_pair"] == bets["banker_pair"]
        lines.append(f"| {method} | {commission} | {decks} | " + " | ".join(
            percent(bets[name].house_edge) for name in ("player", "banker", "tie", "player_pair")
        ) + " |")
    return "\n".join(lines)


def _craps_markdown() -> str:
    settings = (True, False)
    results = [odds("craps", CrapsOptions(big_bets_on_come_out=on)) for on in settings]
    lines = [
        "| bet key | wager | article | house edge (`big_bets_on_come_out=true`) | "
        "(`=false`) | exact |",
        "|---|---|---|---:|---:|---:|",
    ]
    for key in results[0].bets:
        label, article = describe(key)
        edges = [result.bets[key].house_edge for result in results]
        exacts = sorted({exact(edge) for edge in edges})
        lines.append(f"| `{key}` | {label} | {article} | "
                     + " | ".join(percent(edge) for edge in edges)
                     + f" | {', '.join(exacts)} |")
    return "\n".join(lines)


def _qpoker_markdown() -> str:
    result = odds("qpoker", QPokerOptions())
    hands = sum(result.classes.values())
    lines = ["| class | hands | probability | exact |", "|---|---:|---:|---:|"]
    for hand_class, count in result.classes.items():
        p = Fraction(count, hands)
        lines.append(f"| {hand_class.label} | {count:,} | {percent(p)} | {exact(p)} |")
    qualifies = result.probabilities["dealer_qualifies"]
    lines += [
        f"| dealer qualifies (Q-high or better) | {int(qualifies * hands):,} "
        f"| {percent(qualifies)} | {exact(qualifies)} |",
        "",
        "| bet | house edge | exact | article |",
        "|---|---:|---:|---|",
    ]
    lines += [f"| `{name}` | {percent(bet.house_edge)} | {exact(bet.house_edge)} | {bet.article} |"
              for name, bet in result.bets.items()]
    lines += ["", *_strategy_lines(result)]
    return "\n".join(lines)


def markdown(game: Game) -> str:
    """The tables of every option combination that matters to ``game``'s odds, as
    docs/rules/<game>.md shows them (``tabled odds --game GAME --markdown``)."""
    if game == "baccarat":
        return _baccarat_markdown()
    if game == "craps":
        return _craps_markdown()
    return _qpoker_markdown()
