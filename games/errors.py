"""The one exception root of the rules core."""

from __future__ import annotations


class RulesError(ValueError):
    """Something the rules do not allow: an option out of range, a stake that cannot be
    settled. (An event a game cannot accept is not an error: it voids a round or is declined
    with a notice.)"""
