"""Memory near a limit: how much this process may still allocate, and what pyarrow may do then.

Under an address-space or data limit (``ulimit -v``, ``prlimit --as``; ``ulimit -d``) or strict
overcommit an allocation can fail. Where it fails in one of pyarrow's threads (its CSV
reader's), pyarrow aborts the whole process (``ValueOrDie``: no error, no message); in the
calling thread it is a ``MemoryError`` that ends in rankeval's one line. Every reader that
hands text to pyarrow's CSV reader asks :func:`threads_fit` first, and :func:`reserve` before
a large parse.

May import: pyarrow and the standard library.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["THREAD_ROOM", "allocation_room", "reserve", "threads_fit"]

THREAD_ROOM = 64 << 20
"""The room a parse must leave for a thread pyarrow starts: its stack (``ulimit -s``, 8 MiB
by default) and what the allocator maps for it (a 64 MiB glibc arena at most)."""


def reserve(size: int) -> None:
    """Where an allocation can fail (:func:`allocation_room`), make sure before parsing
    *size* bytes that pyarrow can allocate what the parse will: a buffer of that much taken
    and given back (pyarrow's allocator keeps it for the parse that follows). pyarrow's CSV
    reader aborts the process when one of its own allocations fails (``ValueOrDie``), even
    in this thread; a failure here is a ``MemoryError``, rankeval's one line. So is less than
    :data:`THREAD_ROOM` left after it."""
    if allocation_room() is None:
        return
    import pyarrow as pa

    buffer = pa.allocate_buffer(3 * size + (32 << 20))
    del buffer
    room = allocation_room()
    if room is not None and room < THREAD_ROOM:
        # pyarrow's CSV reader reads ahead in a thread of its I/O pool even when it parses
        # in this one; a thread it cannot start ends the process (std::system_error)
        raise MemoryError(f"{room} bytes left, fewer than a reader thread needs")


def threads_fit(size: int) -> bool:
    """Whether pyarrow may parse *size* bytes of text with its threads: unless an
    allocation can fail (:func:`allocation_room`) and the room left is not ample. An
    allocation that fails in one of pyarrow's threads aborts the whole process
    (``ValueOrDie``: no error, no message), while in this thread it is an error that ends in
    rankeval's one line; and each thread takes address space of its own (stack, allocator
    arenas) that no estimate of the table's size foresees. So near a limit the text is
    parsed in this thread."""
    import pyarrow as pa

    room = allocation_room()
    return room is None or room > 4 * size + pa.cpu_count() * (256 << 20) + (512 << 20)


def allocation_room() -> int | None:
    """Bytes this process may still allocate before an allocation fails, where one can:
    under an address-space or data limit (``ulimit -v``, ``prlimit --as``; ``ulimit -d``)
    what is left of it, and under strict overcommit (``vm.overcommit_memory = 2``) what is
    left to commit; ``None`` where none applies (memory then runs out by the kernel's
    out-of-memory killer, not by a failed allocation)."""
    import resource

    rooms = []
    status = _proc_fields("/proc/self/status")
    for limit, used in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(limit)[0]
        if soft != resource.RLIM_INFINITY:
            rooms.append(soft - status.get(used, 0))
    try:
        strict = Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "2"
    except OSError:
        strict = False
    if strict:
        info = _proc_fields("/proc/meminfo")
        rooms.append(info.get("CommitLimit", 0) - info.get("Committed_AS", 0))
    return min(rooms) if rooms else None


def _proc_fields(path: str) -> dict[str, int]:
    """The ``Name: N kB`` lines of a ``/proc`` file, in bytes (none if it cannot be read)."""
    out: dict[str, int] = {}
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        name, _, value = line.partition(":")
        fields = value.split()
        if len(fields) == 2 and fields[1] == "kB" and fields[0].isdigit():
            out[name] = int(fields[0]) * 1024
    return out
