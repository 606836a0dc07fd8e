"""``python -m rankeval``: the ``rankeval`` command."""

from rankeval.cli import main

if __name__ == "__main__":  # imported (a worker process, a tool listing modules): nothing runs
    main()
