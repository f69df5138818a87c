#!/usr/bin/python3
"""Checks that each library includes only what docs/layout.md allows.

Every `#include "..."` in lib/<Library>/, plugins/ and tools/ is matched
against the table below: a public header `qopt/<Library>/...` of a library
the including one may depend on, or a private header of its own folder
(a plain name, or a path inside the folder). No file outside unittests/
includes anything from unittests/, and only lib/Onnx includes onnx or
protobuf headers. The libraries with a namespace of their own (qopt::kernels,
qopt::interp, qopt::plan) are the only ones to open it. Prints each violation with its file and line; exits 1
if there is any.

usage: test/layout/check_layout.py [repository root]
"""
import re
import sys
from pathlib import Path

# Library folder -> the qopt/<X>/ headers it may include (its own included).
ALLOWED = {
    "Support": {"Support"},
    "IR": {"IR", "Support"},
    "Onnx": {"Onnx", "IR", "Support"},
    "Passes": {"Passes", "IR", "Support"},
    "Fusion": {"Fusion", "Passes", "IR", "Support"},
    "Kernels": {"Kernels"},
    "Interpreter": {"Interpreter", "Kernels", "IR", "Support"},
    "Plan": {"Plan", "Interpreter", "Kernels", "IR", "Support"},
    "CodeGen": {"CodeGen", "Plan", "Interpreter", "Kernels", "IR", "Support"},
}
# Other folders: what they may include.
OTHERS = {
    "plugins": {"Passes", "Fusion", "IR", "Support"},
    "tools": set(ALLOWED) | {"ToolSupport"},
    "python": set(ALLOWED) | {"ToolSupport"},
    "fuzz": set(ALLOWED) | {"ToolSupport"},
}
EXTERNAL = re.compile(r"^(onnx|google)/")
STRING_ERROR = re.compile(r"\bcreateStringError\b|\bmake_error<\s*(llvm::)?StringError\b")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
# Libraries with a namespace of their own (qopt::<name>): only their files
# open it, and nothing opens the shared `rt` namespace they replaced.
NAMESPACES = {"Kernels": "kernels", "Interpreter": "interp", "Plan": "plan"}
OPENS_NAMESPACE = re.compile(r"^\s*namespace\s+(?:qopt::)?(\w+)\s*\{")


def check(root):
    problems = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".cpp", ".h", ".def") or not path.is_file():
            continue
        rel = path.relative_to(root)
        top = rel.parts[0]
        if top not in ("lib", "include", "plugins", "tools", "python", "fuzz"):
            continue
        if top == "lib":
            owner = rel.parts[1]
            allowed = ALLOWED.get(owner)
            if allowed is None:
                problems.append(f"{rel}: lib/{owner} is not in the layout table")
                continue
        elif top == "include":
            owner = rel.parts[2] if len(rel.parts) > 3 else None
            allowed = ALLOWED.get(owner, set())
        else:
            owner, allowed = top, OTHERS[top]
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            # One diagnostic type (qopt/Support/Error.h): errors are made
            # through it, except in lib/Kernels, which includes nothing.
            if (STRING_ERROR.search(line) and not line.lstrip().startswith("//")
                    and owner != "Kernels"):
                problems.append(f"{rel}:{number}: makes an error without qopt/Support/Error.h "
                                "(makeError, makeSystemError)")
            opened = OPENS_NAMESPACE.match(line)
            if opened and opened.group(1) == "rt":
                problems.append(f"{rel}:{number}: opens namespace rt (each library has its own)")
            elif (opened and opened.group(1) in NAMESPACES.values()
                    and NAMESPACES.get(owner) != opened.group(1)):
                problems.append(f"{rel}:{number}: opens namespace {opened.group(1)}, "
                                f"which belongs to another library")
            m = INCLUDE.match(line)
            if not m:
                continue
            quoted, name = m.group(1) == '"', m.group(2)
            where = f"{rel}:{number}"
            if "unittests" in name:
                problems.append(f"{where}: includes from unittests/: {name}")
            if EXTERNAL.match(name) and owner != "Onnx":
                problems.append(f"{where}: only lib/Onnx includes onnx/protobuf: {name}")
            if not quoted:
                continue
            if name.startswith("qopt/"):
                library = name.split("/")[1]
                if library not in allowed:
                    problems.append(f"{where}: {owner} may not include {name}")
            elif name.startswith("../") and top in ("lib", "include"):
                problems.append(f"{where}: reaches out of its folder: {name}")
    return problems


DOC_ROW = re.compile(r"^\| `Qopt\w+` \(([^)]*)\) \|.*\| ([^|]*) \|\s*$")


def check_doc_table(root):
    """docs/layout.md's "may include" column says what ALLOWED says."""
    doc = root / "docs" / "layout.md"
    if not doc.is_file():
        return []
    problems, seen = [], set()
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        m = DOC_ROW.match(line)
        if not m:
            continue
        folders = re.findall(r"`(\w+)`", m.group(1))
        says = {w.strip() for w in m.group(2).split(",")}
        # A library of several folders (QoptIR: IR, Support) lists them all.
        allowed = set().union(*(ALLOWED.get(f, set()) for f in folders))
        seen.update(folders)
        if says != allowed:
            problems.append(f"docs/layout.md:{number}: says {', '.join(folders)} may include "
                            f"{', '.join(sorted(says))}; the check allows "
                            f"{', '.join(sorted(allowed))}")
    for folder in sorted(set(ALLOWED) - seen):
        problems.append(f"docs/layout.md: no row for lib/{folder}")
    return problems


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = check(root) + check_doc_table(root)
    for p in problems:
        print(p)
    print(f"layout: {len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
