"""The simulators' ledgers: what a simulated device really dealt or threw, a JSON line a round.

Owns the ledger file (``tabled-sim FAMILY ... --ledger FILE``) and its record shape. A ledger is
the table's ground truth, written by the device's side as it plays its script: a test or a fault
campaign compares every outcome the daemon published with the round the device dealt, which
catches what a replay of the *published* events cannot (a card dealt into the wrong round
reproduces itself in replay). It never reads what the host received, and never decides an
outcome the daemon should publish: where a record carries an ``outcome`` it is the simulator's
own rules core's, fed the very events its reports stand for.

Every line is a JSON object with ``"v": 1``, ``"device"`` (the family), ``"serial"`` and
``"index"`` (1, 2, ... in the order the device played them), then the family's fields
(docs/protocols/ledger.md). Lines are flushed one by one, so a reader sees each round as soon
as the device has played it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Final

#: The ledger format's version (the ``v`` of every line).
LEDGER_VERSION: Final = 1


class Ledger:
    """An open ledger file of one simulated device."""

    def __init__(self, path: str | Path, *, device: str, serial: str) -> None:
        self.path = Path(path)
        self.device = device
        self.serial = serial
        self.index = 0
        self._file: IO[str] | None = self.path.open("w", encoding="utf-8")

    def write(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Write one round's record; return it as written."""
        self.index += 1
        record = {"v": LEDGER_VERSION, "device": self.device, "serial": self.serial,
                  "index": self.index, **fields}
        if self._file is not None:
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._file.flush()
        return record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_ledger(path: str | Path) -> list[dict[str, Any]]:
    """Every complete line of a ledger (a line still being written is left out)."""
    records = []
    for line in Path(path).read_text(encoding="utf-8").splitlines(keepends=True):
        if line.endswith("\n") and line.strip():
            records.append(json.loads(line))
    return records
