"""Comparing runs: :func:`~rankeval.comparison.compare.compare_prepared` and its result object
(:mod:`~rankeval.comparison.compare`), the values it holds (:mod:`~rankeval.comparison.data`),
the significance tests and their drivers (:mod:`~rankeval.comparison.stats`,
:mod:`~rankeval.comparison.significance`), parameter curves (:mod:`~rankeval.comparison.curves`),
paper tables and plots (:mod:`~rankeval.comparison.tables`, :mod:`~rankeval.comparison.plots`)
and the progress bar (:mod:`~rankeval.comparison.progress`).

May import: :mod:`rankeval.engine` and everything below it. Not :mod:`rankeval.cli`.
"""
