"""A qrels argument that is not a path is tried as an ir_datasets id (no network: the
datasets are registered from local files, and the offline case is simulated)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ir_datasets
import pytest
import requests
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import TrecQrels
from ir_datasets.util import Download, LocalDownload, RequestsDownload
from typer.testing import CliRunner

import rankeval
from rankeval.cli.app import app
from rankeval.errors import InputError
from rankeval.io.data import Qrels

DATA = Path(__file__).parent / "data" / "dl-hard"
DATASET_ID = "rankeval-test/dl-hard-local"


@pytest.fixture(scope="module")
def dataset_id():
    if DATASET_ID not in ir_datasets.registry:
        qrels = TrecQrels(
            LocalDownload(DATA / "dl_hard-passage.qrels"), {0: "not", 1: "rel", 2: "hi", 3: "top"}
        )
        ir_datasets.registry.register(DATASET_ID, Dataset(qrels))
    return DATASET_ID


def test_qrels_from_ir_datasets_id_equal_file(dataset_id):
    run = DATA / "bm25.run.gz"
    a = rankeval.evaluate(dataset_id, run, "AP(rel=2) nDCG@10")
    b = rankeval.evaluate(DATA / "dl_hard-passage.qrels", run, "AP(rel=2) nDCG@10")
    assert a["value"].tolist() == b["value"].tolist()
    assert len(Qrels.read(dataset_id)) == len(Qrels.read(DATA / "dl_hard-passage.qrels")) == 4256


def test_unknown_id_is_a_plain_missing_file():
    with pytest.raises(InputError) as info:
        Qrels.read("no-such-dataset/really")
    assert str(info.value) == "no-such-dataset/really: file not found"
    with pytest.raises(InputError, match="not an ir_datasets id"):
        Qrels.from_ir_datasets("no-such-dataset/really")


def _fresh_python(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    """*code* run by a new interpreter (ir_datasets not imported yet), ir_datasets' home in *home*."""
    env = {**os.environ, "IR_DATASETS_HOME": str(home)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_a_path_that_is_no_id_leaves_ir_datasets_alone(tmp_path):
    """``foo/bar`` is a missing file: ir_datasets is not imported, so its home directory (which
    importing ir_datasets creates, with a directory per dataset family) is not created."""
    home = tmp_path / "irds-home"
    run = Path(__file__).parent / "data" / "dl-hard" / "bm25.run.gz"
    code = (
        "import sys\n"
        "from rankeval.io.irds import is_dataset_id\n"
        "print(is_dataset_id('foo/bar'), is_dataset_id('antique/nope'), is_dataset_id('antique/test'),\n"
        "      is_dataset_id('clirmatrix/en/multi8/de/train'), is_dataset_id('msmarco-passage/dev/small'))\n"
        "print('ir_datasets' in sys.modules)\n"
    )
    proc = _fresh_python(code, home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False", "True", "True", "True", "False"]
    cli = subprocess.run(
        [sys.executable, "-m", "rankeval.cli", "foo/bar", str(run), "-m", "AP"],
        capture_output=True,
        text=True,
        env={**os.environ, "IR_DATASETS_HOME": str(home)},
        timeout=120,
    )
    assert (cli.returncode, cli.stdout, cli.stderr) == (1, "", "rankeval: error: foo/bar: file not found\n")
    assert not home.exists()


@pytest.mark.parametrize(
    "dataset", ["antique/test", "clirmatrix/en/multi8/de/train", "antique/nope", "foo/bar"]
)
def test_the_shipped_ids_agree_with_the_registry(dataset):
    """What :func:`is_dataset_id` says without importing ir_datasets is what its registry says."""
    from rankeval.io.irds import is_dataset_id

    # registered, or matching one of the patterns of the ids a family makes on demand (asking
    # the registry for such an id would download the family's index)
    patterns = ir_datasets.registry._patterns
    registered = dataset in set(ir_datasets.registry) or any(p.match(dataset) for p, _ in patterns)
    assert is_dataset_id(dataset) is registered


OFFLINE_ID = "rankeval-test/offline"
LOGGED_ID = "rankeval-test/logged"


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """A dataset whose qrels are downloaded over HTTP, with no network: every request fails as
    a failed DNS lookup does."""

    def no_network(*args, **kwargs):
        raise requests.exceptions.ConnectionError(
            "HTTPSConnectionPool(host='example.invalid', port=443): Max retries exceeded with url: "
            "/qrels (Caused by NameResolutionError(\"Failed to resolve 'example.invalid'\"))"
        )

    monkeypatch.setattr(requests, "get", no_network)
    if OFFLINE_ID not in ir_datasets.registry:
        download = Download(
            [RequestsDownload("https://example.invalid/qrels")], cache_path=str(tmp_path / "qrels")
        )
        ir_datasets.registry.register(OFFLINE_ID, Dataset(TrecQrels(download, {1: "rel"})))
    return OFFLINE_ID


def test_offline_is_one_clear_line(offline, tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    run = Path(__file__).parent / "data" / "dl-hard" / "bm25.run.gz"
    result = CliRunner().invoke(app, [offline, str(run), "-m", "AP"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"rankeval: error: {offline}: the qrels of this ir_datasets dataset are not in {tmp_path / 'home'} "
        "and cannot be downloaded (no network?): connect once to download them, or give the qrels as a "
        "file instead\n"
    )
    # ir_datasets' own lines ([INFO] download error ..., [WARNING] Download failed ...) are not shown
    assert "[INFO]" not in result.output and "[WARNING]" not in result.output


def test_ir_datasets_log_is_shown_after_a_success(tmp_path, capsys):
    """What ir_datasets logs while it gets the qrels (here its data usage agreement) is printed
    once they are read."""
    if LOGGED_ID not in ir_datasets.registry:
        source = LocalDownload(DATA / "dl_hard-passage.qrels")
        download = Download(
            [source], cache_path=str(tmp_path / "logged.qrels"), dua="rankeval-test: please agree"
        )
        ir_datasets.registry.register(
            LOGGED_ID, Dataset(TrecQrels(download, {0: "not", 1: "rel", 2: "hi", 3: "top"}))
        )
    assert len(Qrels.read(LOGGED_ID)) == 4256
    assert "rankeval-test: please agree" in capsys.readouterr().err
