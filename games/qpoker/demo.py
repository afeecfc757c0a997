"""Q Poker at the demos (``tabled demo --game qpoker``, ``tabled floor``): its ``demo`` part.

Owns the recipe only (:class:`tabled.games.parts.demo.DemoRecipe`): a shuffler-dealer in its
Q Poker mode (``tabled-sim shuffler``) dealing a round each time the dealer presses "deal", the
dealer console playing the players' decisions and the reveal, and the faults a floor table
meets.
"""

from __future__ import annotations

from tabled.contract.faults import SHUFFLER_FAILURES
from tabled.games.parts.demo import DemoRecipe, SimulatorRun


def simulator_args(run: SimulatorRun) -> list[str]:
    """``tabled-sim shuffler`` in Q Poker mode: ``run.rounds`` rounds, each dealt on "deal"."""
    args = ["shuffler", "--game", "qpoker", "--seed", str(run.seed), "--rounds",
            str(run.rounds), "--pace", run.pace, "--link", f"{run.folder}/shuffler", "--step",
            "--forever"]
    for spec in run.faults:
        args += ["--fault", spec]
    return args


DEMO = DemoRecipe(
    family="shuffler",
    device_id="shuffler-1",
    simulator_args=simulator_args,
    options={"positions": 7},
    dealer=True,
    deal="deal",
    # a jam, a failure or the door: the machine stops (a round mid-deal is void, Art. 11.5)
    halts=frozenset(SHUFFLER_FAILURES),
    short="qpoker",
    describes="shuffler-dealers, dealer console",
    pace_divisor=20,  # ~9 messages a round
    script=(500, 6_000),
    script_unit="round",
    # a shuffler-dealer deals it in its qpoker mode (docs/protocols/shuffler.md)
    modes={"shuffler": "qpoker"},
    faults=(
        # a jam mid-deal (the round is void, qpoker.art11.5)
        (("jam@{n}", 5.0),),
        # the door opened mid-deal
        (("door@{n}", 5.0),),
    ),
)
