"""The command line, warm: each ``compassess ARGS`` a process of its own, forked from a server that
has already imported torch and transformers and loaded the bundled judge.

``python -m compassess_core.cli`` imports torch and transformers and loads the judge before it
does anything: seconds per command, a minute per README block, on this machine. The tests that
run the command line (``tests/docs/test_docs_commands.py``, the ``cli(...)`` helpers) start one server
(``WarmCli``) and send it each command: it forks, and the child is the command, with the caller's
working directory, environment, stdin, stdout and stderr (the file descriptors themselves, passed
over a Unix socket) and its own exit status, so a command sees what it would see started fresh.
A Python script (``python -c CODE ARGS``, the docs' ``python`` blocks) is sent the same way and
forked the same way (``WarmCli.run(..., python=CODE)``).
The one difference: ``judges.loading.load_model`` returns the copy loaded at start when asked
for the same model, device and dtype (the same file: the same weights); any other model loads as
usual. What the process imported at start (``PYTHONPATH``, ``TQDM_*``, ``MPLBACKEND``) comes
from the environment the server was started with.

The entry point itself (``python -m compassess_core.cli``, its signals and exit codes) keeps
real subprocess tests in ``tests/cli/test_cli.py``.

Every reply says whether the command loaded a model, so a test without the ``model`` mark that
loads one through the command line fails (``tests/conftest.py``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _send_msg(conn: socket.socket, obj) -> None:
    data = json.dumps(obj).encode()
    conn.sendall(struct.pack("!I", len(data)) + data)


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the warm command line closed the connection")
        buf += chunk
    return buf


def _recv_msg(conn: socket.socket):
    (n,) = struct.unpack("!I", _recv_exact(conn, 4))
    return json.loads(_recv_exact(conn, n))


# ------------------------------------------------------------------------------ the server side

def _warm(preload: bool) -> None:
    """Import what every command imports and (``preload``) load the bundled judge once, then keep
    it: the children's ``load_model`` of the same (model, device, dtype) returns it."""
    import torch

    # No OpenMP pool in the server: a pool's threads do not survive fork (the child's first
    # parallel region would wait on them); each child sizes its own pool again.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)

    import compassess_core.cli  # noqa: F401  (the parser and every command module)
    from compassess_core.judges import loading
    from compassess_core.judges.models import default_model_path

    real = loading.load_model
    loaded: dict[tuple[str, str, str], object] = {}

    def key(spec, device, dtype) -> tuple[str, str, str]:
        return (str(Path(str(spec)).expanduser().resolve()) if Path(str(spec)).expanduser().exists()
                else str(spec), device, dtype)

    def load_model(spec, device: str = "auto", dtype: str = "auto"):
        k = key(spec, device, dtype)
        model = loaded[k] if k in loaded else real(spec, device=device, dtype=dtype)
        _LOADS.append(k)  # loaded: a refused path is no load
        return model

    loading.load_model = load_model
    path = default_model_path()
    if preload and path.is_file():
        loaded[key(path, "auto", "auto")] = real(path, device="auto", dtype="auto")
    for name in ("pandas", "scipy.stats", "sqlalchemy", "db.store",
                 *(("transformers",) if preload else ())):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - a warm-up, not a requirement
            pass
    _THREADS.append(threads)


_LOADS: list = []
_THREADS: list = []


def _run_command(request: dict, fds: list[int]) -> int:
    """In the forked child: become the command and return its exit status."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  line_buffering=os.isatty(1), write_through=False)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    python = request.get("python")   # `python -c CODE ARGV...` instead of `compassess ARGV...`
    sys.argv = ["-c", *request["argv"]] if python is not None else ["compassess", *request["argv"]]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    import torch
    torch.set_num_threads(_THREADS[0] if _THREADS else 1)
    from compassess_core.cli import main
    try:
        if python is not None:
            exec(compile(python, "<string>", "exec"), {"__name__": "__main__"})
            code = 0
        else:
            code = main(request["argv"])
    except SystemExit as e:
        code = e.code
    except BaseException:  # noqa: BLE001 - as the interpreter would: the traceback, status 1
        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    return code


def _handle(conn: socket.socket) -> None:
    """In a forked waiter: fork the command, wait for it, answer its status."""
    msg, fds, _flags, _addr = socket.recv_fds(conn, 16, 3)
    request = _recv_msg(conn)
    status_r, status_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(status_r)
        code = 1
        try:
            code = _run_command(request, fds)
        finally:
            try:
                os.write(status_w, json.dumps({"loads": len(_LOADS)}).encode())
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code & 0xFF)
    os.close(status_w)
    for fd in fds:
        os.close(fd)
    _, status, usage = os.wait4(pid, 0)
    extra = b""
    while chunk := os.read(status_r, 4096):
        extra += chunk
    loads = json.loads(extra)["loads"] if extra else 0
    code = os.waitstatus_to_exitcode(status)
    _send_msg(conn, {"returncode": code, "loaded_model": loads > 0,
                     "cpu_s": usage.ru_utime + usage.ru_stime})


def _reap(signum, frame) -> None:  # noqa: ARG001
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(path: str, preload: bool) -> None:
    _warm(preload)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    # The waiters are reaped as they end (not ignored: a reaped child's CPU time counts in this
    # server's, and so in the test run's `time`).
    signal.signal(signal.SIGCHLD, _reap)
    print("ready", flush=True)
    parent = os.getppid()
    srv.settimeout(5)
    while True:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            if os.getppid() != parent:   # the test run is gone (killed): so is this server
                return
            continue
        conn.settimeout(None)
        if os.fork() == 0:
            srv.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            code = 0
            try:
                _handle(conn)
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                code = 1
            finally:
                conn.close()
                os._exit(code)
        conn.close()


# ------------------------------------------------------------------------------ the client side

@dataclass
class Completed:
    """What ``subprocess.run(..., capture_output=True, text=True)`` gives, and whether the
    command loaded a model."""
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    loaded_model: bool


def request(path: str, argv: list[str], *, cwd: str | os.PathLike, env: dict[str, str],
            stdin: int = 0, stdout: int = 1, stderr: int = 2,
            timeout: float | None = None, python: str | None = None) -> tuple[int, bool]:
    """Run ``compassess ARGV`` (``python``: ``python -c PYTHON ARGV``) in the server at ``path``
    on these file descriptors; its exit status and whether it loaded a model."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(path)
        socket.send_fds(conn, [b"f"], [stdin, stdout, stderr])
        _send_msg(conn, {"argv": list(argv), "cwd": str(cwd), "env": dict(env),
                         **({"python": python} if python is not None else {})})
        reply = _recv_msg(conn)
    if reply["loaded_model"]:
        LOADS.append(list(argv))
    CPU_S.append(reply["cpu_s"])
    return reply["returncode"], reply["loaded_model"]


#: The command lines that loaded a model (``tests/conftest.py`` fails such a test without the
#: ``model`` mark), and the CPU seconds of every command (user + system).
LOADS: list[list[str]] = []
CPU_S: list[float] = []


class WarmCli:
    """One warm server (a process of its own, started with ``env``); ``run`` is
    ``subprocess.run([python, -m, compassess_core.cli, *argv], capture_output=True, text=True)``."""

    def __init__(self, env: dict[str, str] | None = None, cwd: str | os.PathLike = ROOT,
                 preload: bool = True):
        self._dir = tempfile.mkdtemp(prefix="warm-cli-")
        self.path = os.path.join(self._dir, "cli.sock")
        self.log = Path(self._dir) / "server.log"
        self.env = dict(os.environ if env is None else env)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, __file__, self.path,
                                          *(["--preload"] if preload else [])], cwd=cwd,
                                         env=self.env, stdout=subprocess.PIPE, stderr=log,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        line = self.proc.stdout.readline()
        self.proc.stdout.close()
        if line.strip() != b"ready":
            self.proc.wait(timeout=60)
            raise RuntimeError(f"the warm command line did not start:\n{self.log.read_text()[-4000:]}")

    def run(self, argv, *, cwd: str | os.PathLike = ROOT, env: dict[str, str] | None = None,
            input: str | None = None, timeout: float | None = None,
            python: str | None = None) -> Completed:
        """``python``: run ``python -c PYTHON ARGV`` instead (a script that imports
        ``compassess_core``, as the docs' Python blocks, forked warm like a command)."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                tempfile.TemporaryFile() as inp:
            if input is not None:
                inp.write(input.encode())
                inp.seek(0)
            code, loaded = request(self.path, [str(a) for a in argv], cwd=cwd,
                                   env=dict(os.environ) if env is None else env,
                                   stdin=inp.fileno(), stdout=out.fileno(), stderr=err.fileno(),
                                   timeout=timeout, python=python)
            out.seek(0)
            err.seek(0)
            return Completed([str(a) for a in argv], code, out.read().decode(errors="replace"),
                             err.read().decode(errors="replace"), loaded)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)


_SHARED: dict[bool, WarmCli] = {}


def shared(model: bool) -> WarmCli:
    """This process's server, started on first use: ``model`` True, the one with the bundled
    judge loaded (for tests marked ``model``), else the one without. ``close_all`` stops them."""
    if model not in _SHARED:
        _SHARED[model] = WarmCli(preload=model)
    return _SHARED[model]


def run(*argv, model: bool = False, cwd: str | os.PathLike = ROOT, env: dict[str, str] | None = None,
        timeout: float | None = 900) -> Completed:
    """``compassess ARGV`` through this process's shared server (see ``shared``); ``env`` None
    is this process's environment now, as a subprocess would get it."""
    return shared(model).run(argv, cwd=cwd, env=env, timeout=timeout)


def close_all() -> None:
    while _SHARED:
        _SHARED.popitem()[1].close()


#: The ``compassess`` a docs test puts on PATH: it sends its command line to the server named by
#: ``COMPASSESS_WARM_CLI`` on its own stdin/stdout/stderr, and exits with the command's status.
CLIENT = """\
import os, sys
sys.path.insert(0, {here!r})
import warm_cli
code, _ = warm_cli.request(os.environ["COMPASSESS_WARM_CLI"], sys.argv[1:], cwd=os.getcwd(),
                           env={{k: v for k, v in os.environ.items() if k != "COMPASSESS_WARM_CLI"}})
sys.exit(code)
"""


def client_script() -> str:
    return CLIENT.format(here=str(Path(__file__).resolve().parent))


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:] == ["--preload"])
