"""Meta-evaluation: is a measure any good? (SPEC §11)

Computed from the per-query values of an evaluation (:meth:`rankeval.Evaluator.evaluate`'s
long frame, so every measure, plugin measures included, on every scheduler):

- :mod:`~rankeval.meta.correlation`: correlation between two rankings of systems (Kendall's
  τ, τ_a, τ_b; τ_AP, τ_AP_a, τ_AP_b; Spearman; Pearson; RBO);
- :mod:`~rankeval.meta.values`: the run-by-query matrix of one measure;
- :mod:`~rankeval.meta.power`: discriminative power (paired bootstrap and randomised Tukey
  HSD achieved significance levels);
- :mod:`~rankeval.meta.stability`: swap rates and stability under topic sampling;
- :mod:`~rankeval.meta.topics`: topic-set-size design;
- :mod:`~rankeval.meta.repro`: reproducibility and replicability measures (Breuer et al.).

May import: :mod:`rankeval.comparison` and everything below it. Not :mod:`rankeval.cli`.
"""
