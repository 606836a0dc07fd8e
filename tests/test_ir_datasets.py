"""A qrels argument that is not a path is tried as an ir_datasets id (no network: the
dataset is registered from a local file)."""

from __future__ import annotations

from pathlib import Path

import ir_datasets
import pytest
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import TrecQrels
from ir_datasets.util import LocalDownload

import rankeval
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


def test_unknown_id_is_a_clear_error():
    with pytest.raises(InputError, match="not an ir_datasets id"):
        Qrels.read("no-such-dataset/really")
