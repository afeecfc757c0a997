"""The scheduled report of each shift: written into ``[reports] folder`` when the shift ends.

Owns when a shift's report is due and its files' names (``shift-2026-12-04-0700.pdf``: the
shift's local start); never writes a shift twice (a file already there is kept, whoever wrote
it) and never leaves half a file (written beside, then renamed). A shift that ended while the
pit was down is written when it comes back, up to a day later. The clock is injected.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from tabled.pit.config import ReportSettings
from tabled.pit.report import render
from tabled.pit.report.figures import ReportRecord, gather
from tabled.pit.report.period import ended_shifts
from tabled.pit.store import StoreError

log = structlog.get_logger("tabled.pit.report")

#: Seconds between two looks at the clock.
T_REPORT_TICK = 30.0


class ShiftWriter:
    """Writes each ended shift's report files into the configured folder."""

    def __init__(self, settings: ReportSettings, record: ReportRecord, *,
                 clock: Callable[[], float] = time.time) -> None:
        if settings.folder is None:
            raise ValueError("[reports] folder is not set: no scheduled report")
        self.settings = settings
        self.folder: Path = settings.folder
        self.record = record
        self.clock = clock

    def name(self, start: float, fmt: str) -> Path:
        from datetime import datetime
        from zoneinfo import ZoneInfo

        local = datetime.fromtimestamp(start, ZoneInfo(self.settings.timezone))
        return self.folder / f"shift-{local:%Y-%m-%d-%H%M}.{fmt}"

    async def tick(self) -> list[Path]:
        """Write what is due now; the files written."""
        s = self.settings
        now = self.clock()
        written: list[Path] = []
        for start, end in ended_shifts(s.shifts, s.timezone, now):
            due = [fmt for fmt in s.formats if not self.name(start, fmt).exists()]
            if not due:
                continue
            report = await gather(self.record, start, end, made_at=now, timezone=s.timezone)
            for fmt in due:
                path = self.name(start, fmt)
                data = await asyncio.to_thread(render, report, fmt, s.language)
                await asyncio.to_thread(_write_new, path, data)
                written.append(path)
                log.info("report_written", path=str(path), shift_start=start, shift_end=end)
        return written

    async def run(self) -> None:
        """Look at the clock every :data:`T_REPORT_TICK` seconds; a store or disk failure is
        logged and tried again at the next look."""
        while True:
            try:
                await self.tick()
            except StoreError as exc:
                log.warning("report_store_error", error=str(exc))
            except OSError as exc:
                log.error("report_not_written", folder=str(self.folder), error=str(exc))
            await asyncio.sleep(T_REPORT_TICK)


def _write_new(path: Path, data: bytes) -> None:
    """Write ``path`` whole, unless it exists (then keep it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    part.write_bytes(data)
    try:
        os.link(part, path)  # fails if the file is there: never overwritten
    except FileExistsError:
        pass
    finally:
        part.unlink(missing_ok=True)
