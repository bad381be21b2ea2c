"""Run the CLI in a child process whose standard error is a terminal (a pseudo-terminal),
as a user at a shell sees it: progress bars are drawn only there."""

from __future__ import annotations

import os
import subprocess
import sys

CLI = [sys.executable, "-c", "from hivemem.frontends.cli import main; main()"]


def run_on_a_terminal(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, str]:
    """``hivemem *args`` with stderr on a pseudo-terminal: the finished process (stdout
    captured as bytes) and what the terminal showed."""
    main_fd, terminal = os.openpty()
    try:
        done = subprocess.run(
            [*CLI, *args], stdout=subprocess.PIPE, stderr=terminal, timeout=timeout
        )
    finally:
        os.close(terminal)
    try:
        shown = os.read(main_fd, 65536).decode(errors="replace")
    finally:
        os.close(main_fd)
    return done, shown
