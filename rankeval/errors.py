"""The one exception family of rankeval.

Library functions raise :class:`RankevalError` (or a subclass); the CLI turns it into a
message and a non-zero exit code, never a traceback. Errors about input text carry the
file, line and column and the offending text so the message can point at it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

MAX_ECHO = 200
"""At most this many characters of an input line are echoed in a message."""


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """*text* cut to *limit* characters (``...`` and the number of characters left out)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


class RankevalError(Exception):
    """Base class of every error rankeval raises on bad input or usage.

    Attributes:
        message: What went wrong and what was expected.
        source: File name (or ``<string>``, ``<stdin>``, a measure spec ...), if known.
        line: 1-based line number, if known.
        column: 1-based column number, if known.
        text: The offending line or spec text, if known.
    """

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        text: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.text = None if text is None else clip(text)

    def __str__(self) -> str:
        where = ""
        if self.source is not None:
            where = self.source
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        out = f"{where}{self.message}"
        if self.text is not None:
            out += f"\n    {self.text}"
            if self.column is not None and self.column <= MAX_ECHO + 1:
                out += "\n    " + " " * (self.column - 1) + "^"
        return out


class InputError(RankevalError):
    """A qrels, run or other data file could not be read."""


class UsageError(RankevalError):
    """The command line or API call is wrong (exit code 2)."""

    exit_code = 2


class SpecError(UsageError):
    """A measure spec could not be parsed or resolved."""


class EngineError(RankevalError):
    """The distributed engine failed (a worker died, the cluster could not be reached)."""


class OutputError(RankevalError):
    """A result file (or standard output) could not be written."""


class PluginError(RankevalError):
    """A plugin failed to load or registered a conflicting name."""


class MeasureError(RankevalError):
    """A measure's own code (a plugin's ``compute``, ``aggregate*``, or a tool it calls) failed."""


class ResourceError(RankevalError):
    """The machine ran out of a resource (memory, disk) while reading or computing."""


def plugin_of(measure: object) -> str:
    """Name of the plugin (top-level package) that defines *measure*'s class."""
    return type(measure).__module__.partition(".")[0]


def fault(exc: BaseException) -> str:
    """``Type: message`` of an exception raised by a plugin's code (``Type`` alone when it
    says nothing), clipped to :data:`MAX_ECHO` characters."""
    text = str(exc)
    return clip(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


@contextmanager
def plugin_guard(plugin: str, action: str, measure: object | None = None) -> Iterator[None]:
    """Run a plugin's code: the one guard of every call into a plugin. Any exception other
    than a :class:`RankevalError` becomes an error naming the plugin (the original is its
    ``__cause__``, shown by ``--debug``): a :class:`PluginError` ``plugin P failed <action>:
    <reason>``, or, for a *measure*'s own code, a :class:`MeasureError` ``measure X (plugin P)
    <action>: <reason>``, where memory exhaustion is a :class:`ResourceError`. ``sys.exit()``
    in a plugin must not end rankeval silently: ``SystemExit`` is caught too."""
    try:
        yield
    except RankevalError:
        raise
    except MemoryError as exc:
        if measure is None:
            raise
        raise ResourceError(
            f"out of memory while computing {measure}; use a machine with more memory (in the "
            "evaluate command a lower --jobs or --block-size holds fewer queries at once)"
        ) from exc
    except (Exception, SystemExit) as exc:
        if measure is None:
            raise PluginError(f"plugin {plugin} failed {action}: {fault(exc)}") from exc
        raise MeasureError(f"measure {measure} (plugin {plugin}) {action}: {fault(exc)}") from exc


def measure_guard(measure: object, action: str = "failed", plugin: str | None = None) -> Any:
    """:func:`plugin_guard` around a measure's own code (its ``compute``, ``aggregate``, ...):
    *plugin* names the plugin when the caller knows it (default: :func:`plugin_of`)."""
    return plugin_guard(plugin or plugin_of(measure), action, measure)


class RankevalWarning(UserWarning):
    """Results were computed, but something about them needs the user's attention (e.g.
    queries whose value is undefined and left out of a mean). The CLI prints each one as a
    ``rankeval: warning: ...`` line on stderr."""


class TieWarning(RankevalWarning):
    """Tied scores fall within the depth of the measures: the values depend on the tie rule
    (``--ties``; :mod:`rankeval.engine.ties`). ``--quiet-ties`` (or a warnings filter on
    this class) silences it."""


def missing_attribute(measure: object, key: str, items: Sequence[str], count: int, alternative: str = "") -> InputError:
    """The error of a measure that needs attribute *key* (``cost``) of *count* items that
    have none: it names up to three of *items* (e.g. ``'alice/p3' (query 1)``) and says how to
    supply the attribute — on the qrels lines, in a ``--docinfo`` side file, or
    *alternative* (``"default_cost="``)."""
    shown = ", ".join(items[:3]) + (", ..." if count > 3 else "")
    noun = "item has" if count == 1 else "items have"
    other = f", or give {alternative}" if alternative else ""
    return InputError(
        f"{measure}: {count:,} {noun} no {key}= attribute ({shown}); give {key}= on the qrels "
        f"lines or in a --docinfo side file (lines 'DOCNO {key}=VALUE'){other}"
    )
