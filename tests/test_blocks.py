"""Where blocks are cut (rankeval.io.blocks._cut), against the definition read line by line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rankeval.io import blocks


def cut_line_by_line(buf: bytes, at: int, longest: int) -> int | None:
    """The definition, one line at a time: the start of the first line at or after *at*
    whose query (first field; blank and ``#`` lines have none) differs from the previous
    content line's, counting from the line that holds byte ``at - 1``; a line start at or
    past ``at + max(at, longest)`` if no such line comes first; ``None`` when *buf* ends
    (its last line unfinished) before either is known."""
    give_up = at + max(at, longest)
    start = buf.rfind(b"\n", 0, at) + 1
    previous = None
    pos = start
    while True:
        end = buf.find(b"\n", pos)
        if end < 0:
            return None
        fields = buf[pos:end].split(None, 1)
        query = fields[0] if fields and not fields[0].startswith(b"#") else None
        if query is not None:
            if previous is not None and query != previous and pos >= at:
                return pos
            previous = query
        pos = end + 1
        if pos >= give_up and pos > start:
            return pos


LINE = st.one_of(
    st.sampled_from([b"", b"   ", b"# a comment", b"\tq1 Q0 d 1 1 t", b"q1\tQ0 d 1 1 t", b"q1"]),
    st.builds(
        lambda q, d: b"%s Q0 d%d 1 1.5 tag" % (q, d),
        st.sampled_from([b"q1", b"q10", b"q2", b"q", b"q1x", b"1"]),
        st.integers(0, 99),
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(LINE, min_size=1, max_size=40),
    at=st.integers(1, 400),
    longest=st.integers(0, 300),
    unfinished=st.booleans(),
)
def test_cut_matches_the_line_by_line_definition(lines, at, longest, unfinished):
    buf = b"\n".join(lines) + (b"" if unfinished else b"\n")
    at = min(at, len(buf))
    saved = blocks.LONGEST_QUERY  # (hypothesis and the function-scoped monkeypatch do not mix)
    blocks.LONGEST_QUERY = longest
    try:
        assert blocks._cut(buf, at) == cut_line_by_line(buf, at, longest)
    finally:
        blocks.LONGEST_QUERY = saved


def test_cut_of_one_long_query_reads_every_line_once():
    """A query of many lines (no cut within reach) gives up at the limit, at a line start."""
    buf = b"".join(b"q7 Q0 d%d 1 %d t\n" % (i, i) for i in range(20000))
    limit = blocks.LONGEST_QUERY
    assert blocks._cut(buf, 1000) is None  # no change of query and the limit is far: read more
    tail = buf + b"q8 Q0 d 1 1 t\n"
    assert blocks._cut(tail, 1000) == len(buf)
    assert limit > len(tail)


def test_pool_runs_a_lone_block_in_this_process(tmp_path, monkeypatch):
    """A run over the block size that is one query (one block) starts no worker process."""
    import concurrent.futures

    import rankeval

    (tmp_path / "q.qrels").write_bytes(b"".join(b"q1 0 d%d %d\n" % (i, i % 2) for i in range(0, 300, 7)))
    (tmp_path / "one.run").write_bytes(b"".join(b"q1 Q0 d%d 1 %d.5 t\n" % (i, -i) for i in range(300)))
    expected = rankeval.evaluate(tmp_path / "q.qrels", tmp_path / "one.run", ["AP", "P@10"], jobs=1)

    def no_worker(*args, **kwargs):
        raise AssertionError("a worker process was asked for")

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", no_worker)
    got = rankeval.evaluate(tmp_path / "q.qrels", tmp_path / "one.run", ["AP", "P@10"], jobs=2, block_size=100)
    assert got.equals(expected)
    assert got.value.iloc[0] > 0


def test_default_block_size_gives_each_process_four_blocks():
    from rankeval.engine.evaluation import _block_size
    from rankeval.io.blocks import DEFAULT_BLOCK_SIZE, MIN_DEFAULT_BLOCK_SIZE

    assert _block_size(2**30, 1) == DEFAULT_BLOCK_SIZE  # one process: the default
    assert _block_size(2**30, 2) == DEFAULT_BLOCK_SIZE  # 1 GiB / 8 is more than the default
    assert _block_size(2**30, 16) == 2**30 // 64  # 16 MiB: 64 blocks for 16 processes
    assert _block_size(100 * 2**20, 16) == MIN_DEFAULT_BLOCK_SIZE  # never below 4 MiB
