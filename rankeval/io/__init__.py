"""Reading inputs: bytes → validated pyarrow tables → :class:`~rankeval.io.data.Qrels` and
:class:`~rankeval.io.data.Run`.

- :mod:`~rankeval.io.inputs`: opening files, streaming decompression, the one OS-error path;
- :mod:`~rankeval.io.lines`: splitting bytes into checked lines and columns;
- :mod:`~rankeval.io.trec`: TREC qrels, runs and docinfo files (the general reader);
- :mod:`~rankeval.io.fast_run`: the fast path for plain TREC runs;
- :mod:`~rankeval.io.htbg_json`: the hTBG reference's JSON format;
- :mod:`~rankeval.io.validate`: the checks the readers share (grades, ids, repeated
  judgments, a file in the other's place), for files and for input built in memory;
- :mod:`~rankeval.io.data`: the ``Qrels`` and ``Run`` objects (files, DataFrames, dicts, Parquet);
- :mod:`~rankeval.io.forms`: the other input forms (PyTerrier columns, ir_measures tuples);
- :mod:`~rankeval.io.attributes`: item attributes (``key=value``) as checked numbers, and
  merging ``--docinfo`` side files;
- :mod:`~rankeval.io.irds`: qrels named by an ir_datasets id;
- :mod:`~rankeval.io.convert`: hTBG JSON ↔ nested TREC files.

May import: the foundation modules (:mod:`rankeval.errors`, :mod:`rankeval.options`,
:mod:`rankeval.spec`, :mod:`rankeval.segments`). Nothing else of rankeval (type-only
imports for annotations excepted).
"""
