"""The integrity monitors (issue 13, docs/integrity.md): statistical and procedural checks on
what a table publishes, each finding with its evidence and a stated false-alarm rate.

- :mod:`.stats`: Bernoulli CUSUMs, thresholds from a false-alarm budget, exact shoe tail
  bounds;
- :mod:`.calibration`: the settings and every threshold that follows from them;
- :mod:`.rates`: ``dice`` and ``frequency`` (outcome records);
- :mod:`.shoe`: ``shoe_count``, ``shoe_runs``, ``slug`` and ``riffle`` (a shoe's cards);
- :mod:`.procedure`: ``result_mismatch`` and ``pace``;
- :mod:`.table`: one table's monitors, fed in the table's order;
- :mod:`.command`: ``tabled integrity``.

They name no game: what a game is watched for is its integrity part
(:mod:`tabled.games.parts.integrity`, found through the registry); a game that declares none is
not monitored (:func:`monitored`). Pure and typed: events and records in,
:class:`~.findings.Finding` out; no I/O, no clock, no randomness. The pit (``pit/watch.py``)
turns findings into alerts.
"""

from __future__ import annotations

from tabled.pit.integrity.calibration import (
    MONITORS,
    GameSettings,
    NotMonitored,
    Settings,
    calibrate,
    monitored,
)
from tabled.pit.integrity.findings import Finding
from tabled.pit.integrity.shoe import SlugIndex
from tabled.pit.integrity.table import TableMonitors, slug_index

__all__ = ["MONITORS", "Finding", "GameSettings", "NotMonitored", "Settings", "SlugIndex",
           "TableMonitors", "calibrate", "monitored", "slug_index"]
