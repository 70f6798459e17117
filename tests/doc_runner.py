"""Runs the code in the documentation, so that the pages keep working as the code changes.

What runs, page by page (`tests/test_docs.py` runs every page in `PAGES`: the tutorials, and the
introduction pages index.md, install.md and concepts.md, the interfaces guide and the trainer pages):

- Every fenced ``python`` block is executed. There is no marker to skip one: a snippet that must
  not run does not belong in a ``python`` fence (show it as ``text``, or describe it in prose).
- A fenced ``bash`` block runs only when the nearest non-blank line above its fence is the HTML
  comment ``<!-- run -->`` (invisible on the rendered site). It runs with ``bash -e -o pipefail``
  and the directory of this interpreter first on ``PATH``, so ``nmmo`` and ``python`` are the
  checkout's virtual environment's. Without the marker a ``bash`` block is only shown: long or
  blocking commands (``make demo``, ``nmmo serve``, a 20-minute training run). Other fences
  (``toml``, ``text``, ...) are only shown.
- A fenced block preceded by ``<!-- file: NAME -->`` is written to NAME (relative to the working
  directory) when the run reaches it; a ``python`` one is then executed like any other. This is how
  a page provides a module or a config file that later blocks use by name (``my_agent.py:Agent``).

Blocks run in page order. All the ``python`` blocks of a page share one namespace whose
``__name__`` is ``"__main__"``, and a page runs in a fresh empty working directory, in a Python
process of its own (``python -m tests.doc_runner PAGE``), so pages cannot leak state into each
other or into the test session (imported modules, a started Ray, torch's thread settings).
Tracebacks show the Markdown file's own line numbers.

The module also generates the config key tables of ``docs/concepts.md`` from `nmmo.config` (each
key's system, type, default, checked range and attribute docstring, and the size presets'
overrides), between the ``<!-- config-keys:start -->`` and ``<!-- config-keys:end -->`` markers. A
test checks that the page holds the current tables; rewrite them with::

    python -m tests.doc_runner --write-config-table

Likewise the table of built-in predicates in ``docs/tasks.md`` (between ``<!-- predicates:start -->``
and ``<!-- predicates:end -->``) is `nmmo.tasks.registry.predicate_table`; ``--write-predicate-table``
rewrites it.

``python -m tests.doc_runner [PAGE ...]`` runs pages (default: all of them) from the command line
and prints how long each block took.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: Pages whose code runs: the tutorials and the hand-written introduction pages.
PAGES = sorted([DOCS / "index.md", DOCS / "install.md", DOCS / "concepts.md", DOCS / "interfaces.md",
                DOCS / "coming_from.md", DOCS / "tasks.md", DOCS / "games.md", DOCS / "games_centre.md",
                *(DOCS / "tutorials").glob("*.md"), *(DOCS / "trainers").glob("*.md")])

RUN_MARKER = "<!-- run -->"
FILE_MARKER = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->$")
MARKER = re.compile(r"^<!--\s*(run|file:.*)\s*-->$")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
TABLE_START, TABLE_END = "<!-- config-keys:start -->", "<!-- config-keys:end -->"
PREDICATES_START, PREDICATES_END = "<!-- predicates:start -->", "<!-- predicates:end -->"
BASH_TIMEOUT_S = 300
PAGE_TIMEOUT_S = 600


class DocError(AssertionError):
    """A documentation block failed or is malformed; the message names the page and line."""


@dataclass
class Block:
    """One fenced block of a page."""

    page: Path
    line: int  # 1-based line of the first line of code (after the opening fence)
    lang: str
    code: str
    run: bool = False  # a bash block marked <!-- run -->
    file: str | None = None  # <!-- file: NAME -->

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page}:{self.line}"

    @property
    def executes(self) -> bool:
        return self.lang == "python" or (self.lang == "bash" and self.run)


def extract_blocks(text: str, page: Path) -> list[Block]:
    """The fenced blocks of a Markdown text, with the marker (if any) that precedes each."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    previous = ""  # nearest non-blank line outside a fence
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            if lines[i].strip():
                previous = lines[i].strip()
            i += 1
            continue
        indent, fence = len(match["indent"]), match["fence"]
        lang = match["info"].split()[0].lower() if match["info"].strip() else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        else:
            raise DocError(f"{page}:{i + 1}: the fence opened here is never closed")
        block = Block(page, i + 2, lang, "\n".join(body) + "\n")
        marker = MARKER.match(previous)
        if marker:
            if previous == RUN_MARKER:
                if lang != "bash":
                    raise DocError(f"{block.where}: {RUN_MARKER} marks bash blocks only (this one is {lang!r})")
                block.run = True
            else:
                file_match = FILE_MARKER.match(previous)
                if not file_match:
                    raise DocError(f"{block.where}: malformed marker {previous!r}; use <!-- file: NAME -->")
                block.file = file_match[1]
        blocks.append(block)
        previous = ""
        i = j + 1
    return blocks


def _run_bash(block: Block, workdir: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    try:
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=BASH_TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        raise DocError(f"{block.where}: the bash block ran longer than {BASH_TIMEOUT_S} s") from err
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-4000:]
        raise DocError(f"{block.where}: the bash block exited with status {done.returncode}:\n{block.code}\n"
                       f"--- output (tail) ---\n{output}")


def run_page(page: Path, workdir: Path) -> list[tuple[Block, float]]:
    """Run every executable block of `page` in order, in this process, with `workdir` as the
    working directory (and first on sys.path); returns each block with its wall time."""
    page = Path(page).resolve()
    blocks = extract_blocks(page.read_text(), page)
    workdir = Path(workdir).resolve()
    os.chdir(workdir)
    sys.path.insert(0, str(workdir))
    namespace: dict = {"__name__": "__main__"}
    timings: list[tuple[Block, float]] = []
    for block in blocks:
        start = time.perf_counter()
        if block.file is not None:
            target = workdir / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code)
        if block.lang == "python":
            # leading newlines make the traceback's line numbers those of the Markdown file
            code = compile("\n" * (block.line - 1) + block.code, str(page), "exec")
            exec(code, namespace)  # noqa: S102 - running the docs is the point
        elif block.lang == "bash" and block.run:
            _run_bash(block, workdir)
        else:
            continue
        timings.append((block, time.perf_counter() - start))
    return timings


@dataclass
class PageRun:
    """The outcome of one page run in its own process."""

    page: Path
    seconds: float
    output: str


def run_page_isolated(page: Path, timeout: float = PAGE_TIMEOUT_S) -> PageRun:
    """Run `page` in a fresh Python process and a fresh temporary directory; raise DocError with
    the output's tail (the traceback included) when a block fails."""
    page = Path(page).resolve()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nmmo-docs-") as workdir:
        command = [sys.executable, "-m", "tests.doc_runner", "--in-process", "--workdir", workdir, str(page)]
        try:
            done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise DocError(f"{page}: the page ran longer than {timeout:g} s") from err
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise DocError(f"{_name(page)} failed (exit status {done.returncode}); output (tail):\n{output[-6000:]}")
    return PageRun(page, time.perf_counter() - start, output)


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT) if page.is_relative_to(ROOT) else page)


# ------------------------------------------------------------------ config key table
def _attribute_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (a string literal right after `KEY: type = value`) of one class."""
    tree = ast.parse(inspect.getsource(cls).lstrip())
    body = tree.body[0].body
    docs = {}
    for node, following in zip(body, [*body[1:], None], strict=True):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant) and isinstance(following.value.value, str)):
            docs[node.target.id] = " ".join(following.value.value.split())
    return docs


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _value(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:_}"
    return repr(value) if isinstance(value, str) else str(value)


def _range(key: str) -> str:
    from nmmo import config

    low, high = config._BOUNDS.get(key, (None, None))
    if low is not None and high is not None:
        return f"{_value(low)} .. {_value(high)}"
    if low is not None:
        return f"≥ {_value(low)}"
    return "" if high is None else f"≤ {_value(high)}"


def config_key_table() -> str:
    """Markdown tables of every config key (system, type, default, range, meaning) and of the keys
    each size preset overrides, generated from `nmmo.config`."""
    from nmmo import config

    sections = [config.Config, *(getattr(config, name) for name in config._SYSTEM_PREFIXES)]
    lines = ["| key | system | type | default | range | meaning |", "|---|---|---|---|---|---|"]
    for cls in sections:
        docs = _attribute_docs(cls)
        last_documented = None
        for key, annotation in cls.__annotations__.items():
            if not key.isupper() or key == "SYSTEMS":
                continue
            if key in docs:
                meaning, last_documented = docs[key], key
            else:  # a key documented together with the one before it (BASE and SCALE, ...)
                meaning = f"see `{last_documented}`" if last_documented else ""
            system = config.Config._system_of(key) or "all"
            kind = annotation if isinstance(annotation, str) else annotation.__name__
            lines.append(f"| `{key}` | {system} | {kind} | `{_value(getattr(cls, key))}` | {_range(key)} | "
                         f"{_cell(meaning)} |")
        if cls is config.Config:
            doc = " ".join((inspect.getdoc(config.Config.MAP_SIZE) or "").split())
            lines.append(f"| `MAP_SIZE` | all | int | `MAP_CENTER + 2 * MAP_BORDER` | derived, read-only | "
                         f"{_cell(doc)} |")
    presets = [config.Small, config.Medium, config.Large]
    keys = [k for k in config.Config._all_keys() if any(k in vars(p) for p in presets)]
    lines += ["", "Size presets (`nmmo.config.Small`, `Medium`, `Large`) override these defaults:", "",
              "| key | " + " | ".join(p.__name__ for p in presets) + " |", "|---|" + "---|" * len(presets)]
    for key in keys:
        lines.append(f"| `{key}` | " + " | ".join(f"`{_value(getattr(p, key))}`" for p in presets) + " |")
    return "\n".join(lines) + "\n"


def section_in_page(text: str, start_marker: str = TABLE_START, end_marker: str = TABLE_END,
                    page: str = "docs/concepts.md") -> str:
    """The generated text between two markers of a page's text (DocError when they are missing)."""
    start, end = text.find(start_marker), text.find(end_marker)
    if start < 0 or end < start:
        raise DocError(f"{page} has no {start_marker} ... {end_marker} section")
    return text[start + len(start_marker):end].strip("\n") + "\n"


def config_table_in_page(text: str) -> str:
    """The table between the config-keys markers of a page's text."""
    return section_in_page(text)


def predicate_table_in_page(text: str) -> str:
    """The table between the predicates markers of a page's text (docs/tasks.md)."""
    return section_in_page(text, PREDICATES_START, PREDICATES_END, "docs/tasks.md")


def predicate_table() -> str:
    """The built-in predicates' table, as `nmmo.tasks.registry` makes it from the classes."""
    from nmmo.tasks.registry import predicate_table as table

    return table()


def write_section(page: Path, new: str, start_marker: str = TABLE_START, end_marker: str = TABLE_END) -> bool:
    """Rewrite the generated text between two markers of `page`; True when it changed."""
    text = page.read_text()
    if section_in_page(text, start_marker, end_marker, str(page.relative_to(ROOT))) == new:
        return False
    start, end = text.find(start_marker) + len(start_marker), text.find(end_marker)
    page.write_text(text[:start] + "\n" + new + text[end:])
    return True


def write_config_table(page: Path = DOCS / "concepts.md") -> bool:
    """Rewrite the generated table in `page`; True when it changed."""
    return write_section(page, config_key_table())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the documentation's code blocks (see this module's docstring).")
    parser.add_argument("pages", nargs="*", type=Path, help="pages to run (default: every page in PAGES)")
    parser.add_argument("--write-config-table", action="store_true", help="regenerate the tables in docs/concepts.md")
    parser.add_argument("--config-table", action="store_true", help="print the generated config key tables")
    parser.add_argument("--write-predicate-table", action="store_true",
                        help="regenerate the built-in predicates' table in docs/tasks.md")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # one page, in this process
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.config_table:
        print(config_key_table(), end="")
        return 0
    if args.write_config_table:
        print("docs/concepts.md: " + ("tables rewritten" if write_config_table() else "tables already current"))
        return 0
    if args.write_predicate_table:
        changed = write_section(DOCS / "tasks.md", predicate_table(), PREDICATES_START, PREDICATES_END)
        print("docs/tasks.md: " + ("table rewritten" if changed else "table already current"))
        return 0
    if args.in_process:
        (page,) = args.pages
        for block, seconds in run_page(page, args.workdir):
            print(f"[doc_runner] {block.where} {block.lang} {seconds:.2f} s", flush=True)
        return 0
    total = 0.0
    for page in args.pages or PAGES:
        run = run_page_isolated(page)
        total += run.seconds
        for line in run.output.splitlines():
            if line.startswith("[doc_runner] "):
                print("  " + line.removeprefix("[doc_runner] "))
        print(f"{_name(run.page)}: {run.seconds:.2f} s")
    print(f"total: {total:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
