"""The documentation works as written: every tutorial's code runs (see tests/doc_runner.py for the
conventions), the generated config tables are current, and the site builds offline in strict mode."""

import html.parser
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_runner import (
    DOCS,
    PAGES,
    ROOT,
    DocError,
    config_key_table,
    config_table_in_page,
    extract_blocks,
    predicate_table,
    predicate_table_in_page,
    run_page_isolated,
)

TUTORIALS = [page for page in PAGES if page.parent.name == "tutorials"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(DOCS)))
def test_page_runs_as_written(page):
    run = run_page_isolated(page)
    print(run.output)


def test_every_tutorial_runs_code():
    assert TUTORIALS, "no tutorials found under docs/tutorials"
    for page in TUTORIALS:
        blocks = extract_blocks(page.read_text(), page)
        assert any(b.lang == "python" for b in blocks), f"{page.name} has no python block"


def test_config_key_table_is_current():
    page = DOCS / "concepts.md"
    assert config_table_in_page(page.read_text()) == config_key_table(), (
        "docs/concepts.md's config key tables are out of date: run python -m tests.doc_runner --write-config-table")


def test_predicate_table_is_made_from_the_classes():
    """docs/tasks.md's table of built-in predicates is `nmmo.tasks.registry.predicate_table`; a
    predicate whose `differences` or `params` change (planted here) no longer matches the page."""
    from nmmo.tasks.core import Param
    from nmmo.tasks.registry import BUILTINS
    from nmmo.tasks.registry import predicate_table as table_of

    page = predicate_table_in_page((DOCS / "tasks.md").read_text())
    assert page == predicate_table(), (
        "docs/tasks.md's predicate table is out of date: run python -m tests.doc_runner --write-predicate-table")
    assert len(page.splitlines()) == 2 + len(BUILTINS)
    last = BUILTINS[-1]
    for planted in ({"differences": last.differences + " (planted)"}, {"params": (*last.params, Param("x", "int"))}):
        changed = type(last.__name__, (last,), planted)
        assert table_of((*BUILTINS[:-1], changed)) != page


def test_markers_and_fences():
    text = "\n".join([
        "Intro.", "", "<!-- run -->", "", "```bash", "echo hi", "```", "",
        "```bash", "nmmo serve", "```", "",
        "<!-- file: agent.py -->", "```python", "X = 1", "```",
        "- a list item:", "", "    ```python", "    y = 2", "    ```",
    ])
    blocks = extract_blocks(text, Path("page.md"))
    assert [(b.lang, b.run, b.file, b.executes) for b in blocks] == [
        ("bash", True, None, True), ("bash", False, None, False), ("python", False, "agent.py", True),
        ("python", False, None, True)]
    assert blocks[0].code == "echo hi\n" and blocks[0].line == 6
    assert blocks[3].code == "y = 2\n"
    with pytest.raises(DocError, match="bash blocks only"):
        extract_blocks("<!-- run -->\n```python\nx = 1\n```\n", Path("page.md"))
    with pytest.raises(DocError, match="never closed"):
        extract_blocks("```python\nx = 1\n", Path("page.md"))


def test_a_failing_block_names_its_page_and_line(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("# Broken\n\n```python\nx = 1\n```\n\n```python\n\nraise RuntimeError('boom')\n```\n")
    with pytest.raises(DocError) as failure:
        run_page_isolated(page)
    assert "RuntimeError: boom" in str(failure.value) and f'"{page}", line 9' in str(failure.value)


class _RemoteAssets(html.parser.HTMLParser):
    """Collects the URLs of scripts, stylesheets, images and frames loaded from other hosts."""

    def __init__(self) -> None:
        super().__init__()
        self.remote: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        url = {"script": attrs.get("src"), "img": attrs.get("src"), "iframe": attrs.get("src"),
               "link": attrs.get("href") if attrs.get("rel") != "canonical" else None}.get(tag)
        if url and url.startswith(("http:", "https:", "//")):
            self.remote.append(f"<{tag}> {url}")


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
                    reason="building the site needs the [docs] extra (pip install -e '.[docs]'; make test installs it)")
def test_site_builds_offline_in_strict_mode(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(site)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}{done.stderr}"
    pages = sorted(site.rglob("*.html"))
    assert (site / "index.html").is_file() and (site / "api" / "env.html").is_file()
    assert "nmmo.envs.env.Env" in (site / "api" / "env.html").read_text(), "the API reference rendered no docstrings"
    remote = []
    for page in pages:
        parser = _RemoteAssets()
        parser.feed(page.read_text())
        remote += [f"{page.relative_to(site)}: {url}" for url in parser.remote]
    assert not remote, "the site loads assets from the network:\n" + "\n".join(remote)


def observation_claims(page: Path) -> dict[str, bool]:
    """{observation key: whether the page says it is here} from the rows of the page's
    "Observations" table: a row lists nmmo 2.x's keys in its first cell (in backticks) and says
    "absent" at the start of its second when we do not have them."""
    section = page.read_text().split("### Observations", 1)[1].split("\n#", 1)[0]
    claims = {}
    for row in (line for line in section.splitlines() if line.startswith("| `")):
        theirs, ours = (cell.strip() for cell in row.strip("|").split("|", 1))
        for key in re.findall(r"`(\w+)`", theirs.split(":")[0]):
            claims[key] = not ours.startswith("absent")
    return claims


def test_the_migration_pages_observation_claims_hold():
    # docs/coming_from.md once called the Task observation absent, long after tasks shipped
    import nmmo

    claims = observation_claims(DOCS / "coming_from.md")
    assert {"Tile", "Entity", "ActionTargets", "AgentId", "CurrentTick", "Task", "Inventory"} <= set(claims)
    obs, _ = nmmo.Env("trainers_small", tasks="foraging", seed=0).reset(seed=0)
    keys = set(next(iter(obs.values())))  # tasks on: every key an observation can hold
    assert {key for key, here in claims.items() if here} == keys
    assert not {key for key, here in claims.items() if not here} & keys
