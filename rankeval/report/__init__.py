"""Results out: rendering result tables in every output format, built-in and plugin
(:mod:`~rankeval.report.formats`, with the ``OutputFormat`` and ``CompatMode`` extension
points), and writing files and standard output safely (:mod:`~rankeval.report.outputs`:
atomic replacement, never over an input).

May import: :mod:`rankeval.measures` and everything below it (:mod:`rankeval.ranking`,
:mod:`rankeval.io`, the foundation modules).
"""
