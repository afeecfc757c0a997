"""The shoe monitors, on the card stream of a game dealt from a shoe (its integrity part's
``shoe``; baccarat): ``card``, ``burn``, an unreadable card's ``fault``, ``shoe_start``: the
order the cards leave the shoe.

- ``shoe_count``: more copies of a card than the shoe has decks, or more cards than it holds
  (cards added to the shoe; the rules core voids the hand, this says why the shoe is suspect).
- ``shoe_runs``: a run of cards whose ranks step by one (a new deck's order, not shuffled), or
  of one suit, longer than a shuffled shoe holds at the per-shoe false-alarm share (exact tail
  bounds, :mod:`.stats`).
- ``slug``: a block of cards in the same order as in an earlier shoe of the floor (a replayed
  or preset "slug"), through a floor-wide :class:`SlugIndex` of every block of the last shoes.
- ``riffle``: the cards' neighbours were neighbours in this table's previous shoe far more
  often than chance (a shoe given a riffle or two instead of a shuffle): a one-sided SPRT per
  shoe on "this card followed the card before it in the previous shoe", with the exact chance
  of that given the cards still in the shoe.

O(1) per card (the riffle test: O(decks)); what is kept is the current shoe's counts and
order, the previous shoe's neighbours, and the index. Pure.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from math import ceil, log
from typing import Final

from tabled.contract.events import RANKS, SUITS
from tabled.pit.integrity.calibration import Calibration
from tabled.pit.integrity.findings import Finding, finding
from tabled.pit.integrity.stats import block_bound, rank_run_bound, suit_run_bound

#: Card codes as small integers: rank index x 4 + suit index (``AS`` 0, ``KD`` 51).
CARD_INDEX: Final = {rank + suit: r * 4 + s for r, rank in enumerate(RANKS)
                     for s, suit in enumerate(SUITS)}
CARD_NAMES: Final = tuple(sorted(CARD_INDEX, key=CARD_INDEX.__getitem__))
#: A card that left the shoe unseen (a burn not shown, an unreadable card): it breaks every
#: sequence.
UNSEEN: Final = 255
_BITS: Final = 6  # a card code fits in 6 bits: an L-card block is an exact 6L-bit key


def _names(codes: bytes | bytearray) -> list[str]:
    return [CARD_NAMES[c] if c != UNSEEN else "??" for c in codes]


@dataclass(frozen=True, slots=True)
class _Shoe:
    label: str
    cards: bytes


class SlugIndex:
    """Every ``length``-card block of the floor's last shoes, by exact key (6 bits a card).

    Bounded: two generations of up to ``horizon / 2`` shoes each; when the newer is full the
    older is dropped, so between ``horizon / 2`` and ``horizon`` shoes are remembered. A block
    of the newer generation costs one integer in a set (about 70 bytes); when the newer
    becomes the older it is frozen into a sorted array of 8-byte keys (looked up by bisection),
    so the older generation costs a ninth of that (a pit's memory after a day: the index is
    most of what grows). Each shoe's cards are kept as bytes to say where a repeated block
    came from. A shoe enters the index when it ends."""

    def __init__(self, length: int, horizon_shoes: int) -> None:
        if length < 2 or horizon_shoes < 2:
            raise ValueError("a block of at least 2 cards over at least 2 shoes")
        self.length = length
        self.horizon = horizon_shoes
        self.mask = (1 << (_BITS * length)) - 1
        self._per_generation = ceil(horizon_shoes / 2)
        self._new: set[int] = set()
        #: the older generation's keys, sorted (a set if a key does not fit in 64 bits)
        self._old: array[int] | frozenset[int] = array("Q")
        self._new_shoes: list[_Shoe] = []
        self._old_shoes: list[_Shoe] = []

    def __contains__(self, key: int) -> bool:
        if key in self._new:
            return True
        old = self._old
        if isinstance(old, frozenset):
            return key in old
        at = bisect_left(old, key)
        return at < len(old) and old[at] == key

    @property
    def shoes(self) -> int:
        return len(self._new_shoes) + len(self._old_shoes)

    @property
    def blocks(self) -> int:
        return len(self._new) + len(self._old)

    def keys(self, cards: bytes | bytearray) -> Iterator[int]:
        """The key of every block of seen cards in ``cards``."""
        key, run, mask, length = 0, 0, self.mask, self.length
        for code in cards:
            if code == UNSEEN:
                key = run = 0
                continue
            key = ((key << _BITS) | code) & mask
            run += 1
            if run >= length:
                yield key

    def add(self, label: str, cards: bytes | bytearray) -> None:
        """A shoe that ended: its blocks are remembered."""
        if len(self._new_shoes) >= self._per_generation:
            self._old = (array("Q", sorted(self._new)) if _BITS * self.length <= 64
                         else frozenset(self._new))
            self._old_shoes = self._new_shoes
            self._new, self._new_shoes = set(), []
        self._new.update(self.keys(cards))
        self._new_shoes.append(_Shoe(label, bytes(cards)))

    def locate(self, block: bytes) -> tuple[str, int] | None:
        """The newest remembered shoe holding ``block``, and where (from 0), if any."""
        for shoe in reversed(self._old_shoes + self._new_shoes):
            at = shoe.cards.find(block)
            if at >= 0:
                return shoe.label, at
        return None


class ShoeMonitor:
    """The shoe monitors of one table dealt from a shoe (each may be switched off)."""

    def __init__(self, calibration: Calibration, table: str = "",
                 slugs: SlugIndex | None = None, *, count: bool = True, runs: bool = True,
                 riffle: bool = True) -> None:
        self.calibration = calibration
        self.table = table
        self.slugs = slugs
        self.count_on, self.runs_on, self.riffle_on = count, runs, riffle
        self.shoes = 0
        decks = getattr(calibration.options, "decks", 8)
        self._start(decks, None)
        self._previous: list[tuple[int, ...]] | None = None  # the previous shoe's neighbours

    # -- shoes ------------------------------------------------------------------------------

    def _start(self, decks: int, round_no: int | None) -> None:
        self.decks = max(decks, 1)
        self.limits = self.calibration.shoe(self.decks)
        self.shoe_round = round_no
        self.counts = [0] * 52
        self.out = 0
        self.seen = 0
        self.reported: set[int] = set()
        self.overflow_reported = False
        self.cards = bytearray()
        self.prev = -1
        self.up = self.down = self.suit = 0
        self.rank_reported = self.suit_reported = False
        self.key = 0
        self.run = 0
        self.matching = False
        self.sprt = 0.0
        self.pairs = self.kept = 0
        self.expected = 0.0
        self.riffle_reported = False

    @property
    def label(self) -> str:
        where = f"{self.table} " if self.table else ""
        return where + (f"shoe of round {self.shoe_round}" if self.shoe_round is not None
                        else "first shoe heard")

    def new_shoe(self, decks: int, round_no: int | None) -> None:
        """``shoe_start``: the current shoe ends (its blocks enter the floor's index, its
        neighbours are kept for the next shoe's riffle test) and a new one begins."""
        self._close()
        self._start(decks, round_no)

    def _close(self) -> None:
        if self.seen < 2:
            return
        self.shoes += 1
        if self.slugs is not None:
            self.slugs.add(self.label, self.cards)
        if self.riffle_on:
            followers: list[set[int]] = [set() for _ in range(52)]
            before = UNSEEN
            for code in self.cards:
                if before != UNSEEN and code != UNSEEN:
                    followers[before].add(code)
                before = code
            self._previous = [tuple(sorted(f)) for f in followers]

    def broken(self) -> None:
        """Messages were lost: the order is broken here (as by an unseen card, uncounted)."""
        self.cards.append(UNSEEN)
        self.prev = -1
        self.up = self.down = self.suit = 0
        self.key = self.run = 0
        self.matching = False

    # -- cards ------------------------------------------------------------------------------

    def card(self, card: str | None, round_no: int | None) -> list[Finding]:
        """One card out of the shoe (``None``: it left unseen)."""
        if self.shoe_round is None:
            self.shoe_round = round_no
        self.out += 1
        found: list[Finding] = []
        if self.count_on and self.out > 52 * self.decks and not self.overflow_reported:
            self.overflow_reported = True
            found.append(finding(
                "shoe_count", self.table, round_no, f"{self.label} overflow",
                f"{self.out} cards out of a shoe of {self.decks} decks, which holds "
                f"{52 * self.decks}: cards were added to the shoe", shoe=self.label,
                cards_out=self.out, decks=self.decks, capacity=52 * self.decks))
        code = CARD_INDEX.get(card) if card is not None else None
        if code is None:
            self.broken()
            return found
        prev = self.prev
        if self.riffle_on and prev >= 0 and self._previous is not None \
                and not self.riffle_reported:
            self._riffle(prev, code, round_no, found)
        counts = self.counts
        counts[code] += 1
        self.seen += 1
        if counts[code] > self.decks and code not in self.reported and self.count_on:
            self.reported.add(code)
            found.append(finding(
                "shoe_count", self.table, round_no, f"{self.label} {card}",
                f"{card} came out {counts[code]} times from a shoe of {self.decks} decks "
                "(it holds one per deck): cards were added to the shoe", shoe=self.label,
                card=card, copies=counts[code], decks=self.decks, position=self.out - 1))
        self.cards.append(code)
        if self.runs_on:
            self._runs(prev, code, round_no, found)
        if self.slugs is not None:
            self._slug(code, round_no, found)
        self.prev = code
        return found

    def _runs(self, prev: int, code: int, round_no: int | None, found: list[Finding]) -> None:
        if prev < 0:
            self.up = self.down = self.suit = 1
            self.rank_reported = self.suit_reported = False
            return
        step = ((code >> 2) - (prev >> 2)) % 13
        up = self.up + 1 if step == 1 else 1
        down = self.down + 1 if step == 12 else 1
        suit = self.suit + 1 if (code & 3) == (prev & 3) else 1
        if up == 1 and down == 1:
            self.rank_reported = False
        if suit == 1:
            self.suit_reported = False
        self.up, self.down, self.suit = up, down, suit
        limits = self.limits
        longest = max(up, down)
        if longest >= limits.rank_run and not self.rank_reported:
            self.rank_reported = True
            cards = _names(self.cards[-longest:])
            way = "up" if up >= down else "down"
            found.append(finding(
                "shoe_runs", self.table, round_no, f"{self.label} ranks",
                f"{longest} cards in a row step {way} one rank at a time ({' '.join(cards)}): "
                f"a shuffled shoe of {self.decks} decks holds such a run anywhere with a chance "
                f"below {rank_run_bound(longest, self.decks):.1e} (the limit is "
                f"{limits.rank_run} cards): a block not shuffled, such as a new deck's order",
                shoe=self.label, kind="rank", direction=way, length=longest, cards=cards,
                position=self.out - longest, limit=limits.rank_run,
                chance_below=rank_run_bound(longest, self.decks), alpha=limits.alpha))
        if suit >= limits.suit_run and not self.suit_reported:
            self.suit_reported = True
            cards = _names(self.cards[-suit:])
            found.append(finding(
                "shoe_runs", self.table, round_no, f"{self.label} suits",
                f"{suit} cards in a row of one suit ({' '.join(cards)}): a shuffled shoe of "
                f"{self.decks} decks holds such a run anywhere with a chance below "
                f"{suit_run_bound(suit, self.decks):.1e} (the limit is {limits.suit_run} "
                "cards): a block not shuffled", shoe=self.label, kind="suit", length=suit,
                cards=cards, position=self.out - suit, limit=limits.suit_run,
                chance_below=suit_run_bound(suit, self.decks), alpha=limits.alpha))

    def _slug(self, code: int, round_no: int | None, found: list[Finding]) -> None:
        slugs = self.slugs
        assert slugs is not None
        self.key = key = ((self.key << _BITS) | code) & slugs.mask
        self.run += 1
        if self.run < slugs.length:
            return
        if key not in slugs:
            self.matching = False
            return
        if self.matching:
            return  # the same repeated block, one card longer
        self.matching = True
        length = slugs.length
        block = bytes(self.cards[-length:])
        source = slugs.locate(block)
        cards = _names(block)
        where = f" ({source[0]}, cards {source[1] + 1}-{source[1] + length})" if source else ""
        chance = block_bound(length, self.decks, slugs.blocks)
        found.append(finding(
            "slug", self.table, round_no, f"{self.label} block",
            f"{length} cards came out in the order they had in an earlier shoe of the "
            f"floor{where}: {' '.join(cards)}; a shuffled shoe repeats a block of the last "
            f"{slugs.shoes} shoes with a chance below {chance:.1e}: a replayed or preset "
            "block (a slug)", shoe=self.label, length=length, cards=cards,
            position=self.out - length, source=None if source is None else {
                "shoe": source[0], "position": source[1]},
            shoes_remembered=slugs.shoes, chance_below=chance,
            alpha=self.limits.alpha))

    def _riffle(self, prev: int, code: int, round_no: int | None,
                found: list[Finding]) -> None:
        previous = self._previous
        assert previous is not None
        followers = previous[prev]
        if not followers:
            return
        decks, counts = self.decks, self.counts
        left = 52 * decks - self.seen
        if left <= 0:
            return
        chance = sum(max(decks - counts[c], 0) for c in followers) / left
        if not 0.0 < chance < 1.0:
            return  # certain either way: no evidence
        kept = code in followers
        riffled = (1.0 + chance) / 2.0  # one riffle: the same packet's next card half the time
        self.sprt += log(riffled / chance) if kept else log((1.0 - riffled) / (1.0 - chance))
        self.pairs += 1
        self.kept += kept
        self.expected += chance
        h = self.limits.riffle_h
        if self.sprt >= h:
            self.riffle_reported = True
            found.append(finding(
                "riffle", self.table, round_no, f"{self.label} riffle",
                f"{self.kept} of {self.pairs} cards followed the card they followed in this "
                f"table's previous shoe ({self.expected:.1f} expected by chance): the shoe "
                f"was riffled, not shuffled; the evidence ({self.sprt:.1f}) reached its "
                f"threshold ({h:.1f}: a chance of {self.limits.alpha:.1e} per fair shoe)",
                shoe=self.label, pairs=self.pairs, kept=self.kept,
                expected=round(self.expected, 2), sprt=round(self.sprt, 3),
                threshold=round(h, 3), alpha=self.limits.alpha))
