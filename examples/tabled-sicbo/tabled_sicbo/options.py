"""Sic bo's pay table as declared options (RULES.md Art. 11): typed, each one validated.

Casinos differ in what sic bo pays (Macau, Atlantic City, the United Kingdom, online tables):
what a table pays is the house's declared choice, fixed for the life of a table. Each option is
a win's ``N`` of "N to 1"; the defaults are the Macau column of the public sources RULES.md
cites. A pay table that would favour the player (a win paying the true odds or more) is
refused, naming the option and the article. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Final

from tabled.games.options import OptionError

#: The outcomes of a throw of three dice, all equally likely.
OUTCOMES: Final = 6**3


def total_ways(total: int) -> int:
    """How many of the 216 throws make ``total``."""
    return sum(1 for a in range(1, 7) for b in range(1, 7) for c in range(1, 7)
               if a + b + c == total)


#: Each paying option: the throws (of 216) its win comes on, and the article that prices it. A
#: total's option pays both totals its name gives, which are equally likely (a triple making the
#: total wins it, Art. 5).
_WINS: Final[dict[str, tuple[int, str]]] = {
    "total_4_17": (total_ways(4), "sicbo.art5"),
    "total_5_16": (total_ways(5), "sicbo.art5"),
    "total_6_15": (total_ways(6), "sicbo.art5"),
    "total_7_14": (total_ways(7), "sicbo.art5"),
    "total_8_13": (total_ways(8), "sicbo.art5"),
    "total_9_12": (total_ways(9), "sicbo.art5"),
    "total_10_11": (total_ways(10), "sicbo.art5"),
    "specific_triple": (1, "sicbo.art6"),
    "any_triple": (6, "sicbo.art7"),
    "specific_double": (16, "sicbo.art8"),
    "combination": (30, "sicbo.art9"),
}
#: The largest pay any option may declare (a typing slip of a zero too many is refused).
MAX_PAYS: Final = 1000


@dataclass(frozen=True, slots=True)
class SicBoOptions:
    """The pay table (RULES.md Art. 3-11): ``N`` of "N to 1" for each wager whose pay varies
    between houses, and whether the layout offers Odd and Even (Art. 4). Big and Small pay 1 to
    1 everywhere (Art. 3), a single number 1 to 1 on one die (Art. 10)."""

    odd_even: bool = True
    total_4_17: int = 50
    total_5_16: int = 18
    total_6_15: int = 14
    total_7_14: int = 12
    total_8_13: int = 8
    total_9_12: int = 6
    total_10_11: int = 6
    specific_triple: int = 150
    any_triple: int = 24
    specific_double: int = 8
    combination: int = 5
    single_two: int = 2
    single_three: int = 3

    def __post_init__(self) -> None:
        if not isinstance(self.odd_even, bool):
            raise OptionError("odd_even", f"{self.odd_even!r} is not true or false (Art. 4)")
        for field in fields(self):
            if field.name == "odd_even":
                continue
            value = getattr(self, field.name)
            article = _WINS[field.name][1] if field.name in _WINS else "sicbo.art10"
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not 1 <= value <= MAX_PAYS:
                raise OptionError(field.name, f"{value!r} is not a whole number 1 to {MAX_PAYS} "
                                              f"(N of N to 1, {article})")
        for name, (ways, article) in _WINS.items():
            pays = getattr(self, name)
            if (pays + 1) * ways >= OUTCOMES:
                most = -(-OUTCOMES // ways) - 2  # the largest N with (N + 1) * ways < 216
                raise OptionError(name, f"{pays} to 1 on {ways} throws in {OUTCOMES} favours "
                                        f"the player ({article}, Art. 11): at most {most} to 1")
        if self.single_three < self.single_two:
            raise OptionError("single_three", f"{self.single_three} to 1 on three dice pays less "
                                              f"than {self.single_two} to 1 on two (sicbo.art10)")
        if single_number_return(self.single_two, self.single_three) >= 0:
            raise OptionError("single_two", f"{self.single_two} to 1 on two dice and "
                                            f"{self.single_three} to 1 on three favour the player "
                                            "(sicbo.art10, Art. 11)")


def single_number_return(two: int, three: int) -> Fraction:
    """The player's expected net per unit on a single number paying 1, ``two`` and ``three``
    to 1 as one, two or three dice show it (Art. 10): 75, 15 and 1 throws in 216 win, 125
    lose."""
    return Fraction(75 + 15 * two + three - 125, OUTCOMES)


__all__ = ["MAX_PAYS", "OUTCOMES", "SicBoOptions", "single_number_return", "total_ways"]
