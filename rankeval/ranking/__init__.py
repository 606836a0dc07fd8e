"""Alignment and ranking: (qrels, run) → :class:`~rankeval.ranking.ranked_lists.RankedLists`,
the one view every measure kernel reads.

1. :mod:`~rankeval.ranking.duplicates` checks a run for duplicate ``(query_id, doc_id)`` pairs;
2. :mod:`~rankeval.ranking.numbering` numbers the items and resolves nested items
   (``PARENT/CHILD``, docs: formats.md, "Nested items");
3. :mod:`~rankeval.ranking.alignment` builds the ranked lists of each nesting level (score
   descending, ties by doc_id descending as trec_eval does, each row with its judged relevance)
   and the judged documents of each (sub-)query for ideal rankings;
4. :mod:`~rankeval.ranking.ranked_lists` holds the result and the helpers kernels use (its public
   names, ``KERNEL_API``, are the kernel contract: docs/kernels.md);
   :mod:`~rankeval.ranking.arrays` the small array helpers shared by these steps.

Everything is computed for all queries at once with array operations.

May import: :mod:`rankeval.io` and the foundation modules (:mod:`rankeval.errors`,
:mod:`rankeval.options`, :mod:`rankeval.spec`, :mod:`rankeval.segments`).
"""
