#!/usr/bin/python3
"""Rewrites the text plan at the end of each ../<pass>.test.

Each test runs one plan pass alone on the plan as it comes to that pass:
the plan of its source model here, lowered and run through the passes
before it, printed by qopt's -print-plan-after. Everything in a test above
the marker line is kept; everything after it is replaced.

usage: regenerate.py <build-dir>
"""
import pathlib
import subprocess
import sys

MARKER = "# ---- the plan before the pass (Inputs/regenerate.py writes it) ----\n"
# pass -> source model in this folder
TESTS = {
    "fuse-table-chains": "chain.qir",
    "fuse-tables-into-convs": "conv-table.qir",
    "fuse-relu-into-float-arithmetic": "add-relu.qir",
    "fuse-quantize-into-copies": "concat-quantize.qir",
    "forward-copied-channels": "split-concat.qir",
    "place-reformats-in-concats": "head-concat.qir",
    "assign-arena": "chain.qir",
}


def main():
    build = pathlib.Path(sys.argv[1])
    here = pathlib.Path(__file__).resolve().parent
    order = subprocess.run([str(build / "bin/qopt"), "-print-plan-passes"],
                           check=True, capture_output=True, text=True).stdout
    passes = [line.split()[0] for line in order.splitlines()[1:]]
    for name, source in TESTS.items():
        before = "lower" if passes.index(name) == 0 else passes[passes.index(name) - 1]
        run = subprocess.run(
            [str(build / "bin/qopt"), str(here / source), "-emit=plan-text",
             "-disable-output", "-print-plan-after=" + before],
            capture_output=True, text=True)
        # -disable-output stops before the plan: build it, print nothing.
        if "*** Plan after" not in run.stderr:
            run = subprocess.run(
                [str(build / "bin/qopt"), str(here / source), "-emit=plan-text",
                 "-o", "/dev/null", "-print-plan-after=" + before],
                check=True, capture_output=True, text=True)
        plan = run.stderr.split("*** Plan after " + before + " ***\n", 1)[1]
        test = here.parent / (name + ".test")
        head = test.read_text().split(MARKER, 1)[0] if test.exists() else ""
        test.write_text(head + MARKER + plan)
        print("wrote", test)


if __name__ == "__main__":
    main()
