"""Evaluation: (qrels, runs, measures) → results.

- :mod:`~rankeval.engine.scoring`: one measure over one alignment → per-query values, and
  the aggregation of per-query values (the public engine primitive
  :func:`~rankeval.engine.scoring.evaluate_measure`);
- :mod:`~rankeval.engine.prepare`: an evaluation's inputs (registry, compat mode, measures,
  qrels with their side files, options) resolved once;
- :mod:`~rankeval.engine.evaluation`: :func:`~rankeval.engine.evaluation.evaluate_prepared` and
  ``Results``, choosing the local or the Dask engine;
- :mod:`~rankeval.engine.distributed`, :mod:`~rankeval.engine.dask_cluster`: the Dask
  engine and its cluster;
- :mod:`~rankeval.engine.random_ranking`, :mod:`~rankeval.engine.random_sampling`: the random
  baseline (a plugin's closed form, or Monte Carlo over the candidate model);
- :mod:`~rankeval.engine.allocators`: the memory allocator settings of rankeval's own
  processes (the command, its workers).

May import: :mod:`rankeval.report`, :mod:`rankeval.measures`, :mod:`rankeval.ranking`,
:mod:`rankeval.io` and the foundation modules. Not :mod:`rankeval.comparison` or
:mod:`rankeval.cli`.
"""
