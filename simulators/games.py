"""Which game a simulated device plays, asked of the games (issue 28: the simulators name none).

Owns one question: the game a device family's simulator deals or throws — the installed game
whose demo recipe (its ``demo`` part, :class:`tabled.games.parts.demo.DemoRecipe`) names the
family. The rules of that game (where a hand ends, its options) are then the registry's. It
never names a game itself.
"""

from __future__ import annotations

import functools

from tabled.games import registry
from tabled.games.parts.demo import DemoRecipe
from tabled.simulators.errors import SimulatorError


@functools.cache
def played_on(family: str) -> str:
    """The one installed game whose demo recipe names ``family``; SimulatorError when none
    does, or more than one (a simulator of that family then needs the game named)."""
    found = [name for name in registry.games()
             if isinstance(recipe := registry.part(name, "demo"), DemoRecipe)
             and recipe.family == family]
    if len(found) != 1:
        raise SimulatorError(
            f"the {family} family's simulator plays the game whose demo recipe names the "
            f"family: {', '.join(found) or 'no installed game does'}")
    return found[0]
