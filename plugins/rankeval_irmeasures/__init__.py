"""Any other measure ir_measures knows (ERR@10, RBP(p=0.8), infAP, ...), computed by ir_measures.

Registered through the ``resolve_measure`` hook: when a spec's name is not a registered
measure but is one of ir_measures' measure names, this plugin parses the spec with
``ir_measures.parse_measure`` and checks it completely before any data is read, so that a
bad spec is a :class:`~rankeval.errors.SpecError` naming it (exit code 2), never a traceback:

1. the parameter names, types and required parameters against the measure's
   ``SUPPORTED_PARAMS``, and the domains ir_measures does not check itself (a cutoff is an
   integer 1 … 2**31 - 1: ``P@0`` would abort the process inside pytrec_eval);
2. which of ir_measures' providers computes it: none that could is a spec error; one that
   could but is not installed is a :class:`~rankeval.errors.MeasureError` (exit code 1)
   saying what to install;
3. one evaluation on a two-document probe, which catches what a provider only rejects when
   it runs. Whatever the providers log while probing is not shown.

Values come from the provider on the top-level ranking, so they appear in the same output
table. Query ids are handed to ir_measures as the numbers 1 … Q and mapped back: ERR's
provider (gdeval, a perl script) accepts only numeric topics and cuts everything up to a
``-`` from them, so ``q1`` failed and ``a-1`` and ``b-1`` were the same query; the numbers
change nothing for the other providers, which only use query ids as keys. A provider that
fails while computing is a :class:`~rankeval.errors.MeasureError` naming the measure and the
provider; what a provider logs while computing becomes a ``rankeval: warning``.

Two readings differ from plain ir_measures, both so that a spec means the same on every
install: ``RBP`` without ``rel`` is binary RBP with ``rel=1`` (rankeval's default relevance
level, as for ``AP`` or ``P``; ir_measures would read it as graded RBP, which only its optional
trectools provider computes), and its name is printed with the ``rel``. Counts (``NumQ``, and
``NumRet``, ``NumRel``, ``NumRelRet`` if the native ones are blocked) are summed over queries
like trec_eval's ``num_q``, not averaged; ``NumQ`` counts every evaluated query, also one of
the qrels that the run lacks (trec_eval ``-c``), which ir_measures' providers skip.
"""

from __future__ import annotations

import logging
import math
import re
import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rankeval import Measure, hookimpl, param
from rankeval.errors import MeasureError, RankevalError, RankevalWarning, SpecError, clip

if TYPE_CHECKING:
    from rankeval import RankedLists

PLUGIN = "rankeval_irmeasures"
MAX_CUTOFF = 2**31 - 1
GDEVAL_MAX_GRADE = 4  # gdeval.pl's $MAX_JUDGMENT: it refuses qrels with higher grades

# parameter domains ir_measures does not check: (measure name or None for all, parameter)
# → (test, the allowed range as the message says it)
_DOMAINS: dict[tuple[str | None, str], tuple[Any, str]] = {
    (None, "cutoff"): (lambda v: 1 <= v <= MAX_CUTOFF, f"an integer from 1 to {MAX_CUTOFF}"),
    ("RBP", "p"): (lambda v: 0 <= v < 1, "a persistence in [0, 1)"),
    ("NERR10", "p"): (lambda v: 0 <= v < 1, "a persistence in [0, 1)"),
    ("IPrec", "recall"): (lambda v: 0 <= v <= 1, "a recall level in [0, 1]"),
    (None, "T"): (lambda v: math.isfinite(v) and v > 0, "a number > 0"),
}
# a probe small enough to cost ~1 ms (gdeval: one perl run), with both a relevant and a
# non-relevant judgment and an unjudged document
_PROBE_QRELS = {"1": {"a": 1, "b": 0}}
_PROBE_RUN = {"1": {"a": 1.0, "c": 0.5}}
_NAME = re.compile(r"\s*([^\W\d]\w*)")


@dataclass(frozen=True)
class IrMeasure(Measure):
    """A measure computed by ir_measures; ``spec`` is its ir_measures spelling."""

    name: ClassVar[str] = "ir_measures"
    description: ClassVar[str] = "Any ir_measures measure, by its ir_measures name (ERR@10, RBP(p=0.8), ...)"
    source: ClassVar[str] = "ir_measures (github terrierteam/ir_measures) and its providers"

    spec: str = param("", "the measure in ir_measures syntax")
    # the spec as the user wrote it: printed, so that it parses back to this bridge measure —
    # ir_measures' own spelling of e.g. Precision@10 is 'P@10', which is a native measure's
    spelling: str = field(default="", compare=False, metadata={"help": "the spec as written"})

    def __str__(self) -> str:
        return self.spelling or self.spec

    def compute(self, data: RankedLists) -> np.ndarray:
        import ir_measures
        import pandas as pd
        import pyarrow as pa

        measure = ir_measures.parse_measure(self.spec)
        provider = _provider_name(measure)
        jq = data.judged.query
        relevance = data.judged.relevance.astype(np.int64)
        if provider == "gdeval" and len(relevance) and relevance.max() > GDEVAL_MAX_GRADE:
            raise self._failed(
                provider,
                f"it accepts relevance grades up to {GDEVAL_MAX_GRADE}, and the qrels have "
                f"{int(relevance.max())}",
            )
        # queries as the numbers 1 … Q (see the module docstring), back through int(qid) - 1
        qrels = pd.DataFrame(
            {
                "query_id": (jq + 1).astype(str),
                "doc_id": np.asarray(data.judged.doc_ids.to_pylist(), dtype=object),
                "relevance": relevance,
            }
        )
        run = pd.DataFrame(
            {
                "query_id": (np.asarray(data.query, dtype=np.int64) + 1).astype(str),
                "doc_id": np.asarray(pa.array(data.doc_ids).to_pylist(), dtype=object),
                "score": data.score,
            }
        )
        out = np.zeros(data.num_queries)
        with _provider_logs() as logged:
            try:
                for metric in ir_measures.iter_calc([measure], qrels, run):
                    i = int(metric.query_id) - 1
                    if 0 <= i < len(out):
                        out[i] = float(metric.value)
            except (RankevalError, MemoryError):
                raise
            except subprocess.CalledProcessError as exc:
                helper = Path(str(exc.cmd[0] if isinstance(exc.cmd, list) else exc.cmd)).name
                raise self._failed(
                    provider, f"its helper {helper} exited with status {exc.returncode}"
                ) from exc
            except Exception as exc:
                raise self._failed(provider, f"{type(exc).__name__}: {exc}") from exc
        for text in dict.fromkeys(logged):
            warnings.warn(RankevalWarning(f"{self} (ir_measures provider {provider}): {text}"), stacklevel=2)
        return out

    def _failed(self, provider: str, reason: str) -> MeasureError:
        return MeasureError(
            f"measure {self} (plugin {PLUGIN}) failed: ir_measures provider {provider}: {clip(reason)}"
        )


@dataclass(frozen=True)
class IrCount(IrMeasure):
    """An ir_measures count (``NumQ``, ...): summed over queries, printed without decimals."""

    integer: ClassVar[bool] = True

    def compute(self, data: RankedLists) -> np.ndarray:
        if _base_name(self.spec) == "NumQ":
            # every evaluated query counts once (trec_eval num_q); ir_measures' providers
            # give 0 to a query of the qrels that the run lacks
            return np.ones(data.num_queries)
        return super().compute(data)


@hookimpl
def resolve_measure(spec: str) -> Measure | None:
    """Wrap *spec* if it names an ir_measures measure, after checking it completely."""
    name = _base_name(spec)
    if name is None:
        return None
    try:
        import ir_measures
    except ImportError:  # pragma: no cover - a dependency of rankeval
        return None
    if name not in ir_measures.measures.registry:
        return None
    with _quiet():
        measure = _parse(ir_measures, spec, name)
        _validate(ir_measures, measure, spec)
    cls = IrCount if isinstance(measure.aggregator(), ir_measures.measures.SumAgg) else IrMeasure
    canonical = str(measure)
    # the registry did not know this name, not even case-insensitively; ir_measures'
    # canonical name may be one it knows (Precision@10 -> P@10): then print the user's
    # spelling, which parses back to this measure
    spelling = spec if _base_name(canonical) != name else ""
    return cls(spec=canonical, spelling=spelling)


def _base_name(spec: str) -> str | None:
    m = _NAME.match(spec)
    return m.group(1) if m else None


def _spec_error(spec: str, message: str) -> SpecError:
    return SpecError(message, source="measure spec", column=1, text=spec)


def _parse(ir_measures: Any, spec: str, name: str) -> Any:
    """The ir_measures measure of *spec*, with its parameters checked against the measure's
    ``SUPPORTED_PARAMS`` (names, types, required ones) and :data:`_DOMAINS`."""
    keys = re.findall(r"[(,]\s*([A-Za-z_]\w*)\s*=", spec)
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:  # ir_measures would keep one silently
        raise _spec_error(spec, f"parameter {twice[0]!r} given twice")
    try:
        measure = ir_measures.parse_measure(spec)
    except Exception as exc:  # ir_measures raises ValueError, NameError, KeyError, ... here
        raise _spec_error(spec, f"ir_measures cannot parse {spec!r}: {_reason(exc)}") from None
    infos = measure.SUPPORTED_PARAMS
    shown = name  # as the user wrote it (ir_measures calls Precision P)

    def described(key: str) -> str:
        info = infos[key]
        kind = getattr(info.dtype, "__name__", "value")
        return f"{key} ({kind}{', ' + info.desc if info.desc else ''})"

    valid = ", ".join(described(k) for k in infos) or "none"
    params = dict(measure.params)
    changed = False
    for key, value in measure.params.items():
        if key not in infos:
            via_at = " ('@' sets it)" if key == measure.AT_PARAM and "@" in spec else ""
            raise _spec_error(spec, f"{shown} has no parameter {key!r}{via_at}; its parameters: {valid}")
        info = infos[key]
        if isinstance(value, float) and not math.isfinite(value):  # inf does not print back
            raise _spec_error(spec, f"{shown}: {key}={value!r} is not a finite number")
        if info.dtype is float and isinstance(value, int) and not isinstance(value, bool):
            params[key] = value = float(value)  # p=1 means p=1.0 (ir_measures wants a float)
            changed = True
        wrong_type = info.dtype is not None and not isinstance(value, info.dtype)
        if wrong_type or (info.dtype in (int, float) and isinstance(value, bool)):
            kind = getattr(info.dtype, "__name__", str(info.dtype))
            raise _spec_error(spec, f"{shown}: {key} must be of type {kind}, not {value!r}")
        if info.choices is not _not_provided(ir_measures) and value not in info.choices:
            raise _spec_error(spec, f"{shown}: {key} must be one of {', '.join(map(repr, info.choices))}")
        for where in (measure.NAME, None):
            domain = _DOMAINS.get((where, key))
            if domain is not None and isinstance(value, (int, float)) and not domain[0](value):
                raise _spec_error(spec, f"{shown}: {key}={value!r} is out of range; it must be {domain[1]}")
    missing = [k for k, info in infos.items() if info.required and k not in params]
    if missing:
        at = f"; the '@' part sets {measure.AT_PARAM}" if measure.AT_PARAM in missing else ""
        raise _spec_error(spec, f"{shown} needs {', '.join(described(k) for k in missing)}{at}")
    if measure.NAME == "RBP" and "rel" not in params:
        params["rel"] = 1  # binary RBP (see the module docstring)
        changed = True
    return type(measure)(**params) if changed else measure


def _validate(ir_measures: Any, measure: Any, spec: str) -> None:
    """Check that an installed provider computes *measure*: ask for its evaluator and run it
    once on the probe."""
    supporting = []
    for provider in ir_measures.DefaultPipeline.providers:
        try:
            if provider.supports(measure):
                supporting.append(provider)
        except Exception as exc:
            raise _spec_error(spec, f"ir_measures rejects {measure}: {_reason(exc)}") from None
    if not supporting:
        raise _spec_error(
            spec, f"no ir_measures provider computes {measure} with these parameters (see ir-measur.es)"
        )
    installed = [p for p in supporting if p.is_available()]
    if not installed:
        options = "; ".join(
            f"{p.NAME} ({p.install_instructions() or 'see ir-measur.es'})" for p in supporting
        )
        raise MeasureError(
            f"measure {measure} (plugin {PLUGIN}) cannot be computed: ir_measures knows {measure} but "
            f"none of its installed providers computes it; install one of: {options}"
        )
    provider = installed[0].NAME
    try:
        evaluator = ir_measures.evaluator([measure], _PROBE_QRELS)
        for _ in evaluator.iter_calc(_PROBE_RUN):
            pass
    except (subprocess.SubprocessError, OSError) as exc:  # the provider's helper, not the spec
        raise MeasureError(
            f"measure {measure} (plugin {PLUGIN}) failed: ir_measures provider {provider} "
            f"does not run: {_reason(exc)}"
        ) from exc
    except Exception as exc:
        raise _spec_error(
            spec, f"ir_measures provider {provider} rejects {measure}: {_reason(exc)}"
        ) from None


def _provider_name(measure: Any) -> str:
    """Name of the installed ir_measures provider that computes *measure* (as ir_measures
    picks it: the first in its pipeline)."""
    import ir_measures

    for provider in ir_measures.DefaultPipeline.providers:
        try:
            if provider.is_available() and provider.supports(measure):
                return str(provider.NAME)
        except Exception:  # checked when the spec was resolved
            continue
    return "?"


def _not_provided(ir_measures: Any) -> Any:
    return ir_measures.measures.base._NOT_PROVIDED


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    text = re.sub(r"<object object at 0x[0-9a-f]+>", "(not given)", text)
    return clip(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(" ".join(record.getMessage().split()))


@contextmanager
def _provider_logs() -> Iterator[list[str]]:
    """Collect what ir_measures' providers log (their own handler would print it on stderr)."""
    logger = logging.getLogger("ir_measures")
    logged: list[str] = []
    saved = logger.handlers[:], logger.propagate
    logger.handlers = [_Collect(logged)]
    logger.propagate = False
    try:
        yield logged
    finally:
        logger.handlers, logger.propagate = saved


@contextmanager
def _quiet() -> Iterator[None]:
    """Nothing the providers log or warn while a spec is checked reaches the user (probing
    logs e.g. cwl_eval's ``min_rel=0 but the lowest relevance score observed was inf``)."""
    with _provider_logs(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
