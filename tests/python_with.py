"""python_with.py — run a test script under a python3 that has its modules.

meson runs Python tests with the python3 it found, which may be a pyenv or
venv interpreter without numpy or torch, while another python3 on PATH (on
Debian 12: /usr/bin/python3 with python3-numpy and python3-torch) has them.
rerun_with() execs the calling script once under the first such python3;
an environment flag keeps it from looping when none has them.
"""
import os
import subprocess
import sys


def rerun_with(modules, flag):
    """Exec sys.argv under another python3 on PATH that imports every name
    in `modules`; returns only if none does or this is already the rerun
    (flag: the environment variable marking it)."""
    if os.environ.get(flag) == "1":
        return
    os.environ[flag] = "1"
    me = os.path.realpath(sys.executable)
    probe = "import " + ", ".join(modules)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = os.path.join(d, "python3")
        if (not os.path.isfile(cand) or not os.access(cand, os.X_OK)
                or os.path.realpath(cand) == me):
            continue
        if subprocess.run([cand, "-c", probe],
                          stderr=subprocess.DEVNULL).returncode == 0:
            os.execv(cand, [cand] + sys.argv)
