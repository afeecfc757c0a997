"""How tests/data/journal-0.1.0.sqlite was made: with the code of release 0.1.0 (commit 75e9fa8),
a baccarat daemon on a simulated shoe publishes some hands to a real broker, the broker goes away,
the daemon journals more hands it cannot publish, and it is killed (-9) mid-shoe.

So the journal holds acknowledged and unacknowledged outputs and a round in progress: what a
table in service has on disk when it is upgraded. tests/daemon/test_journal_upgrade.py opens it
with today's code. Run from a checkout of 75e9fa8 (its `tests.integration.harness`):

    python tests/data/make_release_journal.py OUT_DIR
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import sys
from pathlib import Path

from daemon.broker import Mosquitto  # type: ignore[import-not-found]  # noqa: TID251 (0.1.0)
from tests.integration.harness import (  # type: ignore[import-not-found]
    Daemon,
    Simulator,
    Subscriber,
    write_config,
)


async def main(out: Path) -> None:
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    sim = Simulator(["shoe", "--seed", "7", "--hands", "100", "--pace", "0.05",
                     "--link", str(work / "shoe")], work / "sim.log")
    path = sim.start()
    with Mosquitto(workdir=work / "broker") as broker:
        config = write_config(work / "tabled.toml", game="baccarat",
                              journal=work / "journal.sqlite", broker_url=broker.url,
                              devices=[{"id": "shoe-1", "family": "shoe", "url": path}])
        daemon = Daemon(config, work / "daemon.log")
        async with Subscriber("127.0.0.1", broker.port, "tabled/lab/t1/#") as sub:
            daemon.start()
            published = await sub.wait_for("/outcome", 10, alive=daemon)
    # the broker is gone: the daemon journals what it cannot publish
    await asyncio.sleep(3.0)
    daemon.kill9()
    sim.stop()
    db = sqlite3.connect(work / "journal.sqlite")  # fold the WAL in: one file to keep
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")
    facts = {
        "published_outcomes": len({o["table_seq"] for o in published}),
        "rows": db.execute("SELECT COUNT(*) FROM journal").fetchone()[0],
        "outputs": db.execute("SELECT COUNT(*) FROM journal WHERE kind='output'").fetchone()[0],
        "outcomes": db.execute("SELECT COUNT(*) FROM journal WHERE kind='output' AND "
                               "topic='outcome'").fetchone()[0],
        "acked_id": max(int(db.execute("SELECT COALESCE(MAX(acked), 0) FROM journal")
                            .fetchone()[0]),
                        int((db.execute("SELECT value FROM meta WHERE key='acked_id'")
                             .fetchone() or [0])[0])),
        "last_id": db.execute("SELECT MAX(id) FROM journal").fetchone()[0],
    }
    db.close()
    shutil.copy(work / "journal.sqlite", out / "journal-0.1.0.sqlite")
    (out / "journal-0.1.0.json").write_text(json.dumps(facts, indent=2) + "\n")
    print(json.dumps(facts))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
