"""The pit monitor: the floor side of tabled (DESIGN.md "The floor side: the pit monitor").

``tabled pit`` subscribes to the tables' topic trees, records what it receives (idempotently, by
site, table, topic and ``table_seq``), keeps a live model of every table, raises alerts that a
signed-in supervisor acknowledges (audited) and exposes Prometheus metrics. It never talks to a
device and never decides an outcome: the table daemon is the authority; the pit shows, keeps and
warns. It imports the contract's ground floor and small generic helpers of the daemon, never the
table service's internals (runtime, journal, mqtt, service, supervisor).
"""
