"""MQTT for one table (aiomqtt): the broker connection and what travels over it (docs/mqtt.md).

Each part owns one thing:

- :mod:`~tabled.daemon.mqtt.session` — the connection, its reconnect loop, the retained birth
  record and last will on ``…/status``, and the parts run on every connection;
- :mod:`~tabled.daemon.mqtt.publisher` — durable messages (``event``, ``outcome``, ``fault``),
  journal to broker, store and forward, the acknowledged position;
- :mod:`~tabled.daemon.mqtt.volatile` — non-durable messages (device availability, replies, a
  journal failure), each numbered as it is sent;
- :mod:`~tabled.daemon.mqtt.reporter` — ``…/metrics``;
- :mod:`~tabled.daemon.mqtt.commands` — dealer-console commands in, replies out;
- :mod:`~tabled.daemon.mqtt.fetch` — the pit's fetch requests in, the journal's messages out;
- :mod:`~tabled.daemon.mqtt.numbers` — the numbers of non-durable messages;
- :mod:`~tabled.daemon.mqtt.topics` — the topic tree and the broker's address.

Each topic's ``table_seq`` goes up by one per message a subscriber can receive, and a number is
given only to a message that is sent. Nothing here decides game state or sees a face-down card:
what is published was redacted before the journal.
"""

from __future__ import annotations

from tabled.daemon.mqtt.topics import BrokerAddress, Topics, dumps

__all__ = ["BrokerAddress", "Topics", "dumps"]
