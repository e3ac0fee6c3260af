#!/usr/bin/env python3
"""Judge a meson test log (meson-logs/testlog*.json): a run passes only if at
least one test ran and every test's result is OK. meson itself exits 0 when
tests are skipped (e.g. a cross build without an exe_wrapper) or when there
are none, so CI asks this script instead.

  testlog-check.py LOG.json LABEL      print a summary; exit 1 if rejected
  testlog-check.py --count LOG.json    print the number of passed checks

A test that prints libcheck's summary ("100%: Checks: N, Failures: 0, ...")
counts N checks; it must have run at least one. Other tests count 1.
"""
import json
import re
import sys

CHECKS = re.compile(r"^\d+%: Checks: (\d+), Failures: (\d+), Errors: (\d+)",
                    re.M)


def load(path):
    tests = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                tests.append(json.loads(line))
    return tests


def judge(tests):
    """Returns (n_ok, n_checks, problems)."""
    n_ok, n_checks, problems = 0, 0, []
    for t in tests:
        name, result = t.get("name", "?"), t.get("result", "?")
        if result != "OK":
            problems.append(f"{name}: {result}")
            continue
        n_ok += 1
        found = CHECKS.findall(t.get("stdout") or "")
        if not found:
            n_checks += 1
            continue
        for checks, failures, errors in found:
            if int(checks) == 0:
                problems.append(f"{name}: libcheck ran 0 checks")
            if int(failures) or int(errors):
                problems.append(f"{name}: libcheck reports failures")
            n_checks += int(checks)
    if not tests:
        problems.append("no test ran")
    return n_ok, n_checks, problems


def main(argv):
    if len(argv) == 3 and argv[1] == "--count":
        n_ok, n_checks, problems = judge(load(argv[2]))
        print(n_checks)
        return 1 if problems else 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, label = argv[1], argv[2]
    try:
        tests = load(path)
    except OSError as e:
        print(f"{label}: cannot read test log: {e}", file=sys.stderr)
        return 1
    n_ok, n_checks, problems = judge(tests)
    print(f"{label}: {n_ok} of {len(tests)} tests OK ({n_checks} checks)")
    for p in problems:
        print(f"{label}: REJECTED: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
