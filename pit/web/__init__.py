"""The pit's live web page: the floor, each table's panel, recall, the alerts desk.

A Starlette application served by uvicorn inside the pit service's event loop
(:mod:`tabled.pit.web.server`). It shows what :mod:`tabled.pit.model` and the record
(:mod:`tabled.pit.store`) hold and acts only through :class:`tabled.pit.alerts.AlertDesk`
(role-checked and audited there). Pages are rendered on the server (Jinja2); the browser
gets changes as server-rendered fragments over server-sent events (:mod:`tabled.pit.web.live`),
swapped in by the vendored htmx and its SSE extension. It never shows a card the model has not
got from an outcome record.
"""
