"""The warm command line the tests use (``tests/warm_cli.py``) behaves as a fresh
``python -m compassess_core.cli``: the caller's directory, environment, stdin, stdout and stderr,
its exit status, pipes, and no state carried from one command to the next. Without the model (the
server here preloads nothing); the docs and command-line tests use the same server with the
bundled judge loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import warm_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
    s = warm_cli.WarmCli(preload=False)
    yield s
    s.close()


def test_a_command_gets_the_callers_directory_environment_and_exit_status(server, tmp_path):
    db = "sqlite:///x.db"  # relative: the caller's directory
    out = server.run(["runs", "--json", "--db", db, "--create"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [] and (tmp_path / "x.db").exists()
    bad = server.run(["rank", "--run", "nope", "--db", db], cwd=tmp_path)
    assert bad.returncode == 2 and "nope" in bad.stderr and not bad.loaded_model
    usage = server.run(["no-such-command"], cwd=tmp_path)
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    # the environment is the caller's: COMPASSESS_HOME places the default store
    home = tmp_path / "home"
    env = {**os.environ, "COMPASSESS_HOME": str(home)}
    env.pop("COMPASSESS_DATABASE_URL", None)
    assert server.run(["runs"], cwd=tmp_path, env=env).returncode == 0
    assert any(home.rglob("*.db"))


def test_the_shim_on_path_runs_the_command_as_a_shell_would(server, tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    shim = bin_ / "compassess"
    shim.write_text(f"#!{sys.executable}\n{warm_cli.client_script()}")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}",
           "COMPASSESS_WARM_CLI": server.path}
    script = ("set -e -o pipefail\n"
              "compassess runs --json --db sqlite:///s.db --create | head -c 2 > first.txt\n"
              "if compassess rank --run nope --db sqlite:///s.db 2> err.txt; then exit 9; fi\n"
              "echo \"status $?\"\n")
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "first.txt").read_text() == "[]"
    assert "nope" in (tmp_path / "err.txt").read_text()


def test_a_python_script_runs_as_python_c_would(server, tmp_path):
    """The docs' Python blocks: ``python -c CODE ARGS`` forked from the server, with the
    caller's directory, environment and arguments, its output and exit status; an exception is
    a traceback and status 1."""
    code = ("import os, sys\nimport compassess_core as ca\n"
            "print(sys.argv[1:], os.getcwd(), os.environ['DOCS_X'])\n"
            "print(type(ca.open_store('runs.db')).__name__)\n")
    env = {**os.environ, "DOCS_X": "seen"}
    out = server.run(["a", "b"], cwd=tmp_path, env=env, python=code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == f"['a', 'b'] {tmp_path} seen"
    assert (tmp_path / "runs.db").exists() and not out.loaded_model
    failed = server.run([], cwd=tmp_path, env=env, python="raise ValueError('cell 3 broke')\n")
    assert failed.returncode == 1 and "ValueError: cell 3 broke" in failed.stderr
    assert server.run([], cwd=tmp_path, env=env, python="import sys; sys.exit(4)").returncode == 4
