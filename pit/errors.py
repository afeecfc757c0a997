"""The one exception root of the pit monitor."""

from __future__ import annotations


class PitError(Exception):
    """Everything the pit raises on purpose: a bad config, a malformed message, a refused
    action, a store that fails."""
