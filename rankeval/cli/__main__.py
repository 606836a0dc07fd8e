"""``python -m rankeval.cli``: the ``rankeval`` command."""

from rankeval.cli import main

main()
