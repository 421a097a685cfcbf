"""Release several test processes at one instant, once every one of them is ready.

A test that makes writers collide starts its processes, waits until each has written its ready
mark (imported everything and opened its store), then creates the go file that all of them poll
for. Waiting for the marks, not for a fixed time, keeps the collision real on a loaded machine.
"""

from __future__ import annotations

import time
from pathlib import Path

#: The lines a process runs once it is ready: mark it, then wait for the go file. ``go`` is the
#: go file's path (a str) in the process's own code.
WAIT_FOR_GO = """
import os as _os
Path(go + f".ready.{_os.getpid()}").touch()
while not Path(go).exists():
    time.sleep(0.005)
"""


def release_together(go: Path, processes: list, timeout_s: float = 240.0) -> None:
    """Create ``go`` once every process of ``processes`` has written its ready mark beside it.

    Raises AssertionError, with the output of a process that ended early, when one dies first or
    the marks are not all there after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while len(list(go.parent.glob(go.name + ".ready.*"))) < len(processes):
        for p in processes:
            if p.poll() is not None:
                out = p.stdout.read() if p.stdout else ""
                raise AssertionError(f"a process ended before the start: {out!r}"[-3000:])
        if time.monotonic() > deadline:
            raise AssertionError(f"not every process was ready after {timeout_s} s")
        time.sleep(0.05)
    go.touch()
