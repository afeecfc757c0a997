"""Craps at the demos (``tabled demo --game craps``, ``tabled floor``): its ``demo`` part.

Owns the recipe only (:class:`tabled.games.parts.demo.DemoRecipe`): a dice sensor on the
simulated USB bus (``tabled-sim dice``), throwing by itself, and the faults a floor table meets.
"""

from __future__ import annotations

from tabled.games.parts.demo import DemoRecipe, SimulatorRun


def simulator_args(run: SimulatorRun) -> list[str]:
    """``tabled-sim dice``: ``run.rounds`` throws, its socket in the run's folder."""
    args = ["dice", "--seed", str(run.seed), "--count", str(run.rounds), "--pace", run.pace,
            "--socket", f"{run.folder}/dice.sock"]
    if run.table is not None:
        args += ["--serial", f"DS-{run.table}"]
    args.append("--forever")
    for spec in run.faults:
        args += ["--fault", spec]
    return args


DEMO = DemoRecipe(
    family="dice",
    device_id="dice-1",
    simulator_args=simulator_args,
    options={"big_bets_on_come_out": True},
    url_line=2,  # the dice simulator prints its socket, then the URL
    short="craps",
    describes="dice sensors on the USB bus",
    pace_divisor=2,  # throws come faster than hands
    script=(1_000, 50_000),
    script_unit="device",
    faults=(
        # a cocked die (read by the face most clearly up, Art. 1)
        (("cocked@{n}", 1.0),),
        # the sensor unplugged from the USB bus for 2 s, and a die off the table (no roll)
        (("unplug@{n}:2", 1.0), ("off_table@{n}", 1.0)),
    ),
)
