#!/usr/bin/env python3
"""check_exports.py — the shared library exports the public API, exactly.

    check_exports.py NM LIBMHSA_SO HEADER...

Every function declared in the public headers (include/mhsa.h,
include/mhsa_train.h, include/mhsa_model.h) must be a defined dynamic symbol of the shared
library, and the library must export nothing else (no internal mhsa__
function, no helper of another prefix, no data): the library is compiled
with hidden visibility and MHSA_API marks the declarations. Prints each
extra or missing name and exits 1 when there is any.
"""
import re
import subprocess
import sys


def declared(paths):
    names = set()
    for p in paths:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)   # comments
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r"^\s*#.*$", " ", text, flags=re.M)    # directives
        # A declaration at file scope: ends with ");", and its name is the
        # identifier before its first "(" (function pointers in typedefs
        # and struct fields have "(*" there and are left out).
        for stmt in re.split(r"[;{}]", text):
            m = re.match(r"\s*(?!typedef\b)[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(",
                         stmt)
            if m and not re.search(r"\(\s*\*", stmt.split("(", 1)[0] + "("):
                names.add(m.group(1))
    return names


def exported(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms[parts[2].split("@")[0]] = parts[1]
    return syms


def main():
    nm, lib, headers = sys.argv[1], sys.argv[2], sys.argv[3:]
    want = declared(headers)
    have = exported(nm, lib)
    if len(want) < 10:
        print(f"check_exports: only {len(want)} declarations found in "
              f"{headers}: the header parser is broken")
        return 1
    extra = sorted(set(have) - want)
    missing = sorted(want - set(have))
    not_code = sorted(n for n in want & set(have) if have[n] not in "TW")
    for n in extra:
        print(f"exported but not declared in the public headers: {n}")
    for n in missing:
        print(f"declared in the public headers but not exported: {n}")
    for n in not_code:
        print(f"exported as symbol type {have[n]}, not a function: {n}")
    if extra or missing or not_code:
        return 1
    print(f"check_exports: {len(want)} functions, exported exactly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
