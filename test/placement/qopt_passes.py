"""Shared helpers for the placement checks: what `qopt -print-passes` offers, and the models.

`qopt -print-passes` prints sections; the two read here are
    Passes:
      <name> - <description> [<plugin>]
    Pipelines (use as default<name>):
      <name> - <description> [<plugin>] = <pass list>
A pass is exact when its description contains "(exact)"; lossy ones say "(lossy, reported)".
A pass whose result only qopt-run executes (q.* fused ops, no ONNX form) says "(exact in qopt-run";
it is checked with the reference interpreter alone, once per value of its parameter list
("fuse<trt|ort|cpu>" -> fuse<trt>, fuse<ort>, fuse<cpu>).
"""
import os
import re
import subprocess

LINE_RE = re.compile(r"^  (\S+) - (.*?)(?: \[([^\]]*)\])?(?: = (.*))?$")
ROW_RE = re.compile(r"^\|\s*`([^`]+\.onnx)`\s*\|")
TAG_RE = re.compile(r"^\s*((?:\[[^\]]*\])+)")

# Input distribution per model-name prefix (shared/models/README.md: ResNet wants ImageNet-normalised
# images, YOLO 0..1 image-like values); everything else gets uniform [-1, 1).
DIST = {"resnet18": "imagenet", "yolo": "image"}

# Extra symbolic-dim values, per model path relative to the shared folder (default: every symbolic
# or -1 dim is 1). The tract TDNN has a width-3 kernel over an unnamed time dim: 1 step is too short.
MODEL_DIMS = {
    "peer-cases/tract/onnx/test_cases/qtdnn_10x5_101_i32_biases/model.onnx": ["?=10"],
}


def print_passes(qopt):
    """{'passes': {name: desc}, 'pipelines': {name: (desc, text)}} from `qopt -print-passes`."""
    out = subprocess.run([qopt, "-print-passes"], capture_output=True, text=True, check=True).stdout
    res = {"passes": {}, "pipelines": {}, "params": {}}
    section = None
    for line in out.splitlines():
        if not line.startswith(" "):
            section = ("passes" if line.startswith("Passes") else
                       "pipelines" if line.startswith("Pipelines (") else None)
            continue
        m = LINE_RE.match(line)
        if not m or section is None:
            continue
        name, desc, _plugin, text = m.groups()
        if section == "passes":
            # "name<param;...>" lists the pass's parameters: the pass is run
            # with their defaults (its lossy options off).
            base, _, params = name.partition("<")
            res["passes"][base] = desc
            res["params"][base] = params.rstrip(">")
        else:
            res["pipelines"][name] = (desc, text or "")
    return res


def exact_passes(info):
    return sorted(n for n, d in info["passes"].items() if "(exact)" in d)


def runtime_exact_passes(info):
    """Exact passes whose result runs only in qopt-run, one entry per backend value."""
    sel = []
    for n, d in sorted(info["passes"].items()):
        if "(exact in qopt-run" not in d:
            continue
        params = info["params"].get(n, "")
        values = params.split("|") if params and ";" not in params and "=" not in params else [""]
        sel += [f"{n}<{v}>" if v else n for v in values]
    return sel


def exact_pipelines(info):
    """Pipelines that must be exact: those named *-exact (default<trt-exact>, default<ort-exact>),
    plus any whose own description says it is exact and not lossy (today: default<cleanup>,
    "exact cleanup")."""
    sel = []
    for name, (desc, _text) in sorted(info["pipelines"].items()):
        d = desc.lower()
        if name.endswith("-exact") or (re.search(r"\bexact\b", d) and "lossy" not in d):
            sel.append(name)
    return sel


def dist_for(name):
    base = os.path.basename(name)
    return next((d for k, d in DIST.items() if base.startswith(k)), "uniform")


def shared_models(shared):
    """[(relpath, tag)]: every models/*.onnx, then every [POS...] row of peer-cases/README.md."""
    rows = []
    mdir = os.path.join(shared, "models")
    for f in sorted(os.listdir(mdir)):
        if f.endswith(".onnx"):
            rows.append(("models/" + f, "[models]"))
    with open(os.path.join(shared, "peer-cases", "README.md"), encoding="utf-8") as fh:
        for line in fh:
            m = ROW_RE.match(line)
            if not m:
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            t = TAG_RE.match(cells[-1])
            # [POS], [POS][GOLD], [POS/edge], [POS/mixed]: graphs qopt should optimize.
            if t and t.group(1).startswith("[POS"):
                rows.append(("peer-cases/" + m.group(1), t.group(1)))
    return rows
