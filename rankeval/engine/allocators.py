"""Memory allocator settings for the processes rankeval runs itself: the ``rankeval``
command, its ``--jobs`` workers and the workers of a local Dask cluster.

Each block allocates its arrays anew, and by default both allocators give freed memory back
to the system at once: glibc maps every array above its (adaptive) mmap threshold separately
and unmaps it when freed, and pyarrow's allocator (mimalloc) purged freed pages at once with
``MIMALLOC_PURGE_DELAY=0``, which the command used to set for a lower peak. The next block
then faults every page in again: on a 30M-line run with ``--jobs 1``, about 790,000 page
faults and 2 s of the 5.4 s were the system's. With the settings below (arrays under 64 MiB
taken from glibc's heap, which keeps up to 128 MiB free for reuse; mimalloc purging pages
200 ms after they are freed) the same run makes about 110,000 faults and takes about 4.2 s, at
a peak about 60 MB higher.

The library leaves the allocators of a program that imports it alone: these settings are for
rankeval's own processes, applied by the command's :func:`rankeval.cli.main` when it starts
(importing a rankeval module changes no environment variable). Each is a default: a variable
already in the environment wins.

May import: the standard library only.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ALLOCATOR_ENVIRONMENT", "LIMITED_ENVIRONMENT", "tune_this_process"]

#: environment variables read by glibc's malloc and pyarrow's mimalloc when a process starts
ALLOCATOR_ENVIRONMENT: dict[str, str] = {
    "MALLOC_MMAP_THRESHOLD_": str(64 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(128 << 20),
    "MIMALLOC_PURGE_DELAY": "200",
}

# glibc's mallopt() parameters for its MALLOC_ variables (malloc.h)
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_ARENA_MAX": -8}

#: the settings added under an address-space limit (``ulimit -v``):
LIMITED_ENVIRONMENT: dict[str, str] = {
    # glibc's arenas: each reserves 64 MiB of address space, and a busy machine's thread
    # timings can make pyarrow's threads create a dozen of them (a 30M-line run under
    # ``prlimit --as=1.5GiB`` then ran out of address space before its first block on 3 tries
    # of 3, with the machine loaded; 0 of 3 with two arenas)
    "MALLOC_ARENA_MAX": "2",
    # OpenBLAS (numpy's) starts a thread per core when numpy is imported, each with its own
    # buffers; when one cannot start, OpenBLAS prints four lines and sends itself SIGINT, which
    # reads as the user's Ctrl-C. One thread starts none.
    "OPENBLAS_NUM_THREADS": "1",
}


def _address_space_limited() -> bool:
    """Whether this process runs under an address-space limit (``ulimit -v``)."""
    try:
        import resource

        return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
    except (ImportError, OSError, ValueError):
        return False


def tune_this_process() -> None:
    """Apply :data:`ALLOCATOR_ENVIRONMENT` (and under an address-space limit
    :data:`LIMITED_ENVIRONMENT`) to this process and to the processes it starts: for the
    ``rankeval`` command only (:func:`rankeval.cli.main`), never at import.

    Sets each variable that is not set yet, for the child processes, for pyarrow, which reads
    mimalloc's when it is first imported, and for numpy's OpenBLAS, read when numpy is first
    imported (so call this before both). glibc read its variables when this process started,
    so they are applied to it with ``mallopt()``; on a system without glibc that part does
    nothing."""
    limited = LIMITED_ENVIRONMENT if _address_space_limited() else {}
    for name, value in {**ALLOCATOR_ENVIRONMENT, **limited}.items():
        os.environ.setdefault(name, value)
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library exporting mallopt
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    for name, param in _MALLOPT.items():
        try:
            size = int(os.environ[name])
        except KeyError:
            continue  # (MALLOC_ARENA_MAX: only under an address-space limit)
        except ValueError:
            continue  # the user's own, and not a number: left to glibc
        if 0 <= size < 2**31:  # mallopt takes a C int
            mallopt(param, size)
