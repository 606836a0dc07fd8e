"""The fast readers give what the exact ones give, to the bit, and step aside on any anomaly.

* hTBG JSON: the fast path (msgspec, then checks in bulk) against the exact path (Python's
  ``json`` and a walk over every item, the reader as it was), on generated collections
  (±Infinity scores, unicode ids, individuals without documents, null labels, ids holding
  the separator, colons, quotes); each anomaly still gets the exact path's message.
* qrels attributes: lines with one ``key=value`` each, cut at the ``=`` byte, against the
  general split; repeated judgments against the former sort.
* ranking: pyarrow's multi-key sort against ``np.lexsort``, and the duplicate check's
  digit-id key.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankeval.errors import InputError
from rankeval.io import htbg_json, trec, validate
from rankeval.io.data import Qrels, Run
from rankeval.io.lines import split_lines
from rankeval.ranking import alignment, duplicates

SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# ---------------------------------------------------------------------------- hTBG JSON
IDS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=5) | st.sampled_from(
    ["a", "a/b", "b", "x:y", "-0", "Infinity", 'q"1', "\\", "é/ü", "u-0"]
)
FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([0.0, -0.0, 0.5, 1e-300, 5e-324])
NUMBERS = FLOATS | st.integers(-(2**70), 2**70) | st.sampled_from([0, 1, 56, 10**16, 2**53 + 1])
SCORES = NUMBERS | st.sampled_from([float("inf"), float("-inf")])


def documents(value: st.SearchStrategy) -> st.SearchStrategy:
    return st.dictionaries(IDS, value, max_size=4)


def collection(first: st.SearchStrategy, value: st.SearchStrategy) -> st.SearchStrategy:
    individuals = st.dictionaries(IDS, st.tuples(first, documents(value)).map(list), max_size=4)
    return st.dictionaries(IDS, individuals, max_size=3)


TRUTHS = collection(st.none() | NUMBERS, st.tuples(NUMBERS, NUMBERS).map(list))
PREDICTIONS = collection(SCORES, SCORES)


def dumps(document: object, indent: int | None, ascii_only: bool) -> bytes:
    return json.dumps(document, indent=indent, ensure_ascii=ascii_only).encode("utf-8")


def outcome(call):
    """``("rows", repr)`` of what *call* returns (repr keeps -0.0 and every digit), or
    ``("error", message)`` of the InputError it raises."""
    try:
        return "rows", repr(call())
    except InputError as exc:
        return "error", str(exc)


def exact_truth(path: Path, sep: str = "/") -> list:
    return htbg_json._exact_truth(trec.read_bytes(path), trec.source_name(path), sep)


def exact_prediction(path: Path, sep: str = "/") -> list:
    return htbg_json._exact_prediction(trec.read_bytes(path), trec.source_name(path), sep)


def fast_taken(path: Path, kind: object) -> bool:
    data = trec.read_bytes(path)
    if kind is htbg_json._PredictionDoc and b"Infinity" in data:
        data, kind = htbg_json._INFINITY.sub(rb'\1"\2"', data), htbg_json._InfinitePredictionDoc
    return htbg_json._checked(data, kind, "/") is not None


@SETTINGS
@given(TRUTHS, st.sampled_from([None, 1]), st.booleans(), st.sampled_from(["/", ":", "::"]))
def test_truth_fast_path_equals_the_exact_path(tmp_path, truth, indent, ascii_only, sep):
    path = tmp_path / "truth.json"
    path.write_bytes(dumps(truth, indent, ascii_only))
    assert outcome(lambda: htbg_json.read_truth(path, sep)) == outcome(lambda: exact_truth(path, sep))


@SETTINGS
@given(PREDICTIONS, st.sampled_from([None, 1]), st.booleans(), st.sampled_from(["/", ":"]))
def test_prediction_fast_path_equals_the_exact_path(tmp_path, prediction, indent, ascii_only, sep):
    path = tmp_path / "prediction.json"
    path.write_bytes(dumps(prediction, indent, ascii_only))
    expected = outcome(lambda: exact_prediction(path, sep))
    assert outcome(lambda: htbg_json.read_prediction(path, sep)) == expected


CLEAN_IDS = st.text("abcdéü_.-", min_size=1, max_size=4)
GRADES = st.floats(*validate.GRADES) | st.sampled_from([0.0, -0.0, 0.5, 1e-300, 5e-324])  # relevance values
CLEAN_TRUTHS = st.dictionaries(
    CLEAN_IDS,
    st.dictionaries(
        CLEAN_IDS,
        st.tuples(
            st.none() | GRADES,
            st.dictionaries(
                CLEAN_IDS, st.tuples(GRADES, FLOATS | st.integers(0, 10**6)).map(list), max_size=4
            ),
        ).map(list),
        min_size=1,
        max_size=4,
    ),
    min_size=1,
    max_size=3,
)
CLEAN_PREDICTIONS = st.dictionaries(
    CLEAN_IDS,
    st.dictionaries(
        CLEAN_IDS,
        st.tuples(SCORES, st.dictionaries(CLEAN_IDS, SCORES, max_size=4)).map(list),
        min_size=1,
        max_size=4,
    ),
    min_size=1,
    max_size=3,
)


@SETTINGS
@given(CLEAN_TRUTHS, CLEAN_PREDICTIONS, st.booleans())
def test_clean_collections_take_the_fast_path_with_the_same_tables(tmp_path, truth, prediction, ascii_only):
    """Well-formed files (±Infinity scores, unicode ids, individuals without documents, null
    labels) are read by the fast path, and the tables equal those of the exact path."""
    truth_path, prediction_path = tmp_path / "t.json", tmp_path / "p.json"
    truth_path.write_bytes(dumps(truth, None, ascii_only))
    prediction_path.write_bytes(dumps(prediction, None, ascii_only))
    assert fast_taken(truth_path, htbg_json._TruthDoc)
    assert fast_taken(prediction_path, htbg_json._PredictionDoc)
    fast_truth = htbg_json.read_truth_table(truth_path)
    fast_run = htbg_json.read_prediction_table(prediction_path, tag="p.json")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(htbg_json, "_checked", lambda *args: None)  # the exact path only
        exact_truth_table = htbg_json.read_truth_table(truth_path)
        exact_run = htbg_json.read_prediction_table(prediction_path, tag="p.json")
    assert fast_truth.schema.equals(exact_truth_table.schema) and fast_truth.equals(exact_truth_table)
    assert fast_run.schema.equals(exact_run.schema) and fast_run.equals(exact_run)
    assert repr(htbg_json.read_truth(truth_path)) == repr(exact_truth(truth_path))


def test_the_tables_are_those_the_readers_built_from_rows(tmp_path):
    """Qrels.read and Run.read of JSON: the columns the row-built tables had (pinned)."""
    truth = {"q": {"u": [None, {"p": [0.25, 56]}], "v": [1, {}]}, "empty": {}}
    prediction = {"empty": {}, "q": {"u": [float("inf"), {"p": -0.0}], "v": [0.5, {}]}}
    (tmp_path / "t.json").write_text(json.dumps(truth))
    (tmp_path / "p.json").write_text(json.dumps(prediction))
    qrels = Qrels.read(tmp_path / "t.json").table
    assert qrels.column_names == ["query_id", "iteration", "doc_id", "relevance", "line", "cost", "exclude"]
    assert qrels.to_pylist() == [
        {
            "query_id": "q",
            "iteration": "0",
            "doc_id": "u",
            "relevance": 0.0,
            "line": 0,
            "cost": None,
            "exclude": "1",
        },
        {
            "query_id": "q",
            "iteration": "0",
            "doc_id": "u/p",
            "relevance": 0.25,
            "line": 0,
            "cost": "56",
            "exclude": None,
        },
        {
            "query_id": "q",
            "iteration": "0",
            "doc_id": "v",
            "relevance": 1.0,
            "line": 0,
            "cost": None,
            "exclude": None,
        },
    ]
    run = Run.read(tmp_path / "p.json")
    assert run.tie_break == "qrels" and run.table.schema.field("query_id").type == pa.dictionary(
        pa.int32(), pa.string()
    )
    assert run.table.column("query_id").combine_chunks().dictionary.to_pylist() == ["q"]
    assert [(r["doc_id"], r["score"], r["q0"], r["tag"]) for r in run.table.to_pylist()] == [
        ("u", float("inf"), "Q0", "p.json"),
        ("u/p", -0.0, "Q0", "p.json"),
        ("v", 0.5, "Q0", "p.json"),
    ]


def test_word_counts_keep_their_repr(tmp_path):
    """A float's repr; an integer as written (the hTBG reference multiplies integers as int64)."""
    posts = {"a": [0.5, 7.5], "b": [0, 1e20], "c": [1, 10**15], "d": [0, 0.1], "e": [0, -3], "f": [0, 15.0]}
    truth = {"q": {"u": [1, posts], "v": [1, {"g": [0, 2**53 + 1], "h": [0, 10**20]}]}}
    (tmp_path / "t.json").write_text(json.dumps(truth))
    cost = Qrels.read(tmp_path / "t.json").table.column("cost").to_pylist()
    first = [None, "7.5", "1e+20", "1000000000000000", "0.1", "-3", "15.0"]
    assert cost == [*first, None, "9007199254740993", str(10**20)]


# each anomaly: the file, and a part of the exact path's message (pinned from the reader as it was)
ANOMALIES = {
    "query twice": (
        '{"q": {"a": [1, {}]}, "q": {"b": [1, {}]}}',
        'key "q" given twice; expected each of the queries once',
    ),
    "individual twice": ('{"q": {"a": [1, {}], "a": [0, {}]}}', '$["q"]: key "a" given twice'),
    "document twice": (
        '{"q": {"a": [1, {"x": [0.5, 1], "x": [0.2, 2]}]}}',
        '$["q"]["a"][1]: key "x" given twice',
    ),
    "twice behind an escaped colon": (
        '{"q\\u003a": {"a": [1, {"x": [0.5, 1], "x": [0.2, 2]}]}}',
        '$["q:"]["a"][1]: key "x" given twice',
    ),
    "NaN": ('{"q": {"a": [NaN, {}]}}', '$["q"]["a"][0]: expected a number, found NaN'),
    "infinite stop": ('{"q": {"a": [1, {"x": [Infinity, 1]}]}}', "expected a finite number, found Infinity"),
    "too large": (
        '{"q": {"a": [1, {"x": [0.5, 1e400]}]}}',
        '$["q"]["a"][1]["x"][1]: expected a finite number',
    ),
    "control character": ('{"q": {"a\\u0001": [1, {}]}}', "control character '\\x01' in an id"),
    "DEL": ('{"q": {"a\x7f": [1, {}]}}', "control character '\\x7f' in an id"),
    "escaped newline": ('{"q": {"a": [1, {"x\\n": [0.5, 1]}]}}', "control character '\\n' in an id"),
    "empty id": ('{"q": {"": [1, {}]}}', '$["q"][""]: empty id; expected a non-empty id'),
    "item twice": (
        '{"q": {"a/b": [1, {}], "a": [1, {"b": [0.5, 1]}]}}',
        'item "a/b" of query "q" already given at $["q"]["a/b"]',
    ),
    "no individual": ('{"q": {}}', "no judgments: it has no individual"),
    "empty object": ("{}", "no judgments: it has no individual"),
    "not an object": ("[1]", "$: expected a JSON object"),
    "boolean": ('{"q": {"a": [true, {}]}}', "expected a number, found true"),
    "short pair": (
        '{"q": {"a": [1]}}',
        '$["q"]["a"]: expected [label, {doc: [stop_probability, words]}], found [1.0]',
    ),
    "null stop": (
        '{"q": {"a": [1, {"x": [null, 1]}]}}',
        '$["q"]["a"][1]["x"][0]: expected a number, found null',
    ),
    "string number": ('{"q": {"a": [1, {"x": ["0.5", 1]}]}}', 'expected a number, found "0.5"'),
    "invalid JSON": ('{"q": {"a": [1, {}]}', "not valid JSON"),
    "trailing comma": ('{"q": {"a": [1, {},]}}', "not valid JSON"),
    "too deep": ('{"q": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply to read"),
}


@pytest.mark.parametrize("name", list(ANOMALIES))
def test_each_truth_anomaly_keeps_its_message(tmp_path, name):
    text, fragment = ANOMALIES[name]
    path = tmp_path / "truth.json"
    path.write_text(text, encoding="utf-8")
    kind, message = outcome(lambda: exact_truth(path))
    assert kind == "error" and fragment in message
    assert outcome(lambda: Qrels.read(path)) == ("error", message)
    assert outcome(lambda: htbg_json.read_truth(path)) == ("error", message)


PREDICTION_ANOMALIES = {
    "NaN score": ('{"q": {"a": [0.5, {"x": NaN}]}}', "expected a number, found NaN"),
    "a string Infinity": ('{"q": {"a": ["Infinity", {}]}}', 'expected a number, found "Infinity"'),
    "a string -Infinity": (
        '{"q": {"a": [Infinity, {"x": "-Infinity"}]}}',
        'expected a number, found "-Infinity"',
    ),
    "score twice": ('{"q": {"a": [0.5, {"x": 1, "x": Infinity}]}}', 'key "x" given twice'),
    "empty run": ('{"q": {}}', "empty run: it has no individual"),
    "null score": ('{"q": {"a": [null, {}]}}', "expected a number, found null"),
}


@pytest.mark.parametrize("name", list(PREDICTION_ANOMALIES))
def test_each_prediction_anomaly_keeps_its_message(tmp_path, name):
    text, fragment = PREDICTION_ANOMALIES[name]
    path = tmp_path / "prediction.json"
    path.write_text(text, encoding="utf-8")
    kind, message = outcome(lambda: exact_prediction(path))
    assert kind == "error" and fragment in message
    assert outcome(lambda: Run.read(path)) == ("error", message)


@pytest.mark.parametrize("byte", [*range(0x20), 0x7F])
def test_a_raw_control_byte_in_an_id_is_refused_as_before(tmp_path, byte):
    path = tmp_path / "truth.json"
    path.write_bytes(b'{"q": {"a' + bytes([byte]) + b'": [1, {}]}}')
    expected = outcome(lambda: exact_truth(path))
    assert expected[0] == "error" and outcome(lambda: htbg_json.read_truth(path)) == expected


@pytest.mark.parametrize(
    "text, encoding, fragment",
    [
        ('{"q": {"a": [1, {}]}}', "utf-16", "UTF-16 text; expected UTF-8"),
        ('{"q": {"a": [1, {}]}}', "utf-32", "UTF-32 text; expected UTF-8"),
    ],
)
def test_wide_encodings_are_named(tmp_path, text, encoding, fragment):
    path = tmp_path / "truth.json"
    path.write_bytes(text.encode(encoding))
    kind, message = outcome(lambda: htbg_json.read_truth(path))
    assert kind == "error" and fragment in message


def test_invalid_utf8_is_named_as_before(tmp_path):
    path = tmp_path / "truth.json"
    path.write_bytes(b'{"q": {"a\xff": [1, {}]}}')
    kind, message = outcome(lambda: htbg_json.read_truth(path))
    assert kind == "error" and "not valid UTF-8 text" in message
    assert outcome(lambda: exact_truth(path)) == (kind, message)


@pytest.mark.parametrize(
    "text",
    [
        '{"q": {"a": [-0, {"x": [-0, -0]}]}}',  # -0: msgspec reads 0.0, Python's json -0.0
        '{"q": {"a": [1, {"x": [0.5, 1]}]}, "u-0": {"b": [ -0 , {}]}}',
        '{"q": {"a": [2147483647, {"x": [0.5, 18446744073709551617]}]}}',  # the largest grade
        '{"q:": {"a:b": [1, {"x::": [0.5, 1]}]}, "r\\u003a": {"c": [0, {}]}}',  # colons in ids
    ],
)
def test_numbers_and_ids_the_decoder_reads_differently_give_the_exact_rows(tmp_path, text):
    path = tmp_path / "truth.json"
    path.write_text(text, encoding="utf-8")
    assert outcome(lambda: htbg_json.read_truth(path)) == outcome(lambda: exact_truth(path))
    assert outcome(lambda: htbg_json.read_truth(path))[0] == "rows"


@pytest.mark.parametrize(
    "text",
    [
        '{"q": {"a:Infinity": [Infinity, {"x": -Infinity}]}}',  # a key the substitution breaks
        '{"q": {"Infinity": [-Infinity, {"x": 1e400}]}}',  # 1e400: infinite, a valid score
        '{"q": {"a": [ -Infinity , {"x":Infinity,"y":-0}]}}',
    ],
)
def test_infinite_scores_give_the_exact_rows(tmp_path, text):
    path = tmp_path / "prediction.json"
    path.write_text(text, encoding="utf-8")
    expected = outcome(lambda: exact_prediction(path))
    assert expected[0] == "rows" and outcome(lambda: htbg_json.read_prediction(path)) == expected


def test_a_lone_surrogate_is_refused_by_both_paths(tmp_path):
    """Python's json reads a lone surrogate (msgspec does not): the exact path refuses it,
    with its JSON path, and the reader gives that error."""
    path = tmp_path / "truth.json"
    path.write_text('{"q": {"\\ud800": [1, {"x": [0.5, 1]}]}}')
    expected = outcome(lambda: exact_truth(path))
    assert expected[0] == "error" and '$["q"]["\\ud800"]: unpaired surrogate' in expected[1]
    assert outcome(lambda: htbg_json.read_truth_table(path)) == expected


# ---------------------------------------------------------------------------- qrels
FIELD = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x2FF), min_size=1, max_size=4)
KEYS = st.sampled_from(["cost", "sens", "abcd", "é", "", "line", "query_id", "x"]) | FIELD
ATTRIBUTE = (
    st.tuples(KEYS, st.text(st.characters(min_codepoint=0x21, max_codepoint=0x2FF), max_size=3)).map(
        lambda kv: f"{kv[0]}={kv[1]}"
    )
    | FIELD
)
LINE = st.tuples(
    st.sampled_from(["q1", "q2"]),
    st.sampled_from(["0", "1"]),
    FIELD,
    st.sampled_from(["0", "1", "2", "0.5"]),
    st.lists(ATTRIBUTE, max_size=2),
).map(lambda t: " ".join([*t[:4], *t[4]]))


def _table_or_error(call):
    try:
        table = call()
    except InputError as exc:
        return "error", str(exc)
    return "table", table.schema, table.to_pylist()


@SETTINGS
@given(st.lists(LINE, min_size=1, max_size=25), st.integers(0, 1))
def test_one_attribute_per_line_equals_the_general_split(lines, docinfo):
    data = ("\n".join(lines) + "\n").encode("utf-8")
    first = 4 if not docinfo else 1

    def attributes() -> pa.Table:
        return pa.table(
            trec._attributes(split_lines(data, "x"), first, "here", set(trec.RESERVED)) or {"-": [0]}
        )

    fast = _table_or_error(attributes)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trec, "_one_attribute_per_line", lambda *args: None)
        assert fast == _table_or_error(attributes)


def _former_repeated_judgment(columns: dict) -> tuple[int, int] | None:
    """The repeated-judgment search as it was (np.unique and a sort): the oracle."""
    codes = []
    for key in ("query_id", "iteration", "doc_id"):
        encoded = trec.dictionary_encode(columns[key])
        codes.append((np.asarray(encoded.indices, dtype=np.int64), max(len(encoded.dictionary), 1)))
    (q, _), (i, ni), (d, nd) = codes
    if len(q) < 2:
        return None
    qi = np.unique(q * ni + i, return_inverse=True)[1].ravel()
    key = qi * nd + d
    order = np.argsort(key, kind="stable")
    same = key[order][1:] == key[order][:-1]
    if not same.any():
        return None
    later = int(order[1:][same].min())
    return int(np.flatnonzero(key == key[later])[0]), later


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("01"), st.sampled_from("vwxyz")), max_size=30)
)
def test_repeated_judgments_are_found_as_before(triples):
    columns = {
        key: pa.array([t[k] for t in triples], pa.string())
        for k, key in enumerate(("query_id", "iteration", "doc_id"))
    }
    assert validate.repeated_judgment(columns) == _former_repeated_judgment(columns)


# ---------------------------------------------------------------------------- ranking
ORDER_VALUES = st.sampled_from([0.0, -0.0, 1.0, 0.5, float("inf"), float("-inf"), 1e-300])


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 3), ORDER_VALUES | st.floats(-10, 10)), max_size=40))
def test_the_multi_key_sort_is_lexsort(pairs):
    first = np.array([p[0] for p in pairs], dtype=np.int64)
    second = np.array([p[1] for p in pairs], dtype=np.float64)
    assert alignment._stable_order(first, second).tolist() == np.lexsort((-second, first)).tolist()


@SETTINGS
@given(st.lists(st.integers(0, 50), unique=True, max_size=30))
def test_ascending_positions(positions):
    array = np.array(positions, dtype=np.int64)
    assert alignment._ascending(array, 51).tolist() == np.argsort(array, kind="stable").tolist()


@pytest.mark.parametrize("ids", [["a", "1", "1"], ["1", "a", "a"], ["07", "7", "x"], ["1", "2", "1"]])
def test_duplicate_check_whatever_the_first_id(ids):
    import pandas as pd

    run = Run.from_frame(pd.DataFrame({"query_id": "q", "doc_id": ids, "score": 1.0}), "r")
    if len(set(ids)) < len(ids):
        with pytest.raises(InputError, match="duplicate document"):
            duplicates.check_duplicates(run)
    else:
        assert duplicates.check_duplicates(run) is run
