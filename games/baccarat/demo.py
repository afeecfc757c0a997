"""Baccarat at the demos (``tabled demo --game baccarat``, ``tabled floor``): its ``demo`` part.

Owns the recipe only (:class:`tabled.games.parts.demo.DemoRecipe`): a card-reading shoe
(``tabled-sim shoe``) on a pseudo-terminal, dealing shoe after shoe by itself, and the faults a
floor table meets.
"""

from __future__ import annotations

from tabled.games.parts.demo import DemoRecipe, SimulatorRun


def simulator_args(run: SimulatorRun) -> list[str]:
    """``tabled-sim shoe``: ``run.rounds`` hands (or for ever), its link in the run's folder."""
    args = ["shoe", "--seed", str(run.seed)]
    if run.rounds is not None:
        args += ["--hands", str(run.rounds)]
    args += ["--pace", run.pace, "--link", f"{run.folder}/shoe"]
    if run.table is not None:
        args += ["--serial", f"SHOE-{run.table}"]
    args.append("--forever")
    for spec in run.faults:
        args += ["--fault", spec]
    return args


DEMO = DemoRecipe(
    family="shoe",
    device_id="shoe-1",
    simulator_args=simulator_args,
    options={"method": 1, "commission": "five_percent", "last_hand": "this", "decks": 8},
    short="bac",
    describes="card-reading shoes",
    pace_divisor=5,  # 4 to 6 cards a hand
    # a shuffler-dealer deals it in its baccarat mode (docs/protocols/shuffler.md)
    modes={"shuffler": "baccarat"},
    faults=(
        # unplugged 3 s (below lost_void_after: device_lost, then connected again)
        (("disconnect@{n}:3", 6.0),),
        # an unreadable card and a dirty sensor (faults the dealer deals with)
        (("unreadable@{n}", 5.0), ("dirty@{n}", 5.0)),
    ),
)
