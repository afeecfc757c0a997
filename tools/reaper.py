"""The demos' last line of defence: stops their processes and removes their work directory when
the demo itself dies without doing so (``kill -9``, an interpreter crash).

Run by :class:`tabled.tools.procs.Fleet` as ``python -m tabled.tools.reaper`` in a session of its
own (a Ctrl-C at the terminal does not reach it), it reads lines on standard input:

    group PID START    a process group the demo started (START: its start time, /proc stat
                       field 22, so that a reused process id is never killed)
    forget PID         the demo stopped that one itself
    dir PATH           remove PATH when acting
    done               the demo cleaned up itself: exit without acting

At the end of its input without ``done`` — the demo is gone, whatever killed it, since the
kernel closes the pipe — it sends SIGTERM to every process group still there, SIGKILL after
:data:`T_GRACE` seconds to any that remain, removes the directories, and exits. It never touches
a process it was not told about.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time

#: Seconds between SIGTERM and SIGKILL.
T_GRACE = 5.0


def start_time(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (``/proc/PID/stat`` field
    22), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may itself hold spaces or parentheses
    return stat.rsplit(")", 1)[1].split()[19]


def _alive(groups: dict[int, str]) -> dict[int, str]:
    return {pid: start for pid, start in groups.items() if start_time(pid) == start}


def _signal(groups: dict[int, str], signum: int) -> None:
    for pid in _alive(groups):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signum)


def main() -> int:
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    groups: dict[int, str] = {}
    dirs: list[str] = []
    for line in sys.stdin:
        word, _, rest = line.strip().partition(" ")
        if word == "done":
            return 0
        if word == "group":
            pid, _, start = rest.partition(" ")
            groups[int(pid)] = start
        elif word == "forget":
            groups.pop(int(rest), None)
        elif word == "dir":
            dirs.append(rest)
    _signal(groups, signal.SIGTERM)
    deadline = time.monotonic() + T_GRACE
    while _alive(groups) and time.monotonic() < deadline:
        time.sleep(0.1)
    _signal(groups, signal.SIGKILL)
    for path in dirs:
        shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        print(f"tabled: the demo ended without cleaning up: stopped {len(groups)} of its "
              f"processes{' and removed ' + ', '.join(dirs) if dirs else ''}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
