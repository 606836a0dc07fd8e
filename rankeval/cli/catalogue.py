"""The text of ``rankeval measures``: which measures a PATTERN finds, and how each is listed
(parameters with their domain and their default as a spec writes it, or ``required``)."""

from __future__ import annotations

from typing import Any

__all__ = ["IR_MEASURES_NOTE", "domain_text", "matches", "measure_lines", "required_at", "type_text"]

IR_MEASURES_NOTE = (
    "Any other ir_measures name (ERR@10, RBP(p=0.8), Compat(p=0.8), ...) is computed by ir_measures."
)


def matches(entry: Any, pattern: str) -> bool:
    """Whether *pattern* finds the registry entry: a substring (any case) of its name (also
    as listed, ``nDCG@k``), an alias or its plugin, or with ``*``, ``?`` or ``[``, a glob
    matching one of them."""
    import fnmatch

    cls = entry.cls
    listed = [f"{cls.name}@{cls.at}"] if cls.at else []
    names = [cls.name, *listed, *cls.aliases, *(f"{x}.N" for x in cls.cut_prefixes), entry.plugin]
    wanted = pattern.lower()
    if any(c in pattern for c in "*?["):
        return any(fnmatch.fnmatchcase(n.lower(), wanted) for n in names)
    return any(wanted in n.lower() for n in names)


def measure_lines(entry: Any) -> list[str]:
    """The lines of ``rankeval measures`` about one registry entry: each parameter with its
    type, domain and default as a spec writes it (``default 224s``), or ``required``."""
    from rankeval.measures.base import format_param_value

    cls = entry.cls
    at = f"@{cls.at}" if cls.at else ""
    lines = [f"{cls.name}{at}  [plugin: {entry.plugin}]"]
    if cls.description:
        lines.append(f"    {cls.description}")
    required = required_at(cls)
    for info in cls.params():
        kind = type_text(info)
        domain = domain_text(info)
        if info.name == required:
            state = "required"
        else:
            default = format_param_value(info.default)
            state = (
                f"default {default}s"
                if kind == "duration" and default[-1:].isdigit()
                else f"default {default}"
            )
        lines.append(f"    {info.name}: {kind}{domain}, {state}  — {info.help}")
    aliases = [*cls.aliases, *(f"{x}.N" for x in cls.cut_prefixes)]
    if aliases:
        lines.append(f"    aliases: {', '.join(aliases)}")
    lines.append(f"    reads: {cls.reads()}")
    if cls.source:
        lines.append(f"    source: {cls.source}")
    return lines


def domain_text(info: Any) -> str:
    """`` in [0, 1]``: the domain of a numeric parameter for the listing; empty for a
    parameter that is not a number, and for one that takes any value of its type (an ``int``
    from -2³¹ to 2³¹-1, a ``float`` that is finite), where the bounds would say nothing."""
    from rankeval.measures.base import INT32_MAX

    domain = info.domain
    if domain is None:
        return ""
    if (
        domain.low <= -(INT32_MAX + 1)
        and domain.high >= INT32_MAX
        and not (domain.low_open or domain.high_open)
    ):
        return ""  # [-2147483648, 2147483647], or (-inf, inf)
    return f" in {domain}"


def type_text(info: Any) -> str:
    """The type of a parameter for the listing: ``int``, ``duration``, ``exp|linear``; one
    that also accepts ``none`` says so only when ``none`` is not its default (the default
    is shown)."""
    import dataclasses
    import types
    import typing

    args = typing.get_args(info.type)
    if typing.get_origin(info.type) not in (typing.Union, types.UnionType) or type(None) not in args:
        return str(info.type_name)
    text = " or ".join(dataclasses.replace(info, type=a).type_name for a in args if a is not type(None))
    return text if info.default is None else f"{text} or none"


def required_at(cls: Any) -> str | None:
    """The ``@`` parameter of measure class *cls* when it is required: its default is
    ``none`` and the measure cannot be built with its defaults (``CS-DCG`` needs ``@k``)."""
    info = next((i for i in cls.params() if i.name == cls.at), None)
    if info is None or info.default is not None:
        return None
    try:
        cls()
    except Exception:  # the measure refuses its own defaults: the @ value is required
        return str(cls.at)
    return None
