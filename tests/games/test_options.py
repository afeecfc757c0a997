"""The regulated options (Baccarat Art. 18): parsed from strings, validated, declared."""

from __future__ import annotations

import pytest

from tabled.games.baccarat.options import BaccaratOptions
from tabled.games.craps.options import CrapsOptions
from tabled.games.options import OptionError, declare
from tabled.games.qpoker.options import QPokerOptions
from tabled.games.registry import parse_options


def test_parse_and_declare() -> None:
    opts = parse_options("baccarat", {"method": "2", "commission": "half_on_four",
                                      "last_hand": "one_more", "decks": "6"})
    assert opts == BaccaratOptions(method=2, commission="half_on_four", last_hand="one_more",
                                   decks=6)
    assert declare(opts) == {"method": 2, "commission": "half_on_four",
                             "last_hand": "one_more", "decks": 6}
    assert parse_options("craps", {"big_bets_on_come_out": "false"}) == CrapsOptions(False)
    assert parse_options("qpoker", {}) == QPokerOptions()


@pytest.mark.parametrize(
    ("game", "raw", "key", "reason"),
    [
        ("baccarat", {"method": "3"}, "method", "not 1 or 2 (Art. 9)"),
        ("baccarat", {"method": "one"}, "method", "not an integer"),
        ("baccarat", {"commission": "ten"}, "commission", "Art. 17"),
        ("baccarat", {"last_hand": "two_more"}, "last_hand", "Art. 3"),
        ("baccarat", {"decks": "4"}, "decks", "6 to 12 (Art. 1)"),
        ("baccarat", {"tie_pays": "8"}, "tie_pays", "unknown for baccarat"),
        ("craps", {"big_bets_on_come_out": "maybe"}, "big_bets_on_come_out", "true or false"),
        ("qpoker", {"positions": "5"}, "positions", "Art. 2"),
    ],
)
def test_bad_options_name_the_key_and_the_reason(
    game: str, raw: dict[str, str], key: str, reason: str
) -> None:
    with pytest.raises(OptionError) as info:
        parse_options(game, raw)
    assert info.value.key == key
    assert reason in info.value.reason
