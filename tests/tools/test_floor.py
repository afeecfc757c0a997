"""The floor demo (issue 12), bounded: ``tabled floor`` brings up six tables of the three games
(real simulators, real daemons), a private Mosquitto and the pit; the pit's own record
(``tabled pit status``) shows outcomes from every table and a fault alert; the page at the
printed address takes the printed supervisor's and viewer's passwords (and refuses another);
SIGINT then stops everything: exit 0, no process left (by PID), no work directory left."""

from __future__ import annotations

import http.cookiejar
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from tabled.games import registry
from tests.tools.running import Demo, assert_gone, children_of

#: The longest the floor may take to show what the test waits for, seconds.
T_FLOOR = 75.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def sign_in(page: str, name: str, password: str) -> str | None:
    """Sign in on the pit's page as a browser does (the form's CSRF token, its cookie); where
    the page sends a signed-in user, or None when sign-in is refused."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _NoRedirect)
    form = opener.open(page + "login", timeout=10).read().decode()
    token = re.search(r'name="csrftoken" value="([^"]+)"', form)
    assert token, form
    data = urllib.parse.urlencode({"csrftoken": token.group(1), "name": name,
                                   "password": password, "next": "/"}).encode()
    try:
        opener.open(page + "login", data=data, timeout=10)
    except urllib.error.HTTPError as exc:
        if exc.code in (302, 303):
            return urllib.parse.urljoin(page, exc.headers["Location"])
        return None
    return None


def sign_in_with(opener: urllib.request.OpenerDirector, page: str, name: str,
                 password: str) -> bool:
    """Sign ``opener`` (with its cookie jar) in on the pit's page; whether it worked."""
    form = opener.open(page + "login", timeout=10).read().decode()
    token = re.search(r'name="csrftoken" value="([^"]+)"', form)
    assert token, form
    data = urllib.parse.urlencode({"csrftoken": token.group(1), "name": name,
                                   "password": password, "next": "/"}).encode()
    return "/login" not in opener.open(page + "login", data=data, timeout=10).geturl()


def pit_status(config: Path) -> dict[str, Any] | None:
    proc = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "pit", "status",
                           "--config", str(config)], capture_output=True, text=True,
                          timeout=30, check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def test_the_floor_runs_every_game_records_outcomes_and_alerts_then_leaves_nothing() -> None:
    # every installed game with a demo recipe: the built-in three and any plugin (sic bo)
    games = [name for name in registry.game_names() if registry.part(name, "demo") is not None]
    assert {"baccarat", "craps", "qpoker"} <= set(games)
    floor = Demo("--pace", "1", "--duration", "150", command="floor")
    try:
        workdir = Path(floor.wait_for(r"work dir (\S+), removed at exit").group(1))
        page = floor.wait_for(r"the floor page: (http://127\.0\.0\.1:\d+/)").group(1)
        users = floor.wait_for(r"sign in: supervisor / (\S+) \(supervisor\) · viewer / (\S+) "
                               r"\(viewer\)")
        assert all(len(password) >= 12 for password in users.groups())
        config = workdir / "pit.toml"
        deadline = time.monotonic() + T_FLOOR
        status: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            status = pit_status(config) if config.exists() else None
            if status is not None:
                played = Counter(t["game"] for t in status["tables"] if t["last_outcome"])
                faults = [a for a in status["alerts"] if a["kind"] in ("fault", "device_lost")]
                if min(played.get(g, 0) for g in games) >= 2 \
                        and faults:
                    break
            time.sleep(2)
        else:
            raise AssertionError(f"not every table played, or no fault: {status}\n"
                                 + "\n".join(floor.lines[-40:]))
        floor.wait_for(r"\[floor\] the pit serves the floor page")
        assert sign_in(page, "supervisor", users.group(1)) == page
        assert sign_in(page, "viewer", users.group(2)) == page
        assert sign_in(page, "supervisor", "not-the-password") is None
        # a scoreboard display for each table whose game draws one, printed, linked, served
        # without sign-in (issue 29)
        displays = dict(re.findall(r"(\S+)'s scoreboard, no sign-in: (http://\S+)",
                                   "\n".join(floor.lines)))
        drawn = [name for name in games if getattr(registry.part(name, "pit"),
                                                   "display_template", None)]
        assert {"baccarat", "craps"} <= set(drawn)
        assert sorted(displays) == sorted(f"{registry.part(name, 'demo').short}-{n}"
                                          for name in drawn for n in (1, 2)), floor.lines[:20]
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        assert sign_in_with(opener, page, "viewer", users.group(2))
        floor_html = opener.open(page, timeout=10).read().decode()
        for table, address in displays.items():
            with urllib.request.urlopen(address, timeout=10) as response:
                board = response.read().decode()
            assert response.status == 200 and "sse-connect=" in board, table
            assert table.startswith("craps") or 'data-road-name="big_road"' in board, table
            assert f'data-table="floor/{table}"' in board and "alerts-panel" not in board
            assert 'href="' + address.removeprefix(page[:-1]) + '"' in floor_html, table
        children = children_of(floor.proc.pid)
        # mosquitto, two simulators and two daemons per game, the pit, the reaper
        assert len(children) == 3 + 4 * len(games), children
        floor.proc.send_signal(signal.SIGINT)
        assert floor.finish(timeout=60) == 0, "\n".join(floor.lines[-30:])
    finally:
        if floor.proc.poll() is None:
            floor.proc.kill()
    assert_gone(children, workdir, timeout=2)
    assert page.startswith("http://127.0.0.1:")
    tables = {t["table"]: t["game"] for t in status["tables"] if t["last_outcome"]}
    shorts = sorted(registry.part(name, "demo").short for name in games)
    assert sorted(tables) == [f"{short}-{n}" for short in shorts for n in (1, 2)]
    assert {"bac-1", "bac-2", "craps-1", "craps-2", "qpoker-1", "qpoker-2"} <= set(tables)
    shown = [line for line in floor.lines if line.startswith(("qpoker-1", "qpoker-2"))]
    assert any(" round " in line for line in shown)
    # the dealer console's commands were never refused (it reports only what went wrong)
    assert not any("[console]" in line and "refused" in line for line in floor.lines)
