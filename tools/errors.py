"""The one exception root of the tools (demo, floor, console, conformance kit)."""

from __future__ import annotations


class ToolError(Exception):
    """Everything a tool raises on purpose: a part of a demo that failed, a console command
    that could not be sent."""
