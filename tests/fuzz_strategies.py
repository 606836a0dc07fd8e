"""Fuzzing rankeval with mutated real files: seed corpus, mutations, targets, verdicts.

One implementation of everything, two drivers:

* ``tests/test_fuzz.py`` draws the ``random.Random`` that every function here takes from
  hypothesis (``st.randoms``), so CI runs are repeatable (``derandomize=True``);
* ``bench/fuzz.py`` drives the same functions with ``random.Random(f"{seed}-{i}")`` for as
  many cases as it is given, and saves each distinct failure with a reproducer.

A *case* is a set of input files plus one call of rankeval's public API, written as the
Python expression that the reproducer script contains (so a saved reproducer runs exactly
what the fuzzer ran). The verdict: the call returns, or raises a
:class:`rankeval.errors.RankevalError` — anything else (``KeyError``, ``RecursionError``,
``MemoryError``, a pyarrow error, a hang past the time limit) is a failure, keyed by the
exception type and the innermost frame in rankeval's own code (``rankeval/`` or ``plugins/``).

The seeds are excerpts of the real files in ``tests/data/`` and ``rankeval/examples/`` (a
few queries each, so a case takes milliseconds). Every mutation takes ``(rng, data)`` and
draws only a handful of random numbers, which keeps hypothesis' choice sequences short.
"""

from __future__ import annotations

import ast
import bz2
import dataclasses
import gzip
import json
import lzma
import re
import signal
import threading
import time
import traceback
import warnings
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from random import Random
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
EXAMPLES = REPO / "rankeval" / "examples"

# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class Seed:
    """A real input file (or an excerpt of one) that the mutations start from."""

    name: str
    data: bytes


@dataclass(frozen=True)
class Pair:
    """Qrels and a run from the same collection, with measures that are valid on them."""

    name: str
    qrels: Seed
    run: Seed
    measures: tuple[str, ...]


TREC_MEASURES = (
    "AP",
    "nDCG@10",
    "P@5",
    "RR",
    "Bpref",
    "R@100",
    "Rprec",
    "Judged@10",
    "Success@5",
    "NumRelRet",
    "map_cut.5",
)
GRADED_MEASURES = ("AP(rel=2)", "nDCG@10", "RR(rel=2)", "P(rel=2)@5", "ndcg_cut.20")
DL_MEASURES = ("AP", "nDCG@10", "RR(rel=2)", "R@1000")
TBG_MEASURES = ("hTBG@h=3", "nhTBG@h=3", "hTBG@h=3(ideal=true)", "TBG", "nTBG", "nDCG@10(level=2)")
CSDCG_MEASURES = ("CS-DCG@10", "nCS-DCG@10", "CS-DCG-neg@10", "nCS-DCG@5(bounds=greedy)")
TAR_MEASURES = (
    "tar_num_docs",
    "tar_num_rels",
    "tar_num_shown",
    "tar_rels_found",
    "tar_last_rel",
    "tar_norm_last_rel",
    "tar_threshold",
    "tar_norm_threshold",
    "tar_recall_threshold",
    "tar_wss_100",
    "tar_wss_95",
    "tar_ap",
    "tar_norm_area",
    "tar_recall@10%",
    "tar_recall@95%",
    "tar_loss_er",
    "tar_total_cost",
    "tar_reliability@0.5",
)
DOCINFO_MEASURES = ("CS-DCG@10", "nCS-DCG@10", "TBG(default_cost=100)", "AP")


def _decompress(data: bytes) -> bytes:
    for magic, kind in _MAGIC.items():
        if data.startswith(magic):
            return _DECOMPRESS[kind](data)
    return data


def _by_query(data: bytes) -> dict[bytes, list[bytes]]:
    out: dict[bytes, list[bytes]] = {}
    for line in data.splitlines(keepends=True):
        fields = line.split()
        if len(fields) >= 4 and not line.startswith(b"#"):
            out.setdefault(fields[0], []).append(line)
    return out


def _excerpt(
    qrels: bytes, run: bytes, first: int, queries: int, depth: int, extra: int
) -> tuple[bytes, bytes]:
    """Queries ``first .. first+queries`` (of those in both files): each query's first
    *depth* run lines, and its qrels lines for those documents plus *extra* others."""
    q_by, r_by = _by_query(qrels), _by_query(run)
    qids = [q for q in r_by if q in q_by][first : first + queries]
    run_out, qrels_out = [], []
    for q in qids:
        lines = r_by[q][:depth]
        run_out += lines
        docs = {line.split()[2] for line in lines}
        others = 0
        for line in q_by[q]:
            if line.split()[2] in docs:
                qrels_out.append(line)
            elif others < extra:
                qrels_out.append(line)
                others += 1
    return b"".join(qrels_out), b"".join(run_out)


def _grade(doc: bytes, mod: int) -> int:
    """A stable pseudo-random attribute value of a document id."""
    return zlib.crc32(doc) % mod


def _with_sens(qrels: bytes) -> bytes:
    out = []
    for line in qrels.splitlines():
        out.append(line.rstrip() + b" sens=%d\n" % _grade(line.split()[2], 3))
    return b"".join(out)


def _docinfo(qrels: bytes, run: bytes) -> bytes:
    docs = dict.fromkeys(line.split()[2] for line in (qrels + run).splitlines())
    out = [b"# docno attributes\n"]
    out += [b"%s sens=%d cost=%d\n" % (d, _grade(d, 3), 10 + _grade(d, 300)) for d in docs]
    return b"".join(out)


def _nested_trec(truth: bytes, prediction: bytes) -> tuple[bytes, bytes]:
    """The hTBG JSON pair as nested TREC qrels (``cost=``) and run, as ``rankeval convert``
    writes them (built here, so that the seeds do not depend on the code under test)."""
    qrels, run = [], []
    for qid, individuals in json.loads(truth).items():
        for ind, (label, docs) in individuals.items():
            qrels.append(f"{qid} 0 {ind} {label}")
            qrels += [f"{qid} 0 {ind}/{doc} {stop} cost={words}" for doc, (stop, words) in docs.items()]
    for qid, individuals in json.loads(prediction).items():
        items = []
        for ind, (score, docs) in individuals.items():
            items.append((ind, score))
            items += [(f"{ind}/{doc}", doc_score) for doc, doc_score in docs.items()]
        run += [f"{qid} Q0 {item} {rank} {score} htbg" for rank, (item, score) in enumerate(items, 1)]
    return ("\n".join(qrels) + "\n").encode(), ("\n".join(run) + "\n").encode()


@dataclass(frozen=True)
class Corpus:
    """Every seed the targets draw from."""

    pairs: tuple[Pair, ...]
    nested: Pair  # the hTBG toy data as nested TREC qrels (cost=) and run
    docinfo: Pair  # qrels and run without attributes, plus measures reading a side file
    docinfo_file: Seed
    truth: Seed
    prediction: Seed

    @property
    def qrels(self) -> tuple[Seed, ...]:
        return tuple(p.qrels for p in (*self.pairs, self.nested))

    @property
    def runs(self) -> tuple[Seed, ...]:
        return tuple(p.run for p in (*self.pairs, self.nested))


@cache
def corpus() -> Corpus:
    """The seed corpus: excerpts of the real files in ``tests/data`` and ``rankeval/examples``."""

    def read(path: Path) -> bytes:
        return _decompress(path.read_bytes())

    te = DATA / "trec_eval"
    trec_q, trec_r = _excerpt(read(te / "qrels.test"), read(te / "results.test"), 0, 2, 25, 10)
    graded_q, graded_r = _excerpt(read(te / "qrels.rel_level"), read(te / "results.test"), 2, 2, 25, 10)
    dl_q, dl_r = _excerpt(
        read(DATA / "dl-hard" / "dl_hard-passage.qrels"), read(DATA / "dl-hard" / "bm25.run.gz"), 0, 2, 30, 5
    )
    ex_q, ex_r = _excerpt(
        read(EXAMPLES / "dl-hard.qrels.txt"), read(EXAMPLES / "dl-hard-bm25-rm3-t5.run.gz"), 3, 2, 30, 5
    )
    clef = DATA / "clef-tar"
    tar_q, tar_r = _excerpt(
        read(clef / "full.test.dta.abs.2019.qrels.gz"), read(clef / "DTA_sheffield-baseline.gz"), 0, 2, 40, 5
    )
    sens_q, sens_r = _excerpt(read(te / "qrels.test"), read(te / "results.test"), 1, 2, 20, 5)
    truth, prediction = (DATA / "htbg-toy" / name for name in ("truth.json", "prediction.json"))
    nested_q, nested_r = _nested_trec(truth.read_bytes(), prediction.read_bytes())
    gz = _COMPRESS["gzip"]
    pairs = (
        Pair(
            "trec_eval",
            Seed("trec_eval/qrels.test", trec_q),
            Seed("trec_eval/results.test", trec_r),
            TREC_MEASURES,
        ),
        Pair(
            "trec_eval-graded",
            Seed("trec_eval/qrels.rel_level", graded_q),
            Seed("trec_eval/results.test", graded_r),
            GRADED_MEASURES,
        ),
        Pair(
            "dl-hard",
            Seed("dl-hard/dl_hard-passage.qrels", dl_q),
            Seed("dl-hard/bm25.run.gz", gz(dl_r)),
            DL_MEASURES,
        ),
        Pair(
            "examples",
            Seed("examples/dl-hard.qrels.txt", ex_q),
            Seed("examples/dl-hard-bm25-rm3-t5.run.gz", gz(ex_r)),
            DL_MEASURES,
        ),
        Pair(
            "clef-tar",
            Seed("clef-tar/full.test.dta.abs.2019.qrels.gz", gz(tar_q)),
            Seed("clef-tar/DTA_sheffield-baseline.gz", gz(tar_r)),
            TAR_MEASURES,
        ),
        Pair(
            "trec_eval-whole-files",
            Seed("trec_eval/qrels.test (whole)", read(te / "qrels.test")),
            Seed("trec_eval/results.trunc (whole)", read(te / "results.trunc")),
            TREC_MEASURES,
        ),
        Pair(
            "cs-dcg",
            Seed("trec_eval/qrels.test+sens", _with_sens(sens_q)),
            Seed("trec_eval/results.test", sens_r),
            CSDCG_MEASURES,
        ),
    )
    nested = Pair(
        "htbg-toy",
        Seed("htbg-toy as TREC qrels", nested_q),
        Seed("htbg-toy as TREC run", nested_r),
        TBG_MEASURES,
    )
    docinfo = Pair(
        "docinfo",
        Seed("trec_eval/qrels.test", sens_q),
        Seed("trec_eval/results.test", sens_r),
        DOCINFO_MEASURES,
    )
    return Corpus(
        pairs=pairs,
        nested=nested,
        docinfo=docinfo,
        docinfo_file=Seed("docinfo of trec_eval ids", _docinfo(sens_q, sens_r)),
        truth=Seed("htbg-toy/truth.json", truth.read_bytes()),
        prediction=Seed("htbg-toy/prediction.json", prediction.read_bytes()),
    )


# ------------------------------------------------------------------------- mutations

Mutation = Callable[[Random, bytes], bytes]

_MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ\x00": "xz"}
_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda b: gzip.compress(b, mtime=0),
    "bz2": lambda b: bz2.compress(b, 1),
    "xz": lzma.compress,
}
_DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.decompress,
    "bz2": bz2.decompress,
    "xz": lzma.decompress,
}
_TOKEN = re.compile(rb"[^ \t\r\n]+")
_NUMBER = re.compile(rb"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_SEPARATOR = re.compile(rb"[ \t]+")

INTERESTING_BYTES = b"\x00\x01\x09\x0a\x0b\x0c\x0d\x1b\x1f\x20\x23\x2f\x3d\x7b\x7f\x80\xbf\xc3\xef\xfe\xff"
JUNK_TOKENS = (
    *b"x Q0 - # = == cost= cost=abc cost=-1 cost=nan cost=1e999 sens= sens=x sens=-2 sens=inf".split(),
    *b"k=v =v query_id=1 relevance=2 line=3 exclude=1 a/b / // a/ /a .. \\ \" ' { } [] {} null".split(),
    # é, an emoji, LINE SEPARATOR and NEXT LINE (str.splitlines splits on them), zero-width,
    # ideographic and no-break space
    *(c.encode() for c in ("é", "\U0001f600", "\u2028", "\x85", "\u200b", "\u3000", "\xa0")),
    b"Q0 x 1 1 t",
)
SPECIAL_NUMBERS = (
    *b"nan NaN -nan inf -inf +inf Infinity -Infinity 1e999 -1e999 1e-999 -0 -0.0 +0 0 True".split(),
    *b"1e308 1.7976931348623157e308 4.9e-324 2147483648 9223372036854775808 -9223372036854775809".split(),
    *b"18446744073709551616 0x1F 1_000 1,5 .5 5. +.5e-3 1e e5 --1 1.0.0".split(),
    *(b"9" * n for n in (20, 400, 5000)),
    b"-" + b"9" * 30,
    *"\u0661 \uff11 \xbd".encode().split(),  # ARABIC-INDIC ONE, FULLWIDTH ONE, ½
)
SEPARATORS = (b"\t", b"  ", b" \t ", b"\x0b", b"\x0c", b"\xc2\xa0", b"\xe3\x80\x80", b"\x1c", b"\r", b"")
INVALID_UTF8 = tuple(
    bytes.fromhex(h) for h in "80 bf c328 c0af e282 eda080 f0288cbc f888808080 ff feff".split()
)
CONTROL_BYTES = tuple(bytes([c]) for c in (*range(9), 0x0B, 0x0C, 0x0E, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x7F))
EMPTY_FILES = (
    b"",
    b"\n",
    b"\n\n",
    b"  \t\n",
    b"# only a comment\n",
    b"#\n#x\n\n",
    b"\xef\xbb\xbf",
    b"\xef\xbb\xbf\n",
    b"\x00",
    b"\r\n",
)
LONG_LENGTHS = (201, 4097, 70_000, 1_048_000, 1_048_577)  # the last two: just under and over 1 MiB
ENCODINGS = (
    "utf-16-le",
    "utf-16-be",
    "utf-16-le+bom",
    "utf-16-be+bom",
    "utf-16",
    "utf-32",
    "latin-1",
    "cp1252",
)


def _pos(rng: Random, data: bytes, end: bool = True) -> int:
    return rng.randrange(len(data) + 1) if end else rng.randrange(max(len(data), 1))


def _replace_span(
    rng: Random, data: bytes, pattern: re.Pattern[bytes], make: Callable[[bytes], bytes]
) -> bytes:
    spans = [m.span() for m in pattern.finditer(data)]
    if not spans:
        return data + make(b"")
    a, b = rng.choice(spans)
    return data[:a] + make(data[a:b]) + data[b:]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _split_ending(line: bytes) -> tuple[bytes, bytes]:
    body = line.rstrip(b"\r\n")
    return body, line[len(body) :]


def _on_lines(rng: Random, data: bytes, edit: Callable[[list[bytes]], list[bytes]]) -> bytes:
    """Apply *edit* (fields → fields) to one random line, or to every line."""
    lines = _lines(data)
    if not lines:
        return data
    chosen = range(len(lines)) if rng.random() < 0.4 else [rng.randrange(len(lines))]
    for i in chosen:
        body, end = _split_ending(lines[i])
        sep = b"\t" if b"\t" in body else b" "
        lines[i] = sep.join(edit(body.split())) + end
    return b"".join(lines)


def flip_bits(rng: Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if out:
            out[_pos(rng, data, end=False)] ^= 1 << rng.randrange(8)
    return bytes(out)


def set_byte(rng: Random, data: bytes) -> bytes:
    if not data:
        return data
    i = _pos(rng, data, end=False)
    value = rng.choice(INTERESTING_BYTES) if rng.random() < 0.7 else rng.randrange(256)
    return data[:i] + bytes([value]) + data[i + 1 :]


def insert_bytes(rng: Random, data: bytes) -> bytes:
    i = _pos(rng, data)
    junk = rng.choice(JUNK_TOKENS) if rng.random() < 0.5 else rng.randbytes(rng.randint(1, 8))
    return data[:i] + junk + data[i:]


def delete_bytes(rng: Random, data: bytes) -> bytes:
    i = _pos(rng, data)
    return data[:i] + data[i + rng.randint(1, 64) :]


def truncate(rng: Random, data: bytes) -> bytes:
    return data[: _pos(rng, data)]


def delete_lines(rng: Random, data: bytes) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    i = rng.randrange(len(lines))
    n = 1 if rng.random() < 0.7 else rng.randint(1, len(lines))
    return b"".join(lines[:i] + lines[i + n :])


def duplicate_line(rng: Random, data: bytes) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    i = rng.randrange(len(lines))
    line = lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n"
    copies = rng.choice((1, 1, 1, 2, 1000))
    j = i if rng.random() < 0.5 else rng.randrange(len(lines) + 1)
    return b"".join([*lines[:j], line * copies, *lines[j:]])


def swap_lines(rng: Random, data: bytes) -> bytes:
    lines = _lines(data)
    if len(lines) < 2:
        return data
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def blank_or_comment_line(rng: Random, data: bytes) -> bytes:
    lines = _lines(data)
    i = rng.randrange(len(lines) + 1)
    kind = rng.choice((b"\n", b"   \n", b"\t\n", b"# comment\n", b"#\n", b" # indented comment\n", b"#"))
    if kind == b"#" and i < len(lines):
        lines[i] = b"#" + lines[i]
        return b"".join(lines)
    return b"".join([*lines[:i], kind, *lines[i:]])


def swap_columns(rng: Random, data: bytes) -> bytes:
    i, j = rng.randrange(7), rng.randrange(7)

    def edit(fields: list[bytes]) -> list[bytes]:
        if max(i, j) < len(fields):
            fields[i], fields[j] = fields[j], fields[i]
        return fields

    return _on_lines(rng, data, edit)


def delete_column(rng: Random, data: bytes) -> bytes:
    i = rng.randrange(7)
    return _on_lines(rng, data, lambda fields: fields[:i] + fields[i + 1 :])


def add_column(rng: Random, data: bytes) -> bytes:
    i, junk = rng.randrange(8), rng.choice(JUNK_TOKENS)
    return _on_lines(rng, data, lambda fields: [*fields[:i], junk, *fields[i:]])


def junk_token(rng: Random, data: bytes) -> bytes:
    junk = rng.choice(JUNK_TOKENS)
    return _replace_span(rng, data, _TOKEN, lambda _: junk)


def long_token(rng: Random, data: bytes) -> bytes:
    token = rng.choice((b"a", b"7", b"/", b"\xc3\xa9", b"-", b"x=")) * rng.choice(LONG_LENGTHS)
    return _replace_span(rng, data, _TOKEN, lambda _: token)


def control_bytes(rng: Random, data: bytes) -> bytes:
    byte = rng.choice(CONTROL_BYTES)
    at = rng.random()
    return _replace_span(rng, data, _TOKEN, lambda t: t[: int(len(t) * at)] + byte + t[int(len(t) * at) :])


def invalid_utf8(rng: Random, data: bytes) -> bytes:
    seq = rng.choice(INVALID_UTF8)
    if rng.random() < 0.5:
        i = _pos(rng, data)
        return data[:i] + seq + data[i:]
    return _replace_span(rng, data, _TOKEN, lambda t: t + seq)


def reencode(rng: Random, data: bytes) -> bytes:
    encoding = rng.choice(ENCODINGS)
    text = data.decode("utf-8", "replace")
    if encoding in ("latin-1", "cp1252"):
        # a non-ASCII character, so the result is not valid UTF-8
        text = _replace_span(rng, text.encode(), _TOKEN, lambda t: t + "é".encode()).decode()
        return text.encode(encoding, "replace")
    bom = {"utf-16-le+bom": b"\xff\xfe", "utf-16-be+bom": b"\xfe\xff"}.get(encoding, b"")
    return bom + text.encode(encoding.removesuffix("+bom"), "surrogatepass")


def compress(rng: Random, data: bytes) -> bytes:
    kind = rng.choice(tuple(_COMPRESS))
    out = _COMPRESS[kind](data)
    post = rng.choice(("none", "none", "truncate", "flip", "junk", "twice", "concat"))
    if post == "truncate":
        out = out[: _pos(rng, out)]
    elif post == "flip":
        out = flip_bits(rng, out)
    elif post == "junk":
        out += rng.choice((b"\x00", b"junk", b"\x1f\x8b", rng.randbytes(4)))
    elif post == "twice":
        out = _COMPRESS[rng.choice(tuple(_COMPRESS))](out)
    elif post == "concat":
        out += _COMPRESS[kind](data[: _pos(rng, data)])
    return out


def line_endings(rng: Random, data: bytes) -> bytes:
    kind = rng.choice(("crlf", "cr", "crcrlf", "one-crlf", "no-final"))
    if kind == "crlf":
        return data.replace(b"\n", b"\r\n")
    if kind == "cr":
        return data.replace(b"\n", b"\r")
    if kind == "crcrlf":
        return data.replace(b"\n", b"\r\r\n")
    if kind == "one-crlf":
        i = data.find(b"\n", _pos(rng, data))
        return data if i < 0 else data[:i] + b"\r" + data[i:]
    return data.rstrip(b"\r\n")


def bom(rng: Random, data: bytes) -> bytes:
    kind = rng.choice(("utf8", "utf8-twice", "utf8-mid", "utf16le", "utf16be"))
    if kind == "utf8-mid":
        lines = _lines(data)
        i = rng.randrange(len(lines) + 1)
        return b"".join([*lines[:i], b"\xef\xbb\xbf", *lines[i:]])
    prefix = {
        "utf8": b"\xef\xbb\xbf",
        "utf8-twice": b"\xef\xbb\xbf" * 2,
        "utf16le": b"\xff\xfe",
        "utf16be": b"\xfe\xff",
    }
    return prefix[kind] + data


def special_number(rng: Random, data: bytes) -> bytes:
    number = rng.choice(SPECIAL_NUMBERS)
    return _replace_span(rng, data, _NUMBER, lambda _: number)


def separators(rng: Random, data: bytes) -> bytes:
    sep = rng.choice(SEPARATORS)
    if rng.random() < 0.5:
        return _replace_span(rng, data, _SEPARATOR, lambda _: sep)
    return _SEPARATOR.sub(lambda _: sep, data)


def empty_file(rng: Random, data: bytes) -> bytes:
    return rng.choice(EMPTY_FILES)


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (
        flip_bits,
        set_byte,
        insert_bytes,
        delete_bytes,
        truncate,
        delete_lines,
        duplicate_line,
        swap_lines,
        blank_or_comment_line,
        swap_columns,
        delete_column,
        add_column,
        junk_token,
        long_token,
        control_bytes,
        invalid_utf8,
        reencode,
        compress,
        line_endings,
        bom,
        special_number,
        separators,
        empty_file,
    )
}
_FORMAT_LAST = ("reencode", "compress")  # applied last: they change the whole file's encoding
_WEIGHTED_COUNTS = (1, 1, 1, 2, 2, 3)


def mutate(rng: Random, data: bytes) -> tuple[bytes, list[str]]:
    """*data* after 1-3 random mutations, and their names. A compressed seed is usually
    decompressed, mutated and compressed again the same way (mutating the compressed bytes
    themselves mostly tests the decompressor)."""
    kind = next((k for m, k in _MAGIC.items() if data.startswith(m)), None)
    if kind is not None and rng.random() < 0.75:
        inner, names = mutate(rng, _DECOMPRESS[kind](data))
        return _COMPRESS[kind](inner), [f"{kind}({', '.join(names)})"]
    names = [rng.choice(tuple(MUTATIONS)) for _ in range(rng.choice(_WEIGHTED_COUNTS))]
    names.sort(key=lambda n: n in _FORMAT_LAST)
    for name in names:
        data = MUTATIONS[name](rng, data)
    return data, names


# ------------------------------------------------------------- JSON structure mutations

_DEEP = "@@DEEP@@"
JSON_VALUES: tuple[Any, ...] = (
    *(None, True, False, 0, -1, 1.5, -0.0, 1e308, -(2**63), 10**400, "x", "", "0.5"),
    *(float("nan"), float("inf"), float("-inf")),
    *([], {}, [1], [1, 2, 3], [None, {}], [0.5, {"d": "x"}], [0.5, {"d": [0.1]}], {"a": 1}),
)
JSON_KEYS = (
    "",
    "a/b",
    "/",
    "x\x00y",
    "user 1",
    " ",
    "#",
    "\n",
    "é",
    "q_1",
    "user_1",
    "doc_1",
    "k" * 300,
    "\u2028",
)
JSON_OPS = ("wrong_type", "delete", "add_key", "rename_key", "deep", "empty", "extend", "shorten", "swap")


def _json_paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _json_paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _json_paths(v, (*path, i))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _deep_text(rng: Random) -> str:
    depth = rng.choice((30, 1000, 100_000))
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


def mutate_json_structure(rng: Random, data: bytes) -> tuple[bytes, list[str]]:
    """*data* (a JSON document) with one structural change: a node of the wrong type,
    a missing or extra key, deep nesting, an empty container, a list too long or short."""
    try:
        doc = json.loads(data)
    except ValueError:
        return mutate(rng, data)
    root = [doc]  # so that the document itself can be replaced
    path = (0, *rng.choice(list(_json_paths(doc))))
    parent, key = _get(root, path[:-1]), path[-1]
    node = parent[key]
    op = rng.choice(JSON_OPS)
    if op == "wrong_type":
        parent[key] = rng.choice(JSON_VALUES)
    elif op == "delete" and len(path) > 1:
        del parent[key]
    elif op == "add_key":
        target = node if isinstance(node, dict) else parent if isinstance(parent, dict) else None
        if target is not None:
            target[rng.choice(JSON_KEYS)] = rng.choice(JSON_VALUES)
    elif op == "rename_key" and isinstance(parent, dict):
        parent[rng.choice(JSON_KEYS)] = parent.pop(key)
    elif op == "deep":
        parent[key] = _DEEP
    elif op == "empty":
        parent[key] = rng.choice(({}, [], "", None))
    elif op == "extend" and isinstance(node, list):
        node.append(rng.choice(JSON_VALUES))
    elif op == "extend" and isinstance(node, dict) and node:
        node[rng.choice(JSON_KEYS)] = next(iter(node.values()))
    elif op == "shorten" and isinstance(node, list) and node:
        node.pop()
    elif op == "swap" and isinstance(node, list):
        node.reverse()
    text = json.dumps(root[0], indent=rng.choice((None, 1, 3)), ensure_ascii=rng.random() < 0.5)
    text = text.replace(json.dumps(_DEEP), _deep_text(rng))
    return text.encode("utf-8", "surrogatepass"), [f"json:{op}"]


def mutate_json(rng: Random, data: bytes) -> tuple[bytes, list[str]]:
    """A structural JSON mutation (sometimes followed by byte mutations) or byte mutations."""
    if rng.random() < 0.6:
        data, names = mutate_json_structure(rng, data)
        if rng.random() < 0.3:
            data, more = mutate(rng, data)
            names += more
        return data, names
    return mutate(rng, data)


# ---------------------------------------------------------------------- measure specs

SPEC_VALUES = (
    *"10 0 -1 1 2 0.5 1.0 1e308 1e999 -1e308 1e-320 nan inf -inf NaN Infinity 2147483647 2147483648".split(),
    *"3h 1m 0s -3h 1e308h nanh 5% 101% -5% 0% 99999999999999999999 true false none None abc".split(),
    *"exact greedy clef 'x' \"\" '' '\\'' 1_0 0x10 .5 5. +1 --1".split(),
    '"a b"',
    "9" * 400,
    "9" * 5000,
)
SPEC_CHARS = "@()=,'\" .-_\\\t\n\x00é%+e9hx\u2028"
RANDOM_TEXT_CHARS = (
    SPEC_CHARS
    + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789{}[]#;:/*&|!?~$^\ud800\U0001f600"
)
EXTRA_PARAMS = ("k", "rel", "level", "p", "h", "cost", "foo", "_", "compat", "est")
VALID_SPECS = ("nDCG@10", "AP", "hTBG@h=3h", "P(rel=2)@5", "CS-DCG@10", "tar_recall@50%")


PLAUSIBLE = {  # values of each parameter type that a measure should accept
    "Duration": ("3", "3h", "10s", "1.5m", "224", "0.5"),
    "bool": ("true", "false"),
    "int": ("1", "2", "5", "10", "100", "1000"),
    "float": ("0", "0.5", "1", "2.5", "0.01", "12"),
    "str": ("x", "'a b'"),
}


@dataclass(frozen=True)
class SpecVocabulary:
    """Measure names (registry names, aliases, trec_eval and ir_measures spellings), the
    parameters each takes with their types (as text), and the name of its ``@`` parameter."""

    names: tuple[str, ...]
    params: dict[str, dict[str, str]]
    at: dict[str, str]


@cache
def registry() -> Any:
    """The registry of all installed plugins (built once per process)."""
    import rankeval

    return rankeval.load_registry()


@cache
def spec_vocabulary() -> SpecVocabulary:
    reg = registry()
    params: dict[str, dict[str, str]] = {}
    at: dict[str, str] = {}
    for name, entry in reg.measures.items():
        params[name] = {f.name: str(f.type) for f in dataclasses.fields(entry.cls)}
        at[name] = entry.cls.at or ""
    spellings = [(alias, target) for alias, (target, _) in reg.aliases.items()]
    spellings += [
        (f"{p}.{n}", target) for p, target in reg.prefixes.items() for n in ("5", "10", "0", "1000")
    ]
    for spelling, target in spellings:
        params[spelling], at[spelling] = params.get(target, {}), at.get(target, "")
    try:
        import ir_measures

        for name, measure in ir_measures.measures.registry.items():
            if name not in params:
                supported = getattr(measure, "SUPPORTED_PARAMS", {})
                params[name] = {
                    k: getattr(getattr(v, "dtype", None), "__name__", "") for k, v in supported.items()
                }
                at[name] = "cutoff" if "cutoff" in supported else ""
    except Exception:  # the bridge is optional; its names are just missing then
        pass
    names = (*sorted(params), "X", "nCS-DCG-", "_", "a.b-c", "P.", "ndcg_cut.x", "map_cut.99999999999")
    return SpecVocabulary(names, params, at)


def _spec_value(rng: Random, type_text: str = "") -> str:
    """A value for a parameter of type *type_text*: plausible (60%) or anything."""
    if type_text and rng.random() < 0.6:
        choices = re.findall(r"'([^']*)'", type_text)
        if choices:
            return rng.choice(choices)
        for kind, values in PLAUSIBLE.items():
            if kind in type_text:
                return rng.choice(values)
    r = rng.random()
    if r < 0.7:
        return rng.choice(SPEC_VALUES)
    if r < 0.8:
        return str(rng.randint(-5, 20))
    if r < 0.9:
        return repr(rng.uniform(-2, 2))
    return f"{rng.randint(1, 9)}e{rng.randint(-400, 400)}{rng.choice(('', 's', 'm', 'h', '%'))}"


def one_spec(rng: Random) -> str:
    """One spec from the grammar (``NAME [params] ['@' at] [params]``) with registry names,
    mostly the measure's own parameters."""
    vocab = spec_vocabulary()
    name = rng.choice(vocab.names)
    params = vocab.params.get(name, {})

    def key() -> str:
        return rng.choice(tuple(params)) if params and rng.random() < 0.85 else rng.choice(EXTRA_PARAMS)

    def param_list() -> str:
        items = [
            f"{k}={_spec_value(rng, params.get(k, ''))}" for k in (key() for _ in range(rng.randint(1, 3)))
        ]
        return "(" + rng.choice((",", ", ")).join(items) + ")"

    layout = rng.choice(("", "@", "@", "(", "@(", "(@", "(@("))
    text = name + (param_list() if layout.startswith("(") else "")
    if "@" in layout:
        at = vocab.at.get(name) or "k"
        value = _spec_value(rng, params.get(at, "int"))
        text += "@" + (value if rng.random() < 0.8 else f"{key()}={value}")
    return text + (param_list() if layout.endswith("(") and len(layout) > 1 else "")


def mutate_text(rng: Random, text: str) -> str:
    """1-3 character-level edits: delete, insert, duplicate, swap, truncate."""
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        op = rng.randrange(5)
        if op == 0:
            text = text[:i] + text[i + rng.randint(1, 3) :]
        elif op == 1:
            text = text[:i] + rng.choice(SPEC_CHARS) * rng.choice((1, 1, 2)) + text[i:]
        elif op == 2:
            text = text[:i] + text[i : i + rng.randint(1, 6)] + text[i:]
        elif op == 3 and i + 1 < len(text):
            text = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
        else:
            text = text[:i]
    return text


def spec_text(rng: Random) -> tuple[str, list[str]]:
    """Random text (15%) or 1-3 grammar-built specs, half of them with character edits."""
    if rng.random() < 0.15:
        return "".join(rng.choice(RANDOM_TEXT_CHARS) for _ in range(rng.randint(0, 30))), ["random-text"]
    specs = [one_spec(rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    text = rng.choice((" ", "  ", "\t", "\n")).join(specs)
    if rng.random() < 0.5:
        return mutate_text(rng, text), ["grammar", "char-edits"]
    return text, ["grammar"]


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    """Input files and one API call on them.

    Attributes:
        target: which target built the case.
        files: file name → content, written into an empty directory ``d`` before the call.
        call: the call as a Python expression over ``rankeval``, ``d`` and ``registry``
            (the reproducer script contains this very text).
        notes: the seeds and mutations the case came from.
        strict: any exception fails, and the call must return ``True`` (property checks).
        mutations: names of the mutations applied.
    """

    target: str
    files: dict[str, bytes]
    call: str
    notes: list[str] = field(default_factory=list)
    strict: bool = False
    mutations: list[str] = field(default_factory=list)

    def script(self, inline_limit: int = 1 << 16) -> str:
        """A standalone reproducer. Files larger than *inline_limit* bytes (as a literal)
        are read from the script's own directory instead."""
        out = [
            f"# rankeval fuzz case, target {self.target}: {'; '.join(self.notes)}",
            "import pathlib",
            "import tempfile",
            "",
            "import rankeval",
            "",
            "d = pathlib.Path(tempfile.mkdtemp())",
        ]
        for name, data in self.files.items():
            literal = bytes_literal(data)
            if len(literal) <= inline_limit:
                out.append(f"(d / {name!r}).write_bytes({literal})")
            else:
                out.append(
                    f"(d / {name!r}).write_bytes((pathlib.Path(__file__).parent / {name!r}).read_bytes())"
                )
        if "registry" in self.call:
            out.append("registry = rankeval.load_registry()")
        out.append(("assert " if self.strict else "") + self.call)
        return "\n".join(out) + "\n"


def bytes_literal(data: bytes) -> str:
    """A Python literal for *data*; runs of 40+ equal bytes are written as ``b"x" * n``."""
    parts = []
    pos = 0
    for m in re.finditer(rb"(.)\1{39,}", data, re.DOTALL):
        if m.start() > pos:
            parts.append(repr(data[pos : m.start()]))
        parts.append(f"{data[m.start() : m.start() + 1]!r} * {m.end() - m.start()}")
        pos = m.end()
    if pos < len(data) or not parts:
        parts.append(repr(data[pos:]))
    return " + ".join(parts)


def _mutated(
    target: str,
    call: str,
    rng: Random,
    seeds: dict[str, Seed],
    mutator: Callable[[Random, bytes], tuple[bytes, list[str]]] = mutate,
    notes: tuple[str, ...] = (),
) -> Case:
    """A case calling *call* on *seeds*, one of them mutated (80%) or all of them."""
    chosen = list(seeds) if rng.random() < 0.2 else [rng.choice(list(seeds))]
    case = Case(target, {}, call, list(notes))
    for name, seed in seeds.items():
        case.files[name] = seed.data
        if name in chosen:
            case.files[name], how = mutator(rng, seed.data)
            case.mutations += how
            case.notes.append(f"{name} = {seed.name} + {', '.join(how)}")
        else:
            case.notes.append(f"{name} = {seed.name}")
    return case


def case_qrels(rng: Random) -> Case:
    seeds = {"qrels.txt": rng.choice(corpus().qrels)}
    return _mutated("qrels", 'rankeval.Qrels.read(d / "qrels.txt")', rng, seeds)


def case_run(rng: Random) -> Case:
    seeds = {"run.txt": rng.choice(corpus().runs)}
    return _mutated("run", 'rankeval.Run.read(d / "run.txt")', rng, seeds)


def case_docinfo(rng: Random) -> Case:
    c = corpus()
    if rng.random() < 0.5:
        call = 'rankeval.Qrels.read(d / "qrels.txt").with_docinfo(d / "docinfo.txt")'
    else:
        measures = list(c.docinfo.measures)
        call = f'rankeval.evaluate(d / "qrels.txt", d / "run.txt", {measures!r}, options=rankeval.EvalOptions(docinfo=d / "docinfo.txt"))'
    case = _mutated("docinfo", call, rng, {"docinfo.txt": c.docinfo_file})
    case.files |= {"qrels.txt": c.docinfo.qrels.data, "run.txt": c.docinfo.run.data}
    return case


def case_htbg_json(rng: Random) -> Case:
    c = corpus()
    call = 'rankeval.evaluate(d / "truth.json", d / "prediction.json", ["hTBG@h=3"])'
    return _mutated(
        "htbg_json", call, rng, {"truth.json": c.truth, "prediction.json": c.prediction}, mutate_json
    )


def case_evaluate(rng: Random) -> Case:
    c = corpus()
    pair = rng.choice((*c.pairs, c.nested))
    measures = list(pair.measures)
    if rng.random() < 0.2:  # a measure of another family, on data not made for it
        other = rng.choice([p for p in (*c.pairs, c.nested) if p is not pair])
        measures.append(rng.choice(other.measures))
    call = f'rankeval.evaluate(d / "qrels.txt", d / "run.txt", {measures!r})'
    seeds = {"qrels.txt": pair.qrels, "run.txt": pair.run}
    return _mutated("evaluate", call, rng, seeds, notes=(f"pair {pair.name}",))


def case_convert(rng: Random) -> Case:
    c = corpus()
    if rng.random() < 0.5:
        call = 'rankeval.io.convert.json_to_trec(d / "truth.json", d / "prediction.json")'
        return _mutated(
            "convert", call, rng, {"truth.json": c.truth, "prediction.json": c.prediction}, mutate_json
        )
    call = 'rankeval.io.convert.trec_to_json(d / "qrels.txt", d / "run.txt")'
    return _mutated("convert", call, rng, {"qrels.txt": c.nested.qrels, "run.txt": c.nested.run})


def case_spec(rng: Random) -> Case:
    text, how = spec_text(rng)
    return Case("spec", {}, f"registry.parse_many({text!r})", [f"spec: {', '.join(how)}"], mutations=how)


def case_spec_roundtrip(rng: Random) -> Case:
    """``parse(str(m)) == m`` for a spec that parses (docs: formats.md, Measure specs)."""
    text = rng.choice(VALID_SPECS)
    for _ in range(20):
        candidate = one_spec(rng)
        try:
            registry().parse(candidate)
        except Exception:
            continue
        text = candidate
        break
    call = f"registry.parse(str(registry.parse({text!r}))) == registry.parse({text!r})"
    return Case("spec_roundtrip", {}, call, ["spec: grammar"], strict=True, mutations=["grammar"])


TARGETS: dict[str, Callable[[Random], Case]] = {
    "qrels": case_qrels,
    "run": case_run,
    "docinfo": case_docinfo,
    "htbg_json": case_htbg_json,
    "evaluate": case_evaluate,
    "convert": case_convert,
    "spec": case_spec,
    "spec_roundtrip": case_spec_roundtrip,
}


def seed_cases() -> list[Case]:
    """Each seed pair (and the side file, and the JSON pair) evaluated unmutated: all clean."""
    c = corpus()
    cases = []
    for pair in (*c.pairs, c.nested, c.docinfo):
        call = f'rankeval.evaluate(d / "qrels.txt", d / "run.txt", {list(pair.measures)!r})'
        cases.append(Case(pair.name, {"qrels.txt": pair.qrels.data, "run.txt": pair.run.data}, call))
    docinfo = {
        "qrels.txt": c.docinfo.qrels.data,
        "run.txt": c.docinfo.run.data,
        "docinfo.txt": c.docinfo_file.data,
    }
    call = f'rankeval.evaluate(d / "qrels.txt", d / "run.txt", {list(c.docinfo.measures)!r}, options=rankeval.EvalOptions(docinfo=d / "docinfo.txt"))'
    cases.append(Case("docinfo file", docinfo, call))
    call = 'rankeval.evaluate(d / "truth.json", d / "prediction.json", ["hTBG@h=3"])'
    cases.append(
        Case("htbg-toy JSON", {"truth.json": c.truth.data, "prediction.json": c.prediction.data}, call)
    )
    return cases


# ------------------------------------------------------------------------- verdicts


class FuzzTimeout(BaseException):
    """A case ran longer than its time limit (a BaseException, so that no ``except
    Exception`` in the code under test turns it into something else)."""


class CheckFailed(Exception):
    """A strict case's property did not hold."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`FuzzTimeout` in the main thread after *seconds* (no limit elsewhere)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise FuzzTimeout(f"case took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Outcome:
    """What one case did.

    Attributes:
        kind: ``"clean"`` (returned), ``"rejected"`` (raised a RankevalError) or ``"failure"``.
        error: the exception's type (``module.Name`` outside builtins), ``""`` when clean.
        frame: innermost frame in rankeval's code, ``path:line in function``.
        message: the exception's message (first 300 characters).
        irmeasures: the ir_measures bridge (or ir_measures itself) is in the traceback.
        warnings: warnings that are not RankevalWarnings, as ``Category at path:line``.
        seconds: wall time of the call.
    """

    kind: str
    error: str = ""
    frame: str = ""
    message: str = ""
    irmeasures: bool = False
    warnings: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def key(self) -> tuple[str, str]:
        """What makes two failures the same: exception type and innermost rankeval frame."""
        return self.error, self.frame


@cache
def _own_roots() -> tuple[str, ...]:
    import rankeval_trec

    import rankeval

    return (
        str(Path(rankeval.__file__).resolve().parent),
        str(Path(rankeval_trec.__file__).resolve().parent.parent),
    )


def _short(path: str) -> str:
    for root in _own_roots():
        if path.startswith(root):
            return str(Path(Path(root).name) / Path(path).relative_to(root))
    return path


def _type_name(exc: BaseException) -> str:
    t = type(exc)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _innermost(exc: BaseException) -> tuple[str, bool]:
    frames = traceback.extract_tb(exc.__traceback__)
    irm = any("rankeval_irmeasures" in f.filename or "/ir_measures/" in f.filename for f in frames)
    own = [f for f in frames if f.filename.startswith(_own_roots())]
    if not own:
        last = frames[-1] if frames else None
        return (
            f"(outside rankeval) {last.filename}:{last.lineno} in {last.name}" if last else "(no frame)"
        ), irm
    f = own[-1]
    return f"{_short(f.filename)}:{f.lineno} in {f.name}", irm


def _foreign_warnings(caught: list[warnings.WarningMessage]) -> tuple[str, ...]:
    from rankeval.errors import RankevalWarning

    return tuple(
        sorted(
            {
                f"{w.category.__name__} at {_short(w.filename)}:{w.lineno}"
                for w in caught
                if not issubclass(w.category, RankevalWarning)
            }
        )
    )


def write_files(case: Case, directory: Path) -> None:
    """Empty *directory* and write *case*'s files into it."""
    for old in directory.iterdir():
        old.unlink()
    for name, data in case.files.items():
        (directory / name).write_bytes(data)


def run_case(case: Case, directory: Path, timeout: float | None = 60) -> Outcome:
    """Run *case* with its files in *directory* (emptied first) and classify what happened."""
    import rankeval
    import rankeval.io.convert
    from rankeval.errors import RankevalError

    write_files(case, directory)
    namespace = {
        "rankeval": rankeval,
        "d": directory,
        "registry": registry() if "registry" in case.call else None,
    }
    code = compile(case.call, f"<fuzz case {case.target}>", "eval")
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with time_limit(timeout):
                result = eval(code, namespace)  # the reproducer's own expression, built above
            if case.strict and result is not True:
                raise CheckFailed(f"{case.call} is {result!r}")
        except (Exception, SystemExit, FuzzTimeout) as exc:
            seconds = time.perf_counter() - start
            if isinstance(exc, RankevalError) and not case.strict:
                return Outcome(
                    "rejected", _type_name(exc), seconds=seconds, warnings=_foreign_warnings(caught)
                )
            frame, irm = _innermost(exc)
            if isinstance(exc, CheckFailed):
                frame = f"str() of {_measure_class(case)} does not parse back to an equal measure"
            elif case.strict:
                frame += f" (str() of {_measure_class(case)})"
            return Outcome(
                "failure",
                _type_name(exc),
                frame,
                str(exc)[:300],
                irm or "IrMeasure" in frame,
                _foreign_warnings(caught),
                seconds,
            )
    return Outcome("clean", seconds=time.perf_counter() - start, warnings=_foreign_warnings(caught))


def _measure_class(case: Case) -> str:
    m = re.search(r"== registry\.parse\((.*)\)$", case.call)
    try:
        return type(registry().parse(ast.literal_eval(m.group(1)))).__name__ if m else "?"
    except Exception:
        return "?"


def assert_no_crash(case: Case, directory: Path, timeout: float | None = 60) -> None:
    """Fail (AssertionError with the reproducer) unless *case* returns or raises a RankevalError."""
    outcome = run_case(case, directory, timeout)
    if outcome.kind == "failure":
        tag = " [ir_measures bridge]" if outcome.irmeasures else ""
        raise AssertionError(
            f"{outcome.error} at {outcome.frame}{tag}: {outcome.message}\n\nreproducer:\n{case.script(4096)}"
        )
