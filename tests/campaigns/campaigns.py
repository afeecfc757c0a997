"""The fault campaigns of docs/reliability.md: crashes, broker outages, device unplugs and disk
trouble, each ending with an audit of what a consumer received against the journal, against a
replay of itself, and against what the simulated device really dealt (its ledger).

Beside each campaign's own fault, the device's script has a few faults of the table itself
(:func:`table_faults`: unreadable cards and VOID presses at the shoe, no-rolls, cocked dice and
sensor faults at the dice, the shuffler halting and the dealer's card exposed), so that the
audit against the ledger meets the device's own voids too.

Each campaign takes its sizes as arguments: the test suite runs them small
(``tests/campaigns/test_campaigns.py``), ``python -m tests.campaigns`` runs them in full and prints
the figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.campaigns.rig import Audit, Table

GAMES = ("baccarat", "craps", "qpoker")


@dataclass
class Report:
    campaign: str
    game: str
    audit: Audit
    seconds: float
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.audit.ok and not self.figures.get("problems")

    def summary(self) -> dict[str, Any]:
        return {"campaign": self.campaign, "game": self.game, "ok": self.ok,
                "seconds": round(self.seconds, 1), **self.figures,
                "audit": self.audit.summary()}


def table_faults(game: str, rounds: int, seed: int, *, every: int = 40) -> list[str]:
    """What goes wrong at the table itself over ``rounds`` rounds, about once every ``every``
    (at least three), as ``tabled-sim --fault`` values, seeded: at the shoe an unreadable card,
    a VOID press or a BURN press mid-hand (pulls counted from 1); at the dice a no-roll, a
    cocked die or a sensor fault (reports counted from 1); at the shuffler a jam, a failure or
    the door opened (hands counted from 1), or the dealer's card exposed (a round). None
    changes how many rounds the device deals; each no-roll and sensor fault is a report more."""
    rng = random.Random(seed * 7919 + rounds)
    count = max(3, rounds // every)
    if game == "baccarat":  # a hand takes 4 to 6 pulls, every shoe begins with its burn
        kinds = ("unreadable", "void", "burn")
        spots = sorted(rng.sample(range(12, rounds * 4), count))
        return [f"{kinds[i % len(kinds)]}@{n}" for i, n in enumerate(spots)]
    if game == "craps":
        kinds = ("off_table", "cocked", "sensor")
        spots = sorted(rng.sample(range(3, rounds), count))
        return [f"{kinds[i % len(kinds)]}@{n}" for i, n in enumerate(spots)]
    halts = ("jam", "failure", "door")  # a round has one to seven seats and the dealer
    spots = sorted(rng.sample(range(3, rounds * 3), count))
    faults = [f"{halts[i % len(halts)]}@{n}" for i, n in enumerate(spots)]
    exposed = sorted(rng.sample(range(2, rounds), max(1, count // 3)))
    return faults + [f"exposed@dealer:{r}" for r in exposed]


# -- crashes ------------------------------------------------------------------------------------


async def crash_campaign(game: str, workdir: Path, *, rounds: int, kills: int,
                         seed: int = 1, pace: float = 0.004) -> Report:
    """``kill -9`` the daemon at ``kills`` random moments over ``rounds`` rounds; after each
    restart the daemon rebuilds its state from the journal."""
    rng = random.Random(seed)
    started = time.monotonic()
    faults = table_faults(game, rounds, seed)
    async with Table(game, workdir, rounds=rounds, seed=seed, pace=pace,
                     faults=faults) as table:
        # spread the kills over the run: after every k-th outcome, at a random moment
        marks = sorted(rng.sample(range(1, rounds), min(kills, rounds - 1)))
        for mark in marks:
            await table.outcomes(mark)
            await asyncio.sleep(rng.uniform(0, 0.03))  # mid-deal, mid-publish or mid-commit
            table.daemon.kill9()
            await table.restart()
        await table.finish()
        audit = table.audit()
        starts = table.starts()
    mid_round = sum(1 for s in starts[1:] if s["round_open"])
    return Report("crash", game, audit, time.monotonic() - started,
                  {"kills": len(marks), "restarts_mid_round": mid_round,
                   "restarts": len(starts) - 1, "table_faults": faults,
                   "problems": _host_voids(audit, allowed=())})


# -- broker outages -----------------------------------------------------------------------------


async def broker_campaign(game: str, workdir: Path, *, rounds: int, outages: int,
                          long_outage: float, seed: int = 2, pace: float = 0.01) -> Report:
    """Stop the broker ``outages`` times for random spans; the last one is long
    (``long_outage`` seconds), during which the table deals at full pace, so that its backlog
    is what several minutes of a real table would leave (time compressed by the pace)."""
    rng = random.Random(seed)
    started = time.monotonic()
    spans = []
    faults = table_faults(game, rounds, seed)
    async with Table(game, workdir, rounds=rounds, seed=seed, pace=pace,
                     faults=faults) as table:
        marks = sorted(rng.sample(range(2, rounds // 2), outages))
        for i, mark in enumerate(marks):
            await table.outcomes(mark)
            span = long_outage if i == len(marks) - 1 else rng.uniform(0.3, 2.0)
            table.broker.stop()
            before = table.sub.distinct("/outcome")
            await asyncio.sleep(span)
            table.broker.start()
            spans.append(round(span, 2))
            del before
        await table.finish()
        audit = table.audit()
        backlog = _max_metric(table, "queue_depth")
    return Report("broker", game, audit, time.monotonic() - started,
                  {"outages": len(spans), "spans_s": spans, "max_queue_depth_seen": backlog,
                   "table_faults": faults, "problems": _host_voids(audit, allowed=())})


def _host_voids(audit: Audit, allowed: tuple[str, ...]) -> list[str]:
    """A round the device dealt whole that the daemon voided (naming why) is lost to the
    players all the same: only the campaigns whose fault the rules answer with a void allow
    it, under the article ``allowed`` names."""
    if audit.truth is None:
        return []
    extra = {a: n for a, n in audit.truth.voided_by_host.items() if a not in allowed}
    return [f"rounds the device dealt whole, voided by the daemon: {extra}"] if extra else []


def _max_metric(table: Table, name: str) -> int:
    values = [m.get(name, 0) for m in table.sub.on("/metrics")]
    return max(values, default=0)


# -- device unplug / replug ---------------------------------------------------------------------


def _unplug_faults(game: str, cycles: int, rounds: int, rng: random.Random,
                   down: float) -> list[str]:
    """``cycles`` unplugs at random data frames of the run (the dice count reports), at least
    six frames apart so that each is a separate unplug with a daemon connected to see it."""
    per_round = {"baccarat": 5, "craps": 1, "qpoker": 5}[game]
    slots = range(10, max(10 + 6 * cycles, rounds * per_round - 5), 6)
    frames = sorted(rng.sample(slots, cycles))
    kind = "unplug" if game == "craps" else "disconnect"
    return [f"{kind}@{n}:{down}" for n in frames]


async def device_campaign(game: str, workdir: Path, *, rounds: int, cycles: int,
                          seed: int = 3, pace: float = 0.01, down: float = 0.3) -> Report:
    """Unplug and replug the table's device ``cycles`` times at random points in rounds.
    Expected, by the rules: a shoe back within ``lost_void_after`` continues its hand (no void);
    a shuffler lost while dealing voids the round (qpoker.art11.5), one lost between rounds
    voids nothing; a dice sensor loses no roll."""
    rng = random.Random(seed)
    unplugs = _unplug_faults(game, cycles, rounds, rng, down)
    faults = table_faults(game, rounds, seed)
    if game == "craps":
        pace = max(pace, 0.06)  # the sensor throws on its own clock: let the daemon be there
    started = time.monotonic()
    async with Table(game, workdir, rounds=rounds, seed=seed, pace=pace,
                     faults=unplugs + faults,
                     device_options={"lost_void_after": 30.0}) as table:
        await table.finish()
        audit = table.audit()
        events = table.sub.on("/event")
    losses = sum(1 for e in events if e.get("code") == "device_lost")
    problems = _check_device_consequences(game, audit, losses, cycles)
    return Report("devices", game, audit, time.monotonic() - started,
                  {"unplugs_scheduled": cycles, "losses_seen": losses,
                   "voids": dict(audit.voids), "table_faults": faults, "problems": problems})


def _check_device_consequences(game: str, audit: Audit, losses: int,
                               cycles: int) -> list[str]:
    """By the rules: a shoe back within ``lost_void_after`` and a dice sensor void nothing
    (every void is one the device's own round has); a shuffler lost while dealing voids its
    round under qpoker.art11.5, naming the loss."""
    problems = []
    if losses == 0:
        problems.append(f"{cycles} unplugs scheduled, none seen by the daemon")
    problems += _host_voids(audit, allowed=("qpoker.art11.5",) if game == "qpoker" else ())
    return problems


# -- disk trouble --------------------------------------------------------------------------------


#: Found by the disk campaign (Q Poker, most runs): the journal's probe (then a small write to
#: its meta table) passed on a disk that was still full — it landed in WAL space that the commit
#: which failed left behind — so the daemon said ``journal_recovered`` and ``online``, and failed
#: on its next commit (a second ``journal_failure`` within ~50 ms). Fixed in daemon/journal.py
#: (the probe now writes like a busy commit); a campaign that sees it again fails.
FALSE_RECOVERY = ("full: the daemon said it recovered (status online) while the disk was "
                  "still full, then failed again")
#: Defects reported and not yet fixed: a campaign that sees one passes with a warning.
KNOWN_DEFECTS: tuple[str, ...] = ()

EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32): the filesystem fails all I/O


def can_mount() -> str | None:
    """Why a small ext4 filesystem on a loop device cannot be mounted here, or None."""
    if os.geteuid() != 0:
        return "mounting a small filesystem for the journal needs root"
    for tool in ("mount", "umount", "mkfs.ext4"):
        if shutil.which(tool) is None:
            return f"no {tool} command"
    probe = Path(tempfile.mkdtemp(prefix="tabled-mount-"))
    try:
        return _mount(probe / "img", probe / "mnt", size_mb=4) or _umount(probe / "mnt")
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def _mount(image: Path, mount: Path, size_mb: int) -> str | None:
    mount.mkdir(parents=True, exist_ok=True)
    if not image.exists():
        with open(image, "wb") as fh:
            fh.truncate(size_mb * 1024 * 1024)
        # -m 0: no blocks reserved for root (the daemon runs as root in the tests)
        made = subprocess.run(["mkfs.ext4", "-q", "-m", "0", str(image)], capture_output=True,
                              text=True, check=False)
        if made.returncode:
            return f"mkfs.ext4 failed: {made.stderr.strip()}"
    proc = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True,
                          text=True, check=False)
    return f"cannot mount a loop device: {proc.stderr.strip()}" if proc.returncode else None


def _umount(mount: Path, attempts: int = 40) -> str | None:
    """Unmount ``mount``; why not, if it stays mounted. A filesystem still in use cannot be
    unmounted, and then ``mount -o loop`` of the same image silently joins the old (dead)
    filesystem: so it is retried, and a failure says who holds it. (``os.path.ismount``
    cannot tell: a dead filesystem's root does not stat.)"""
    stderr = ""
    for attempt in range(attempts):
        proc = subprocess.run(["umount", str(mount)], capture_output=True, text=True,
                              check=False)
        if proc.returncode == 0 or "not mounted" in proc.stderr:
            if attempt:
                print(f"umount {mount}: done at attempt {attempt + 1} ({stderr})",
                      file=sys.stderr)
            return None
        stderr = proc.stderr.strip()
        time.sleep(0.25)
    holders = subprocess.run(["fuser", "-vm", str(mount)], capture_output=True, text=True,
                             check=False)
    return f"cannot unmount {mount}: {stderr}; {holders.stderr.strip()}"


def _shut_down(mount: Path) -> None:
    """The disk dies: every later read or write on the filesystem fails with EIO."""
    import fcntl
    import struct

    fd = os.open(mount, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", 0))  # flush, then shut down
    finally:
        os.close(fd)


async def disk_campaign(game: str, workdir: Path, *, rounds: int, seed: int = 4,
                        pace: float = 0.08) -> Report:
    """The journal's disk (ext4 on a loop device) first fills up, then dies (I/O errors).
    Each time the daemon must raise and publish ``journal_failure``, say ``degraded``, take no
    new events (the device keeps them), and never publish an outcome it could not journal.
    A full disk recovers by itself once space is freed; after a dead disk is repaired (here:
    remounted) the restarted daemon continues from its journal. Every round completes."""
    image, mount = workdir / "disk.img", workdir / "disk"
    problem = _mount(image, mount, size_mb=8)
    if problem:
        raise RuntimeError(problem)
    started = time.monotonic()
    figures: dict[str, Any] = {"problems": []}

    async def degraded(table: Table, trouble: str) -> None:
        faults_before = len(table.sub.on("/fault"))
        statuses_before = len(table.sub.on("/t1/status"))
        await _wait(lambda: any(f.get("code") == "journal_failure"
                                for f in table.sub.on("/fault")[faults_before:]), 30)
        received = table.sub.distinct("/outcome")
        await asyncio.sleep(1.5)  # degraded: nothing new may be reported
        if table.sub.distinct("/outcome") > received:
            figures["problems"].append(f"{trouble}: an outcome was published while degraded")
        states = [m.get("state") for m in table.sub.on("/t1/status")[statuses_before:]]
        after = states[states.index("degraded") + 1:] if "degraded" in states else []
        if trouble == "full" and any(state != "degraded" for state in after):
            figures["problems"].append(FALSE_RECOVERY)  # the disk is still full
        elif states[-1:] != ["degraded"]:
            figures["problems"].append(f"{trouble}: the status does not say degraded")
        figures[f"{trouble}_outcomes_before"] = received
        figures[f"{trouble}_status_seen"] = states

    faults = table_faults(game, rounds, seed)
    figures["table_faults"] = faults
    if game == "craps":
        # the sensor keeps 64 unacknowledged reports: while the daemon is degraded or being
        # restarted, they must last (0.2 s a throw: 13 s; a real table: most of an hour)
        pace = max(pace, 0.2)
    try:
        async with Table(game, workdir, rounds=rounds, seed=seed, pace=pace, faults=faults,
                         journal=mount / "journal.sqlite") as table:
            await table.outcomes(rounds // 4)
            filler = mount / "filler"
            with open(filler, "wb", buffering=0) as fh, contextlib.suppress(OSError):
                while True:  # fill the disk to the last block
                    fh.write(b"\0" * 65536)
                    fh.flush()
            await degraded(table, "full")
            filler.unlink()  # space again: the daemon's probe finds it and goes on
            await table.outcomes(figures["full_outcomes_before"] + 2, timeout=60)
            await table.outcomes(rounds // 2)
            _shut_down(mount)
            await degraded(table, "dead")
            table.daemon.stop()  # the operator repairs the disk and restarts the service
            problem = _umount(mount) or _mount(image, mount, size_mb=8)
            if problem:
                raise RuntimeError(problem)
            await table.restart()
            await table.finish()
            audit = table.audit()
            figures["problems"] += _host_voids(audit, allowed=())
            figures["journal_failures_reported"] = sum(
                1 for f in table.sub.on("/fault") if f.get("code") == "journal_failure")
    finally:
        _umount(mount)
    return Report("disk", game, audit, time.monotonic() - started, figures)


async def _wait(condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the campaign's condition")
        await asyncio.sleep(0.1)


def dump(reports: list[Report], path: Path | None = None) -> str:
    text = json.dumps([r.summary() for r in reports], indent=2)
    if path is not None:
        path.write_text(text + "\n")
    return text
