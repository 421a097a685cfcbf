"""Every command block of README.md and docs/*.md runs as written, so the docs cannot drift.

A fenced ```bash or ```python block is a command a reader may paste: it is run here, on a copy of
the repository (the files it ships, nothing from ../shared), one fresh store per Markdown file
(``COMPASSESS_HOME`` in a temporary folder), the blocks of a file in their order (a later block
reads what an earlier one stored or wrote). A block that cannot run in a test (it starts a server,
needs docker, PostgreSQL or a GPU) is preceded by ``<!-- not-run: REASON -->``; a usage synopsis
(``[--flag]``, ``a|b``) is a fence without a language, never ``bash``.

Two tiers:

* fast, no model: every block is well-formed (``bash -n``; Python compiles), every ``compassess``
  command line in a bash block parses with the real argument parser, and every not-run block says
  why;
* ``model`` + ``slow``: every runnable block executes, on the bundled judge, exit status 0. The
  ``compassess`` on the blocks' PATH hands each command line to one warm server per file
  (``tests/warm_cli.py``): every command still runs in a process of its own, with the block's
  directory, environment, stdin, stdout and stderr and its own exit status, but torch is imported
  and the judge loaded once per file, not once per command. The Python blocks go to the same
  server (``python -c`` forked warm: a process of their own, in the file's directory and
  environment).

The examples are sized for this by design (the bundled sample: 3 articles x 5 summaries, and the
MT-Bench sample: 12 questions x 2 answers), so no budget is overridden here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)\s*$")
#: The blocks that may stay unrun, all of them: a new one is a decision, not an accident.
MAX_NOT_RUN = 16


@dataclass(frozen=True)
class Block:
    file: Path
    line: int            # 1-based line of the opening fence
    lang: str            # "bash" or "python"
    code: str
    not_run: str | None  # the reason, for a block preceded by <!-- not-run: REASON -->

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(ROOT)}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """The fenced bash and python blocks of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m["lang"], i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if lang in ("bash", "python"):
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            note = NOT_RUN.match(lines[k]) if k >= 0 else None
            found.append(Block(path, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n",
                               note["reason"] if note else None))
        i = j + 1
    return found


ALL_BLOCKS = [b for f in DOC_FILES for b in blocks_of(f)]
#: docs/python.md's cells run in order, in one namespace, in
#: tests/api/test_api.py::test_the_docs_walkthrough_runs_on_the_bundled_model, which also checks what
#: they make; running them here too would load the judge and judge the sample a second time.
RUN_ELSEWHERE = {ROOT / "docs" / "python.md"}
RUN_FILES = [f for f in DOC_FILES
             if f not in RUN_ELSEWHERE and any(b.not_run is None for b in blocks_of(f))]


def command_lines(code: str) -> list[list[str]]:
    """Every ``compassess ...`` command of a bash block as its argv (continuation lines joined,
    comments and a leading ``VAR=value`` dropped)."""
    joined = re.sub(r"\\\n", " ", code)
    argvs = []
    for line in joined.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            words = words[1:]
        for stop in ("|", "&&", ";", ">", "||", "&"):
            if stop in words:
                words = words[:words.index(stop)]
        # the last `compassess` followed by a command (`docker run IMAGE compassess runs`, not
        # `docker build -t compassess .`)
        starts = [k for k, w in enumerate(words) if w in ("compassess", ".venv/bin/compassess")
                  and k + 1 < len(words) and re.match(r"[a-z-]", words[k + 1])]
        if starts:
            argvs.append(words[starts[-1] + 1:])
    return argvs


# ------------------------------------------------------------------------------- fast checks

def test_the_docs_have_command_blocks_and_few_unrun_ones():
    assert len(ALL_BLOCKS) > 20
    unrun = [b for b in ALL_BLOCKS if b.not_run is not None]
    assert all(b.not_run for b in unrun), [b.where for b in unrun if not b.not_run]
    assert len(unrun) <= MAX_NOT_RUN, [f"{b.where}: {b.not_run}" for b in unrun]
    assert any("README.md" == b.file.name and b.not_run is None for b in ALL_BLOCKS)


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: f"{b.where}-{b.lang}")
def test_every_block_is_well_formed(block: Block):
    if block.lang == "python":
        compile(block.code, block.where, "exec")
        return
    proc = subprocess.run(["bash", "-n"], input=block.code, text=True, capture_output=True)
    assert proc.returncode == 0, f"{block.where}: {proc.stderr}"
    # A synopsis is not a command: optional flags in brackets and alternatives belong in a fence
    # without a language.
    for argv in command_lines(block.code):
        assert not any(w.startswith("[") for w in argv), f"{block.where}: synopsis in a bash block: {argv}"


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.lang == "bash"],
                         ids=lambda b: b.where)
def test_every_compassess_command_parses(block: Block, capsys):
    from compassess_core.cli.parser import parse_args

    for argv in command_lines(block.code):
        try:
            parse_args(argv)
        except SystemExit as e:
            if e.code != 0:
                raise AssertionError(f"{block.where}: `compassess {shlex.join(argv)}` does not "
                                     f"parse: {capsys.readouterr().err}") from None


def test_the_command_line_extraction_reads_continuations_and_comments():
    code = "compassess run a.csv --aspect coherence \\\n    --run x   # note [--y]\nls | wc\n"
    assert command_lines(code) == [["run", "a.csv", "--aspect", "coherence", "--run", "x"]]
    assert command_lines("X=1 compassess runs | head\n") == [["runs"]]
    assert command_lines("docker build -t compassess .\ndocker run -v d:/data compassess compassess runs\n") \
        == [["runs"]]


# ------------------------------------------------------------------ running them, on the model

def _copy_repository(dest: Path) -> None:
    """The repository's own files, as a clone has them (no virtualenv, caches or git data)."""
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
        "node_modules", "*.egg-info", "build", "dist", ".hypothesis"), symlinks=True)


def _virtualenv_shim(repo: Path, warm: bool = False) -> Path:
    """``.venv/bin`` as `make setup` leaves it, pointing at this interpreter: ``python``,
    ``compassess`` and an ``activate`` that puts it first on PATH. ``warm``: ``compassess`` hands
    its command line to the warm server named by ``$COMPASSESS_WARM_CLI`` (``tests/warm_cli.py``:
    the command still runs in a process of its own, with this shell's directory, environment and
    stdin/stdout/stderr, but without importing torch and loading the judge again)."""
    bin_ = repo / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").symlink_to(sys.executable)
    script = bin_ / "compassess"
    if warm:
        from tests import warm_cli
        script.write_text(f"#!{sys.executable}\n{warm_cli.client_script()}")
    else:
        script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m compassess_core.cli "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (bin_ / "activate").write_text(f'PATH="{bin_}:$PATH"\nexport PATH\nVIRTUAL_ENV="{repo / ".venv"}"\n'
                                   'export VIRTUAL_ENV\n')
    return bin_


_PYTHON_DRIVER = textwrap.dedent("""
    import json, sys
    cells = json.load(open(sys.argv[1]))
    ns = {"__name__": "__docs__"}
    for where, code in cells:
        try:
            exec(compile(code, where, "exec"), ns)
        except BaseException as e:
            print(f"FAILED {where}: {e!r}", file=sys.stderr)
            raise
""")


def _groups(blocks: list[Block]) -> list[list[Block]]:
    """The runnable blocks in order, consecutive python blocks together (one namespace, as a
    notebook's cells)."""
    groups: list[list[Block]] = []
    for b in blocks:
        if b.not_run is not None:
            continue
        if groups and b.lang == "python" and groups[-1][-1].lang == "python":
            groups[-1].append(b)
        else:
            groups.append([b])
    return groups


@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize("doc", RUN_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_blocks_run_as_written(doc: Path, tmp_path: Path, bundled_model):
    from tests import warm_cli

    repo = tmp_path / "clone"
    _copy_repository(repo)
    bin_ = _virtualenv_shim(repo, warm=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("COMPASSESS_") or k in ("COMPASSESS_MODEL_CACHE", "COMPASSESS_THREADS")}
    env.update(COMPASSESS_HOME=str(tmp_path / "home"), PYTHONPATH=str(repo),
               PATH=f"{bin_}:{env.get('PATH', '')}", SOURCE_DATE_EPOCH="0", TQDM_DISABLE="1",
               MPLBACKEND="Agg")
    env.pop("VIRTUAL_ENV", None)
    # One warm command line per file, started in the environment its commands get (the copy on
    # PYTHONPATH): the file's `compassess` commands are forks of it.
    server = warm_cli.WarmCli(env=env, cwd=repo, preload=True)
    env["COMPASSESS_WARM_CLI"] = server.path
    try:
        _run_groups(doc, repo, env, tmp_path, server)
    finally:
        server.close()


def _run_groups(doc: Path, repo: Path, env: dict[str, str], tmp_path: Path, server) -> None:
    for group in _groups(blocks_of(doc)):
        first = group[0]
        if first.lang == "bash":
            proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", first.code], cwd=repo,
                                  env=env, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=1800)
        else:
            # `python -c DRIVER cells.json`, forked from the file's warm server like its
            # commands: a process of its own, the same directory and environment, torch
            # imported and the judge loaded already.
            cells = tmp_path / f"cells-{first.line}.json"
            cells.write_text(json.dumps([[b.where, b.code] for b in group]))
            proc = server.run([str(cells)], cwd=repo,
                              env={k: v for k, v in env.items() if k != "COMPASSESS_WARM_CLI"},
                              timeout=1800, python=_PYTHON_DRIVER)
        assert proc.returncode == 0, (
            f"{first.where} ({first.lang}) exited {proc.returncode}\n--- code\n"
            + "".join(b.code for b in group)
            + f"--- stdout (end)\n{proc.stdout[-4000:]}\n--- stderr (end)\n{proc.stderr[-4000:]}")
