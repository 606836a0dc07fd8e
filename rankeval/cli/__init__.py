"""The ``rankeval`` command: a thin typer app over the library API.

``rankeval QRELS RUN [RUN ...] -m SPEC`` runs the default ``evaluate`` command; ``rankeval
measures`` and ``rankeval plugins`` list the catalogue. Heavy imports happen inside commands.

May import: any part of rankeval (it is the top of the one-way flow); nothing imports it.
"""

from __future__ import annotations

import sys

from rankeval.engine.allocators import tune_this_process

# before pyarrow is first imported (which the CLI does lazily): see the module
tune_this_process()

from rankeval.cli.app import app  # noqa: E402

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app(prog_name="rankeval", args=sys.argv[1:])
