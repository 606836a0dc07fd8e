"""The documentation site builds (``mkdocs build --strict``) and works offline.

One build per session, into a temporary directory. The checks are on the HTML a reader gets:
no script, stylesheet or font fetched from the web; formulas rendered as MathML at build time
(no TeX left for a script to typeset); the generated reference free of Markdown escapes; the
CLI help boxes whole; the home page leading to every page of the navigation.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from latex2mathml.converter import convert

from rankeval.measures.plugins import DEFAULT_PLUGINS

pytestmark = pytest.mark.slow  # every test needs the site, built once: about 8 s on 2 cores

ROOT = Path(__file__).resolve().parent.parent
# pages with formulas, and one formula of each, as written between $...$ in the page
FORMULAS = {
    "measures.html": r"\log_2(i+1)",
    "tbg.html": r"T_s",
    "csdcg.html": r"C = 12",
    "tar.html": r"R_{95} = 0.95\,R",
    "compare.html": r"t = \bar d / (s_d / \sqrt n)",
}
DISPLAY_MATH = ("tbg.html", "csdcg.html", "tar.html", "measures.html")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


def _pages(site: Path) -> dict[str, str]:
    return {
        path.relative_to(site).as_posix(): path.read_text(encoding="utf-8") for path in site.rglob("*.html")
    }


class _Resources(HTMLParser):
    """The addresses of what a page loads by itself: scripts, stylesheets and other links
    (``<link>``), images and frames; not the pages it links to (``<a href>``)."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"script": "src", "link": "href", "img": "src", "iframe": "src", "source": "src"}
        if tag in wanted:
            self.loaded += [value for name, value in attrs if name == wanted[tag] and value]


def test_nothing_is_fetched_from_the_web(site: Path) -> None:
    remote = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
    for name, html in _pages(site).items():
        parser = _Resources()
        parser.feed(html)
        fetched = [url for url in parser.loaded if remote.match(url)]
        assert not fetched, f"{name} loads {fetched}"
        assert parser.loaded, f"{name}: no script or stylesheet found; is the parser still right?"
    for css in site.rglob("*.css"):
        assert not re.search(r"url\(\s*['\"]?(?:https?:)?//", css.read_text(encoding="utf-8")), css


def _text_outside_code(html: str) -> str:
    """The page without its code, scripts, styles and formulas: the prose a reader sees."""
    return re.sub(r"<(pre|code|script|style|math)\b.*?</\1>", " ", html, flags=re.DOTALL)


def test_formulas_are_mathml(site: Path) -> None:
    pages = _pages(site)
    for name, html in pages.items():
        prose = _text_outside_code(html)
        kept = re.findall(r'class="arithmatex">([^<]{0,40})', html)
        assert not kept, f"{name}: formulas left for a script to typeset: {kept[:3]}"
        leftover = re.findall(r"\\[(\[]|\\[A-Za-z]{2,}|\$\$", prose)
        assert not leftover, f"{name}: TeX shown as text: {leftover[:5]}"
    for name, tex in FORMULAS.items():
        assert convert(tex) in pages[name], f"{name}: ${tex}$ is not rendered as MathML"
    for name in DISPLAY_MATH:
        assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">' in pages[name], name


def test_measure_reference_has_no_markdown_escapes(site: Path) -> None:
    html = _pages(site)["measures.html"]
    assert "\\|" not in html
    assert "<code>exp|linear</code>" in html  # a parameter's choices, as the CLI spells them


def test_cli_help_boxes_are_whole(site: Path) -> None:
    html = _pages(site)["cli.html"]
    blocks = re.findall(r'<div class="cli-help[^"]*"><pre>.*?</pre>', html, flags=re.DOTALL)
    assert len(blocks) >= 5, "a help block per command"
    for block in blocks:
        lines = re.sub(r"<[^>]+>", "", block).splitlines()
        assert lines[0].strip().startswith("$ rankeval")
        for line in lines:
            assert "…" not in line, f"a help text cut short: {line}"
            if line.startswith("│"):
                assert line.rstrip().endswith("│"), f"a box line cut short: {line}"


def test_plugin_guide_lists_every_builtin_plugin(site: Path) -> None:
    html = _pages(site)["plugins.html"]
    listed = html[html.index("The built-in plugins and what each provides") :]
    listed = listed[: listed.index("</ul>")]
    assert re.findall(r"<li><code>(\w+)</code>:", listed) == list(DEFAULT_PLUGINS)


def test_home_page_leads_to_every_page(site: Path) -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = [page for entry in config["nav"] for page in entry.values()]
    home = _pages(site)["index.html"]
    main = home[home.index('<article class="md-content__inner') :]  # not the navigation
    missing = [p for p in pages if p != "index.md" and f'href="{p[: -len(".md")]}.html' not in main]
    assert not missing, f"the home page does not link to {missing}"
