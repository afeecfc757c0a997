"""What a monitor reports: a :class:`Finding` (monitor, table, round, severity, evidence).

Pure data. The pit turns a finding into an alert ``integrity:<monitor>`` (one per table,
monitor and subject that is not closed); ``tabled integrity`` prints it as a JSON line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

Severity: TypeAlias = Literal["critical", "major", "minor", "info"]

#: How bad each monitor's finding is: evidence of cheating or a broken device is critical, a
#: rate drifting from the odds or a procedure slip is for a supervisor's eye.
SEVERITY: Mapping[str, Severity] = {
    "dice": "critical", "shoe_count": "critical", "shoe_runs": "critical", "slug": "critical",
    "riffle": "critical", "frequency": "major", "result_mismatch": "major", "pace": "minor",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One monitor's finding at one table.

    ``subject`` names the condition within the monitor (``"die 1 face 6"``, ``"banker up"``,
    ``"shoe of round 412"``), the key an alert is de-duplicated by; ``message`` says it in a
    sentence a supervisor can act on; ``evidence`` holds the figures behind it (counts,
    expected counts, the statistic and its threshold, the cards). ``cleared``: the condition
    is over (only ``pace`` has conditions that end)."""

    monitor: str
    table: str
    round: int | None
    severity: Severity
    subject: str
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    cleared: bool = False

    @property
    def detail(self) -> dict[str, Any]:
        """The evidence with the subject and message: what an alert's ``detail`` carries."""
        return {"subject": self.subject, "message": self.message, **self.evidence}

    def to_json(self) -> dict[str, Any]:
        """The line ``tabled integrity`` prints: ``monitor``, ``round``, ``severity``,
        ``detail``."""
        return {"monitor": self.monitor, "round": self.round, "severity": self.severity,
                "detail": self.detail}


def finding(monitor: str, table: str, round_no: int | None, subject: str, message: str,
            **evidence: Any) -> Finding:
    return Finding(monitor, table, round_no, SEVERITY[monitor], subject, message, evidence)
