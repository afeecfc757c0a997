"""Settlement in integer minor units (docs/rules/README.md "Money", Readings R-C2 and R-M1)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabled.contract.outcome import BetResult
from tabled.games.money import SettlementError, settle

WIN_1_1 = BetResult("win", "baccarat.art16.1", Fraction(1))
WIN_COMMISSION = BetResult("win", "baccarat.art17.1", Fraction(19, 20))


def test_even_money_win_returns_stake_and_winnings() -> None:
    s = settle(WIN_1_1, 10_000)
    assert (s.paid, s.net, s.rounding, s.stays) == (20_000, 10_000, 0, False)


def test_five_percent_commission_rounds_winnings_down_and_reports_it() -> None:
    """docs/rules/README.md "Money": winnings rounded down to the minor unit, the rounding
    reported."""
    s = settle(WIN_COMMISSION, 1_010)  # 1010 * 19/20 = 959.5
    assert (s.paid, s.net, s.rounding) == (1_969, 959, Fraction(1, 2))
    assert s.article == "baccarat.art17.1"


def test_big_bet_pays_per_unit_and_even_money_below_a_unit() -> None:
    """craps R-C2: winnings = (stake // unit) * unit_win + (stake % unit); a unit of 6 patacas."""
    big6 = BetResult("win", "craps.art9", Fraction(7, 6), unit=6)
    assert settle(big6, 600).net == 700  # one unit of 6.00 wins 7.00
    assert settle(big6, 1_300).net == 1_400 + 100  # two units + 1.00 paid 1:1
    assert settle(big6, 500).net == 500  # below one unit: 1:1 (Art. 9)
    big4 = BetResult("win", "craps.art11", Fraction(9, 5), unit=5)
    assert settle(big4, 1_000).net == 1_800
    assert settle(big4, 400).net == 400  # R-C3: below one unit (5), not "below 6"


def test_fold_loses_half_rounding_the_returned_half_down() -> None:
    """qpoker.art9.3 with Reading R-M1: an odd stake returns its half rounded down."""
    fold = BetResult("fold", "qpoker.art9.3")
    assert (settle(fold, 1_000).paid, settle(fold, 1_000).net) == (500, -500)
    s = settle(fold, 1_001)
    assert (s.paid, s.net, s.rounding) == (500, -501, Fraction(1, 2))


@pytest.mark.parametrize("result", ["push", "void"])
def test_push_and_void_return_the_stake(result: str) -> None:
    s = settle(BetResult(result, "baccarat.art11"), 2_500)  # type: ignore[arg-type]
    assert (s.paid, s.net, s.stays) == (2_500, 0, False)


@pytest.mark.parametrize("result", ["open", "off"])
def test_open_and_off_wagers_stay_on_the_layout(result: str) -> None:
    s = settle(BetResult(result), 2_500)  # type: ignore[arg-type]
    assert (s.paid, s.net, s.stays) == (0, 0, True)


def test_bad_stakes_and_wins_without_a_ratio_are_refused() -> None:
    with pytest.raises(SettlementError, match="stake -1"):
        settle(WIN_1_1, -1)
    with pytest.raises(SettlementError, match=r"stake 1\.5"):
        settle(WIN_1_1, 1.5)  # type: ignore[arg-type]
    with pytest.raises(SettlementError, match="pays ratio"):
        settle(BetResult("win"), 100)


ratios = st.builds(Fraction, st.integers(1, 40), st.integers(1, 20))


@given(st.sampled_from(["win", "lose", "push", "open", "off", "fold", "void"]), ratios,
       st.one_of(st.none(), st.integers(1, 6)), st.integers(0, 10**9))
def test_settlement_never_pays_a_losing_bet_and_never_overpays(
    result: str, ratio: Fraction, unit: int | None, stake: int
) -> None:
    bet = BetResult(result, pays=ratio if result == "win" else None, unit=unit)  # type: ignore[arg-type]
    s = settle(bet, stake)
    assert s.paid >= 0 and 0 <= s.rounding < 1
    if result == "lose":
        assert s.paid == 0 and s.net == -stake
    if result == "fold":
        assert s.paid <= stake // 2 + 1 and s.net <= 0
    if result == "win":
        assert s.net >= 0 and s.paid == stake + s.net
        if unit is None:
            assert s.net + s.rounding == stake * ratio
