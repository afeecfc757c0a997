"""The pit's config: the example is valid, every error names its key, check-config's exit status,
secret files refused when others can read them, argon2 hashes only."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tabled.pit.auth import Users, hash_password
from tabled.pit.config import ConfigError, check_secrets, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "config" / "pit.example.toml"


def tabled(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabled.tools.cli", *args], capture_output=True,
                          text=True, check=False, timeout=60, input=stdin)


def test_the_example_is_valid_and_documents_every_key() -> None:
    config = load_config(EXAMPLE)
    assert config.mqtt.url.startswith("mqtts://") and config.mqtt.tls is not None
    assert [u.role for u in config.users] == ["supervisor", "viewer"]
    text = EXAMPLE.read_text()
    for section, model in (("mqtt", config.mqtt), ("retention", config.retention),
                           ("alerts", config.alerts), ("web", config.web),
                           ("metrics", config.metrics), ("log", config.log),
                           ("integrity", config.integrity),
                           ("integrity.craps", config.integrity.craps),
                           ("displays", config.displays[0]),
                           ("reports", config.reports), ("ha", config.ha)):
        for key in type(model).model_fields:
            assert f"{key} =" in text or f"[{section}.{key}]" in text, f"{section}.{key}"


def test_every_error_is_named_by_its_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({
            "mqtt": {"url": "http://x", "share_group": "a/b", "sitez": 1},
            "store": {"sqlite": "/x", "postgres": {"conninfo": "host=db password=hunter2"}},
            "alerts": {"silence_after": 0},
            "users": [{"name": "sam", "role": "boss", "password_hash": "plain"},
                      {"name": "sam", "role": "viewer", "password_hash": "x"}],
        })
    keys = dict(caught.value.errors)
    assert "must look like mqtt://" in keys["mqtt.url"]
    assert "mqtt.share_group" in keys and "mqtt.sitez" in keys
    assert "no password in conninfo" in keys["store.postgres.conninfo"]
    assert "alerts.silence_after" in keys
    assert "users.0.role" in keys
    assert "not an argon2 hash" in keys["users.0.password_hash"]


def test_check_config_prints_every_error_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "pit.toml"
    bad.write_text('[mqtt]\nurl = "mqtt://127.0.0.1:1883"\n[alerts]\ngap_grace = -1\n'
                   '[store]\nsqlite = "/x"\n[store.postgres]\nconninfo = "host=db"\n')
    proc = tabled("pit", "check-config", str(bad))
    assert proc.returncode == 2
    assert f"{bad}: alerts.gap_grace:" in proc.stderr
    assert f"{bad}: store: give sqlite or [store.postgres], not both" in proc.stderr
    good = tmp_path / "good.toml"
    good.write_text('[mqtt]\nurl = "mqtt://127.0.0.1:1883"\nshare_group = "pit"\n'
                    f'[store]\nsqlite = "{tmp_path}/pit.sqlite"\n')
    proc = tabled("pit", "check-config", str(good))
    assert proc.returncode == 0, proc.stderr
    assert "broker mqtt://127.0.0.1:1883, shared as pit" in proc.stdout
    assert f"store sqlite {tmp_path}/pit.sqlite" in proc.stdout
    assert tabled("pit", "check-config", str(tmp_path / "none.toml")).returncode == 2


def test_a_secret_readable_by_others_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "mqtt.password"
    secret.write_text("s3cret\n")
    secret.chmod(0o644)
    config = parse_config({"mqtt": {"url": "mqtt://h:1", "username": "floor",
                                    "password_file": str(secret)}})
    (problem,) = check_secrets(config)
    assert problem[0] == "mqtt.password_file" and "chmod 600" in problem[1]
    assert "s3cret" not in problem[1]
    secret.chmod(0o600)
    assert check_secrets(config) == []


def test_users_sign_in_with_argon2_hashes() -> None:
    hashed = hash_password("correct horse")
    assert hashed.startswith("$argon2id$")
    config = parse_config({"mqtt": {"url": "mqtt://h:1"},
                           "users": [{"name": "sam", "role": "supervisor",
                                      "password_hash": hashed}]})
    users = Users(config.users)
    user = users.authenticate("sam", "correct horse")
    assert user is not None and user.role == "supervisor" and user.may("acknowledge")
    assert users.authenticate("sam", "wrong") is None
    assert users.authenticate("nobody", "correct horse") is None


def test_hash_password_command() -> None:
    proc = tabled("pit", "hash-password", stdin="a long password\n")
    assert proc.returncode == 0, proc.stderr
    from argon2 import PasswordHasher

    assert PasswordHasher().verify(proc.stdout.strip(), "a long password")
    assert tabled("pit", "hash-password", stdin="short\n").returncode == 2
