"""Griffe extension for the API page: render Sphinx cross-reference roles as code.

The docstrings of rankeval are Google style with Markdown-compatible ````literals````, but
some use Sphinx roles (``:class:`~rankeval.io.data.Run```, ``:attr:`table```), which Markdown
would show verbatim. This turns each role into an inline code span (the last dotted
component when the target starts with ``~``, as Sphinx does). Loaded by mkdocstrings through
``extensions:`` in ``mkdocs.yml``; not a page of the site.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|attr|meth|func|data|mod|exc|obj|const|ref):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    if tilde:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


class SphinxRolesAsCode(griffe.Extension):
    """Rewrite ``:role:`target``` in docstrings to ```target```."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = _ROLE.sub(_code, obj.docstring.value)
