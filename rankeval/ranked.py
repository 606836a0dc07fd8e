"""Alignment and ranking: (qrels, run) → :class:`RankedLists`, the one view every measure reads.

Data flows one way: read → **align → rank** → measure kernels → aggregate → report.

For one run

1. :mod:`rankeval.duplicates` checks the run for duplicate ``(query_id, doc_id)`` pairs (an
   error naming both lines);
2. :mod:`rankeval.numbering` numbers the items and resolves nested items (``PARENT/CHILD``,
   see docs/formats.md, "Nested items"): an id is a child only when its prefix before the
   last separator is itself an item of the same query in the qrels or the run;
3. :mod:`rankeval.alignment` builds, per nesting level, the ranked lists: the run rows of
   each (sub-)query ordered by score descending, ties broken by doc_id descending
   (trec_eval's rule), each row carrying its judged relevance (maximum over assessors), plus
   the judged documents of each (sub-)query sorted by relevance descending (for ideal
   rankings);
4. :mod:`rankeval.ranked_lists` holds the result, :class:`RankedLists`, and the helpers
   measure kernels use.

Everything is computed for all queries at once with numpy/pyarrow array operations; there is
no Python loop per query or per line.

This module only gathers the names of those modules (the place engines and plugins import
them from). May import: :mod:`rankeval.alignment`, :mod:`rankeval.duplicates`,
:mod:`rankeval.ranked_lists`, :mod:`rankeval.segments`.
"""

from __future__ import annotations

from rankeval.alignment import Alignment
from rankeval.duplicates import DUPLICATE_POLICIES, check_duplicates
from rankeval.ranked_lists import RankedLists
from rankeval.segments import segment_offsets

__all__ = ["DUPLICATE_POLICIES", "Alignment", "RankedLists", "check_duplicates", "segment_offsets"]
