"""The ``rankeval`` command: a thin typer app over the library API.

``rankeval QRELS RUN [RUN ...] -m SPEC`` runs the default ``evaluate`` command; ``rankeval
measures`` and ``rankeval plugins`` list the catalogue. Heavy imports happen inside commands.

May import: any part of rankeval (it is the top of the one-way flow); nothing imports it.
"""

from __future__ import annotations

import sys

# (pyarrow's allocator, mimalloc, keeps its own purge delay: the CLI used to set
# MIMALLOC_PURGE_DELAY=0, which lowered a whole run's peak; with runs read in blocks it saves
# 1-4% of the peak and costs 5-15% of the time, each block's memory faulted in anew)
from rankeval.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app(prog_name="rankeval", args=sys.argv[1:])
