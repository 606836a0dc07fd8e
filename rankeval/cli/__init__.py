"""The ``rankeval`` command: a thin typer app over the library API.

``rankeval QRELS RUN [RUN ...] -m SPEC`` runs the default ``evaluate`` command; ``rankeval
measures`` and ``rankeval plugins`` list the catalogue. Heavy imports happen inside commands.
"""

from __future__ import annotations

import sys

from rankeval.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app(prog_name="rankeval", args=sys.argv[1:])
