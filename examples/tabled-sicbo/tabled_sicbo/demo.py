"""Sic bo at the demos (``tabled demo --game sicbo``, ``tabled floor``): its ``demo`` part.

Owns the recipe only (:class:`tabled.games.parts.demo.DemoRecipe`): a three-dice sensor on a
pseudo-terminal (``tabled-sim sicbo_dice``, this package's family), shaking by itself, and the
faults a floor table meets. It starts nothing: the tools read it.
"""

from __future__ import annotations

from typing import Final

from tabled.games.parts.demo import DemoRecipe, SimulatorRun

from tabled_sicbo.sensor.protocol import SERIAL_MAX

#: Shakes of a sensor told to play "as many as it can" (its --shakes bound).
FOREVER: Final = 100_000


def simulator_args(run: SimulatorRun) -> list[str]:
    """``tabled-sim sicbo_dice``: ``run.rounds`` shakes, its pty's link in the run's folder."""
    args = ["sicbo_dice", "--seed", str(run.seed),
            "--shakes", str(FOREVER if run.rounds is None else min(run.rounds, FOREVER)),
            "--pace", run.pace, "--link", f"{run.folder}/sb3d"]
    if run.table is not None:
        args += ["--serial", f"SB3D-{run.table}"[:SERIAL_MAX]]
    args.append("--forever")
    for spec in run.faults:
        args += ["--fault", spec]
    return args


DEMO = DemoRecipe(
    family="sicbo_dice",
    device_id="dice-1",
    simulator_args=simulator_args,
    options={"odd_even": True},
    url_line=1,  # the simulator prints "path: ..." first
    short="sicbo",
    describes="three-dice sensors on serial links (example game)",
    pace_divisor=2,  # a throw comes faster than a hand
    script=(1_000, FOREVER),
    script_unit="device",
    faults=(
        # a die not lying flat: the throw is void (Art. 2.1)
        (("not_flat@{n}", 1.0),),
        # dice stacked, then the shaker jams (a sensor fault)
        (("stacked@{n}", 1.0), ("jam@{n}", 1.0)),
    ),
)

__all__ = ["DEMO", "simulator_args"]
