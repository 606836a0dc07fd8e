"""Measures as objects: the :class:`~rankeval.measures.base.Measure` base class and its typed
parameters (:mod:`~rankeval.measures.base`), the registry that parses specs into measures
(:mod:`~rankeval.measures.registry`), the plugin hooks (:mod:`~rankeval.measures.hookspecs`)
and the loading of plugins (:mod:`~rankeval.measures.plugins`). The measure families
themselves live in ``plugins/``; this package knows none of them.

May import: :mod:`rankeval.ranking`, :mod:`rankeval.io` and the foundation modules.
"""
