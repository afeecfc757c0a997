"""The device states are one type of the contract (``contract/devices.py`` ``DeviceState``) and
docs/mqtt.md cannot drift from it: the ``state`` column of its ``…/device/<id>/status`` table
lists exactly the enum's members, and the refused device's reason is the one the table names."""

from __future__ import annotations

import re
from pathlib import Path

from tabled.contract.devices import REASON_DAEMON_STOPPING, REASON_WRONG_DEVICE, DeviceState

DOCS = Path(__file__).resolve().parents[2] / "docs"


def status_table(doc: str) -> dict[str, str]:
    """The rows of the table under ``## `…/device/<id>/status``` (after its header): state ->
    the rest of the row."""
    text = (DOCS / doc).read_text()
    section = text.split("## `…/device/<id>/status`", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|---")) + 1
    rows = [line for line in lines[start:] if line.startswith("|")]
    assert rows, f"no state table in {doc}"
    out: dict[str, str] = {}
    for row in rows:
        match = re.match(r"\| `([a-z_]+)` \|(.*)", row)
        assert match, row
        assert match[1] not in out, f"{match[1]} twice"
        out[match[1]] = match[2]
    return out


def test_the_mqtt_doc_lists_exactly_the_contract_s_device_states() -> None:
    table = status_table("mqtt.md")
    assert list(table) == [s.value for s in DeviceState]


def test_the_reasons_of_the_contract_are_the_documented_ones() -> None:
    table = status_table("mqtt.md")
    assert f"`reason` `{REASON_WRONG_DEVICE}`" in table[DeviceState.UNAVAILABLE]
    assert f'`reason: "{REASON_DAEMON_STOPPING}"`' in table[DeviceState.STOPPED]
    pit = (DOCS / "pit.md").read_text()
    assert f"a status `unavailable` with `reason` `{REASON_WRONG_DEVICE}`" in pit
    # no state of that name: it is a reason (it had drifted into a state: issue 28)
    assert REASON_WRONG_DEVICE not in {s.value for s in DeviceState}
    assert "a status `wrong_device`" not in pit
