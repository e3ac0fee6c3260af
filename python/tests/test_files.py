"""Weight files from paths that are not regular files: a FIFO (or another
special file) is refused promptly with mhsa.Error, never waited on. Each
call runs in a child process with a timeout, so a regression fails here
instead of hanging the suite."""
import os
import subprocess
import sys
import textwrap

import pytest

TIMEOUT = 30   # seconds; the call itself should take milliseconds


def run_child(code, tmp_path):
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                              cwd=tmp_path, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the call did not return within {TIMEOUT} s (it waits "
                    "on the FIFO)")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_load_safetensors_from_a_fifo_is_refused_promptly(tmp_path):
    fifo = tmp_path / "weights.safetensors"
    os.mkfifo(fifo)
    r = run_child(f"""
        import mhsa
        blk = mhsa.Block(32, 4, 8)
        try:
            blk.load_safetensors({str(fifo)!r})
        except mhsa.Error as e:
            print("refused", e.status)
        else:
            print("loaded")
        """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "refused", r.stdout
