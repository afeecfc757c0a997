"""Pit servers for the tests of several servers on one floor (``test_ha.py``,
``test_ha_web.py``): each a ``tabled pit`` subprocess with its config (one PostgreSQL record, a
shared subscription with a persistent session, reconciliation with the floor's fetch key, the
page with one session secret and one user), killed with SIGKILL and started again as a
supervisor would; and a client signed in through the load balancer."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tabled.daemon.broker import Mosquitto
from tabled.pit.auth import hash_password
from tests.pit.pitproc import start_pit

PASSWORD = "supervisor password"
#: one hash for both servers: a session carries its password's mark, and a server whose
#: ``[[users]]`` hash differs ends it ("password_changed")
PASSWORD_HASH = hash_password(PASSWORD)
#: A page slower than this counts as a failure (seconds: the CI machine is shared, and a
#: test machine at a load of 13 on 2 cores answered a floor page in over 5 s with no kill).
T_ANSWER = 10.0


def pit_config(folder: Path, name: str, broker: Mosquitto, conninfo: str, key: Path | None,
               secret: Path, web_port: int) -> Path:
    """``name``'s config, written into ``folder``; ``key``: the floor's fetch key (None: no
    reconciliation)."""
    path = folder / f"{name}.toml"
    path.write_text("\n".join([
        "[pit]", f'id = "{name}"', "",
        "[mqtt]", f'url = "{broker.url}"', "reconnect_min = 0.1", "reconnect_max = 1.0",
        "persistent_session = true", 'share_group = "pit"', "",
        "[store.postgres]", f'conninfo = "{conninfo}"', "",
        "[alerts]", "silence_after = 600", "",
        *(["[reconcile]", f'hmac_key_file = "{key}"', "gap_deadline = 8.0",
           "high_water_grace = 0.5", "request_timeout = 2.0", ""] if key is not None else []),
        "[web]", 'host = "127.0.0.1"', f"port = {web_port}",
        f'session_secret_file = "{secret}"', 'language = "en"', "",
        "[[users]]", 'name = "sam"', 'role = "supervisor"',
        f'password_hash = "{PASSWORD_HASH}"', "",
        "[log]", 'format = "json"', 'level = "info"']) + "\n")
    return path


@dataclass
class Pit:
    name: str
    config: Path
    log: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = start_pit(self.config, self.log)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def leads(self) -> bool | None:
        """``pit_leader`` of its ``/metrics`` (None: it does not answer)."""
        try:
            with urllib.request.urlopen(self.url + "/metrics", timeout=3) as r:
                text = r.read().decode()
        except OSError:
            return None
        found = re.search(r"^pit_leader (\S+)$", text, re.M)
        return found is not None and float(found.group(1)) == 1.0

    def floor_shows(self, tables: int) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=T_ANSWER) as r:
                states = json.loads(r.read())["tables"]
        except OSError:
            return False
        return bool(states.get("online", 0) >= tables)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False


