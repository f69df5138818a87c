#!/usr/bin/python3
"""The text plan round-trips: for each model given, its plan as text and as
a .qplan file read back (through the one plan pass that does not change a
finished plan, assign-arena) print the same text, and the text plan runs
to the same output bytes as the file. Prints one line per model."""
import subprocess
import sys
import pathlib

bin_dir, work = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
work.mkdir(parents=True, exist_ok=True)
failed = 0
for model in sys.argv[3:]:
    name = pathlib.Path(model).stem
    text, binary = work / (name + ".plan"), work / (name + ".qplan")

    def run(*args, **kw):
        return subprocess.run([str(a) for a in args], check=True,
                              capture_output=True, **kw).stdout
    for path, kind in ((text, "plan-text"), (binary, "plan")):
        run(bin_dir / "qopt", model, "-passes=default<cpu>", "-emit=" + kind,
            "-o", path)
    again = run(bin_dir / "qopt-run", text, "--run-plan-pass=assign-arena")
    from_file = run(bin_dir / "qopt-run", binary, "--run-plan-pass=assign-arena")
    outputs = []
    for path in (text, binary):
        out = work / (path.name + ".npz")
        run(bin_dir / "qopt-run", path, "--seed=7", "-o", out)
        outputs.append(out.read_bytes())
    same = again == text.read_bytes() and from_file == again and \
        outputs[0] == outputs[1]
    failed += not same
    print(("ROUND-TRIP " if same else "DIFFERS ") + name)
sys.exit(1 if failed else 0)
