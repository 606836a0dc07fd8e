"""The bundled nested example (``rankeval/examples/nested``: people → their posts, unjudged
posts, a cost and a sensitivity grade for every post in a ``--docinfo`` file) against a plain
loop computation written here from the papers' formulas, reading the files with plain Python:

- hTBG (Shing et al. 2020, as docs/tbg.md): individuals in run order (score descending, ties
  by docno descending); each individual's posts in run order, first ``max_docs`` = 50; stopping
  probability R = the post's label (0 if unjudged); words W = ``cost=`` from the qrels line,
  else from the docinfo file; E = Σ W_l Π_{m<l}(1 - R_m); time t = T_s + P_click(rel)(T_alpha E +
  T_beta); gain P_click(1) P_save(1) for an at-risk individual with a post of R > 0.
- CS-DCG@k and nCS-DCG@k at level 2 (Sayed & Oard 2019): each individual with judged posts is
  a sub-query ranking its posts; an unjudged post gains 0 and costs C * its docinfo ``sens=``;
  the bounds are the best and worst CS-DCG@k over every ranking of the judged posts (brute
  force); sub-queries averaged per query, undefined ones (best = worst) left out.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections import defaultdict
from pathlib import Path

import pytest

import rankeval
from rankeval.errors import RankevalWarning

EXAMPLE = Path(rankeval.__file__).parent / "examples" / "nested"
QRELS, DOCINFO = EXAMPLE / "qrels.txt", EXAMPLE / "posts.docinfo"
RUNS = {"bm25": EXAMPLE / "bm25.run", "bert": EXAMPLE / "bert.run"}


# ------------------------------------------------------------------------------ plain reading
def read_example(run_path: Path):
    labels: dict[tuple[str, str], float] = {}
    for line in QRELS.read_text().splitlines():
        q, _, doc, rel = line.split()
        labels[q, doc] = float(rel)
    info: dict[str, dict[str, float]] = {}
    for line in DOCINFO.read_text().splitlines():
        doc, *pairs = line.split()
        info[doc] = {k: float(v) for k, v in (p.split("=") for p in pairs)}
    people: dict[str, list[tuple[float, str]]] = defaultdict(list)
    posts: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for line in run_path.read_text().splitlines():
        q, _, doc, _, score, _ = line.split()
        if "/" in doc:
            posts[q, doc.split("/")[0]].append((float(score), doc))
        else:
            people[q].append((float(score), doc))

    def ranked(entries):  # score descending, ties by docno descending (trec_eval's order)
        return [d for _, d in sorted(entries, reverse=True)]

    return labels, info, {q: ranked(v) for q, v in people.items()}, {k: ranked(v) for k, v in posts.items()}


# ------------------------------------------------------------------------------ references
def htbg(run_path: Path, h: float, max_docs: int = 50) -> dict[str, float]:
    labels, info, people, posts = read_example(run_path)
    out = {}
    for q, ranking in people.items():
        clock, total = 0.0, 0.0
        for person in ranking:
            at_risk = labels.get((q, person), 0) >= 1
            expected, keep_reading, signal = 0.0, 1.0, False
            for post in posts[q, person][:max_docs]:
                stop = labels.get((q, post), 0.0)
                expected += info[post]["cost"] * keep_reading
                keep_reading *= 1 - stop
                signal |= stop > 0
            click = 0.64 if at_risk else 0.39
            if at_risk and signal:
                total += 0.64 * 0.77 * 2 ** (-clock / h)
            clock += 4.4 + click * (0.018 * expected + 7.8)
        out[q] = total
    return out


def cs_dcg(rels, sens, k, cost=12.0):
    return sum(
        (2**r - 1) / math.log2(i + 2) - cost * s
        for i, (r, s) in enumerate(zip(rels[:k], sens[:k], strict=True))
    )


def ncs_dcg_level2(run_path: Path, k: int = 10) -> tuple[dict[str, float], dict[str, float]]:
    """(CS-DCG@k, nCS-DCG@k) per query, at level 2."""
    labels, info, _, posts = read_example(run_path)
    plain, normalised = {}, {}
    for q in sorted({q for q, _ in posts}):
        values, norms = [], []
        for (qq, person), ranking in sorted(posts.items()):
            judged = [d for d in (dd for qq2, dd in labels if qq2 == q) if d.startswith(person + "/")]
            if qq != q or not judged:
                continue  # a sub-query is a parent with judged children
            value = cs_dcg([labels.get((q, d), 0) for d in ranking], [info[d]["sens"] for d in ranking], k)
            tops = [
                cs_dcg([labels[q, d] for d in top], [info[d]["sens"] for d in top], k)
                for top in itertools.permutations(judged, min(k, len(judged)))
            ]
            best, worst = max(tops), min(tops)
            values.append(value)
            if best - worst > 1e-12:
                norms.append(min(1.0, max(0.0, (value - worst) / (best - worst))))
        plain[q] = sum(values) / len(values)
        normalised[q] = sum(norms) / len(norms) if norms else math.nan
    return plain, normalised


def rankeval_values(run: Path, spec: str) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankevalWarning)
        frame = rankeval.evaluate(QRELS, run, [spec], options=rankeval.EvalOptions(docinfo=DOCINFO))
    return {
        q if isinstance(q, str) else None: v for q, v in zip(frame["query_id"], frame["value"], strict=True)
    }


# ------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.parametrize(("spec", "h"), [("hTBG@h=1m", 60.0), ("hTBG@h=3h", 10800.0), ("hTBG@h=20", 20.0)])
def test_htbg_with_unjudged_posts_costed_by_the_docinfo(name, spec, h):
    expected = htbg(RUNS[name], h)
    got = rankeval_values(RUNS[name], spec)
    for q, value in expected.items():
        assert got[q] == pytest.approx(value, rel=1e-12, abs=1e-15), q
    assert got[None] == pytest.approx(sum(expected.values()) / len(expected), rel=1e-12)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_cs_dcg_and_ncs_dcg_at_level_2(name):
    plain, normalised = ncs_dcg_level2(RUNS[name])
    got_plain = rankeval_values(RUNS[name], "CS-DCG@10(level=2)")
    got_norm = rankeval_values(RUNS[name], "nCS-DCG@10(level=2)")
    for q in plain:
        assert got_plain[q] == pytest.approx(plain[q], rel=1e-12), q
        assert got_norm[q] == pytest.approx(normalised[q], rel=1e-12, abs=1e-15), q
    defined = [v for v in normalised.values() if not math.isnan(v)]
    assert got_norm[None] == pytest.approx(sum(defined) / len(defined), rel=1e-12)


def test_the_example_has_what_it_claims():
    """Unjudged posts in the run, an unjudged individual, every post in the docinfo file."""
    labels, info, people, posts = read_example(RUNS["bm25"])
    ranked_posts = {d for ranking in posts.values() for d in ranking}
    assert ranked_posts <= set(info)
    assert len({d for d in ranked_posts if not any((q, d) in labels for q in people)}) >= 10
    assert any((q, p) not in labels for q, ranking in people.items() for p in ranking)
    assert any(v["sens"] > 0 for v in info.values())


def test_level_warning_only_when_the_attribute_is_elsewhere():
    def warned(spec: str) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rankeval.evaluate(QRELS, RUNS["bm25"], [spec], options=rankeval.EvalOptions(docinfo=DOCINFO))
        return [str(w.message) for w in caught if "is given only on items of level" in str(w.message)]

    (message,) = warned("nCS-DCG@10")  # ranks people; sens= is on posts only
    assert "sens= is given only on items of level 2" in message and "level=2" in message
    assert warned("nCS-DCG@10(level=2)") == []
    assert warned("hTBG@h=1m") == []  # reads the posts' cost= by design
    assert warned("TBG@h=1m") == []


def test_level_warning_for_an_attribute_given_on_parents_only(tmp_path):
    qrels = tmp_path / "q"
    qrels.write_text("1 0 a 1 sens=2\n1 0 a/x 1\n1 0 a/y 0\n")
    run = tmp_path / "r"
    run.write_text("1 Q0 a 1 2 t\n1 Q0 a/x 1 2 t\n1 Q0 a/y 2 1 t\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rankeval.evaluate(qrels, run, ["CS-DCG@10(level=2)"])
    messages = [str(w.message) for w in caught]
    assert any("sens= is given only on items of level 1" in m for m in messages), messages


def test_missing_cost_names_the_count_and_how_to_supply_it(tmp_path):
    side = tmp_path / "half.docinfo"
    lines = DOCINFO.read_text().splitlines()
    side.write_text("\n".join(lines[::2]) + "\n")  # every other post lacks its cost
    have = {line.split()[0] for line in lines[::2]}
    _, _, _, posts = read_example(RUNS["bm25"])
    lacking = [d for ranking in posts.values() for d in ranking if d not in have]
    with pytest.raises(rankeval.InputError) as err:
        rankeval.evaluate(QRELS, RUNS["bm25"], ["hTBG"], options=rankeval.EvalOptions(docinfo=side))
    message = str(err.value)
    assert f"{len(lacking)} items have no cost= attribute" in message, message
    assert "--docinfo" in message and "default_cost=" in message
    assert sum(f"'{d}'" in message for d in lacking) == 3


def test_cli_headline_command():
    """The README's nested command: two named runs, the docinfo file, both measures."""
    from typer.testing import CliRunner

    from rankeval.cli.app import app

    runs = [f"{name}={path}" for name, path in RUNS.items()]
    args = [str(QRELS), *runs, "--docinfo", str(DOCINFO), "-m", "hTBG@h=1m", "-m", "nCS-DCG@10(level=2)"]
    result = CliRunner().invoke(app, [*args, "-f", "tsv", "-p", "12"])
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()[1:]]
    got = {(r, m): float(v) for r, q, m, v in rows if q == ""}
    for name, path in RUNS.items():
        expected_htbg = htbg(path, 60.0)
        assert got[name, "hTBG@1m"] == pytest.approx(sum(expected_htbg.values()) / 2, abs=1e-12)
        norms = [v for v in ncs_dcg_level2(path)[1].values() if not math.isnan(v)]
        assert got[name, "nCS-DCG(level=2)@10"] == pytest.approx(sum(norms) / len(norms), abs=1e-12)
