"""Small pyarrow/numpy array helpers shared by alignment, duplicate detection and the
ranked lists.

May import: numpy and pyarrow only (no project module).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["contiguous", "index_type", "to_numpy"]


def index_type(n: int) -> type[np.signedinteger[Any]]:
    """Smallest index dtype for arrays of *n* rows (int32 saves memory on big runs)."""
    return np.int32 if n < 2**31 - 1 else np.int64


def contiguous(arr: Any) -> Any:
    """One pyarrow Array from a (chunked) array, without a copy when there is one chunk."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        return arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return arr


def to_numpy(arr: Any) -> np.ndarray:
    """A numpy array of a (chunked) pyarrow array (zero-copy where pyarrow allows it)."""
    return contiguous(arr).to_numpy(zero_copy_only=False)  # type: ignore[no-any-return]
