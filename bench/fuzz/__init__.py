"""tabled's fuzzing campaign (issue 5, "Fuzzing"): every decoder, the event parser, the command
gate and the rules core, fed random and mutated inputs by a seeded, reproducible loop.

Owns the registry of targets; :mod:`bench.fuzz.engine` runs them, ``python -m bench.fuzz`` is
the full campaign and ``tests/fuzz`` the bounded one (the same code, fewer inputs).
docs/reliability.md ("Fuzzing") has the figures and the commands. Nothing here is imported by
the daemon: it is a bench, not a part of tabled.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from bench.fuzz.engine import Report, Target, campaign, fuzz, run_case


@cache
def all_targets() -> Mapping[str, Target[Any]]:
    """Every target by name, in the order the campaign runs them."""
    from bench.fuzz import rules, text, wire

    return {target.name: target for target in (*wire.TARGETS, *text.TARGETS, *rules.TARGETS)}


__all__ = ["Report", "Target", "all_targets", "campaign", "fuzz", "run_case"]
