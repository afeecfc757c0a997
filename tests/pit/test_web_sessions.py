"""Sign-in in a real browser, against a real ``tabled pit``: sessions end on the server, the
throttle locks one name at one address, a changed password ends the sessions of its user.

Everything is real: Mosquitto, ``tabled pit`` as a subprocess serving its page over an SQLite
record (restarted with a new config for the password change, as an operator does), and
Debian's Chromium driven by Playwright (the fixtures and helpers of ``test_web.py``). No table
daemons: sign-in needs none. The tests run in order against one pit:

1. a cookie saved before sign-out, put back into a fresh browser, no longer signs in;
2. one user's five typos lock that user at that address (429, ``Retry-After``), never another
   user behind the same address;
3. the pit restarted with a new password hash for a user: that user's open session is over, the
   new password signs in, and ``tabled pit audit --sign-in`` lists it all (the command line's
   own password check included).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tabled.daemon.broker import Mosquitto, free_port
from tabled.pit.auth import hash_password
from tests.pit.webfloor import (
    BROWSER_ARGS,
    CHROMIUM,
    PASSWORDS,
    _healthy,
    _pit_config,
    _wait,
    live,
    sign_in,
)

playwright_sync = pytest.importorskip("playwright.sync_api")

NEW_PASSWORD = "the supervisor's new password"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason="Debian's chromium is not installed (make system-deps)"),
    pytest.mark.timeout(180),
]


@dataclass
class Pit:
    """``tabled pit`` with its page, stopped and started again like a service."""

    work: Path
    config: Path
    base_url: str
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.work / "pit.log", "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tabled.tools.cli", "pit", "--config", str(self.config)],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        proc = self.proc
        _wait(lambda: _healthy(self.base_url) or (proc.poll() is not None and pytest.fail(
            self.log())), 30, "the pit's page")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log(self) -> str:
        return (self.work / "pit.log").read_text(errors="replace")

    def cli(self, *args: str) -> list[dict[str, Any]]:
        done = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "pit", *args,
                               "--config", str(self.config)],
                              capture_output=True, text=True, timeout=60, check=True)
        return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def pit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pit]:
    work = tmp_path_factory.mktemp("signin")
    with Mosquitto(workdir=work / "broker") as broker:
        secret = work / "session.secret"
        secret.write_text(secrets.token_urlsafe(48))
        os.chmod(secret, 0o600)
        port = free_port()
        config = _pit_config(work / "pit.toml", broker.url, work / "pit" / "pit.sqlite", port,
                             secret)
        running = Pit(work, config, f"http://127.0.0.1:{port}")
        running.start()
        try:
            yield running
        finally:
            running.stop()


@pytest.fixture(scope="module")
def browser(pit: Pit) -> Iterator[Any]:
    with playwright_sync.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def replayed(browser: Any, cookies: list[dict[str, Any]]) -> Any:
    """A fresh browser context holding saved cookies, and its page."""
    context = browser.new_context()
    context.add_cookies(cookies)
    return context.new_page()


def test_a_cookie_saved_before_sign_out_no_longer_signs_in(pit: Pit, browser: Any) -> None:
    page = sign_in(browser, pit, "sam")
    saved = page.context.cookies()
    assert any(c["name"] == "pit_session" for c in saved)
    other_tab = page.context.new_page()  # the floor, open and live in a second tab
    other_tab.goto(pit.base_url + "/alerts")
    live(other_tab)
    page.click("form[action='/logout'] button[type=submit]")
    # the sign-out's redirect, or the page's own live stream ending with the session first
    # (then pit.js sends it to /login?next=/): either way the sign-in page
    page.wait_for_url(pit.base_url + "/login**")
    # the open tab's live stream ends with the session, and the tab goes to sign-in
    other_tab.wait_for_url(pit.base_url + "/login?next=%2Falerts", timeout=15_000)

    thief = replayed(browser, saved)
    thief.goto(pit.base_url + "/")
    assert thief.url.startswith(pit.base_url + "/login")  # not the floor
    assert thief.locator("[data-user]").count() == 0
    assert thief.context.request.get(pit.base_url + "/events").status == 401
    direct = replayed(browser, saved).context.request.get(pit.base_url + "/",
                                                          max_redirects=0)
    assert direct.status == 303 and direct.headers["location"].startswith("/login")
    thief.context.close()
    page.context.close()


def test_one_users_typos_lock_only_that_user_at_that_address(pit: Pit, browser: Any) -> None:
    typist = browser.new_context().new_page()
    typist.goto(pit.base_url + "/login")
    for _ in range(5):
        typist.fill("input[name=name]", "vic")
        typist.fill("input[name=password]", "viewer pasword")
        with typist.expect_response(lambda r: r.request.method == "POST") as answer:
            typist.click("form button[type=submit]")
        assert answer.value.status == 401
        assert "Sign-in failed" in typist.locator("p.error").inner_text()

    # another user behind the same address (127.0.0.1) signs in
    other = sign_in(browser, pit, "sam")
    assert other.locator("[data-user]").first.get_attribute("data-user") == "sam"

    # the typist's right password now waits: 429, Retry-After, and how long on the page
    typist.fill("input[name=name]", "vic")
    typist.fill("input[name=password]", PASSWORDS["vic"])
    with typist.expect_response(lambda r: r.request.method == "POST") as answer:
        typist.click("form button[type=submit]")
    response = answer.value
    assert response.status == 429
    wait = int(response.headers["retry-after"])
    assert 250 <= wait <= 300  # [web] sign_in_window = 300 by default
    error = typist.locator("p.error")
    assert error.get_attribute("data-retry-after") == str(wait)
    text = error.inner_text()
    assert "Too many failed sign-ins for this name from your address" in text
    assert "try again in 4 min" in text or "try again in 5 min" in text
    assert typist.url.startswith(pit.base_url + "/login")
    assert not any(c["name"] == "pit_session" for c in typist.context.cookies())
    typist.context.close()
    other.context.close()


def test_a_new_password_ends_the_users_sessions_at_restart(pit: Pit, browser: Any) -> None:
    page = sign_in(browser, pit, "sam")
    saved = page.context.cookies()
    pit.stop()
    # the operator gives sam a new password: a new hash in the config, and a restart
    lines = pit.config.read_text().splitlines()
    at = lines.index('name = "sam"')
    assert lines[at + 2].startswith("password_hash = ")
    lines[at + 2] = f'password_hash = "{hash_password(NEW_PASSWORD)}"'
    pit.config.write_text("\n".join(lines) + "\n")
    pit.start()
    # the restart itself ends sam's sessions (audited), before any browser comes back
    _wait(lambda: ("session_ended", "password_changed") in [
        (e["action"], e["reason"]) for e in pit.cli("audit", "--sign-in", "--user", "sam")],
        20, "sam's sessions ended at start", interval=0.5)

    page.goto(pit.base_url + "/")
    assert page.url.startswith(pit.base_url + "/login")  # the open page's session is over
    again = replayed(browser, saved)
    again.goto(pit.base_url + "/alerts")
    assert again.url.startswith(pit.base_url + "/login")
    again.fill("input[name=name]", "sam")
    again.fill("input[name=password]", NEW_PASSWORD)
    again.click("form button[type=submit]")
    again.wait_for_url(pit.base_url + "/alerts")
    # a supervisor sees the sign-in audit on the alerts page
    assert again.locator('table.sign-ins tr[data-action="session_ended"]').count() >= 1
    again.context.close()
    page.context.close()

    audit = list(reversed(pit.cli("audit", "--sign-in")))
    seen = [(e["user"], e["action"], e["reason"]) for e in audit]
    assert seen[:2] == [("sam", "signed_in", None), ("sam", "signed_out", None)]
    assert seen[2:7] == [("vic", "failed", "bad_password")] * 5
    assert seen[7:9] == [("sam", "signed_in", None), ("vic", "throttled", "user")]
    # sam's sessions of before the restart: ended as the new pit started (its sweep)
    ended = [s for s in seen[9:] if s[1] == "session_ended"]
    assert ended and all(s == ("sam", "session_ended", "password_changed") for s in ended)
    assert seen[-1] == ("sam", "signed_in", None)
    assert all(e["client"] == "127.0.0.1" and e["pit"] == "pit-web" for e in audit)
    # the command line's sign-in is audited too
    wrong = subprocess.run([sys.executable, "-m", "tabled.tools.cli", "pit", "ack", "1",
                            "--config", str(pit.config), "--user", "sam"],
                           input="not it\n", capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 3 and "sign-in failed" in wrong.stderr
    last = pit.cli("audit", "--sign-in", "--limit", "1")[0]
    assert (last["user"], last["action"], last["reason"]) == ("sam", "failed", "bad_password")
    assert last["client"].startswith("cli")

    log = pit.log()
    assert "session_ended" in log and "password_changed" in log
    for secret in (*PASSWORDS.values(), NEW_PASSWORD, "viewer pasword"):
        assert secret not in log  # never a password in the log
