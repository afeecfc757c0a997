"""A ``tabled pit`` as the reconciliation tests run it: its config (a real broker, a SQLite
record, the floor's fetch key, short reconciliation timers), started as a real process in its
own session, stopped with SIGTERM (SIGKILL after 20 s)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tabled.daemon.broker import Mosquitto


def reconcile_config(path: Path, broker: Mosquitto, store: Path, key: Path, *, pit_id: str,
                     gap_deadline: float, grace: float, request_timeout: float) -> Path:
    """A pit config with a persistent session and reconciliation on; written to ``path``."""
    path.write_text("\n".join([
        "[pit]", f'id = "{pit_id}"', "",
        "[mqtt]", f'url = "{broker.url}"', "reconnect_min = 0.1", "reconnect_max = 1.0",
        "persistent_session = true", "",
        "[store]", f'sqlite = "{store}"', "",
        "[alerts]", "silence_after = 600", "",
        "[reconcile]", f'hmac_key_file = "{key}"', f"gap_deadline = {gap_deadline}",
        f"high_water_grace = {grace}", f"request_timeout = {request_timeout}", "",
        "[log]", 'format = "json"', 'level = "info"']) + "\n")
    return path


def start_pit(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "tabled.tools.cli", "pit", "--config",
                                 str(config)], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
