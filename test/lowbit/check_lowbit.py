#!/usr/bin/python3
"""Checks qopt end to end on the low-bit models of bench/gen_lowbit_models.py
and bench/gen_lowbit_networks.py (FP8, INT4 and FP4 weight-only, mixed
INT8/FP8, float16 activations): for every NAME_qdq.onnx in --models,

 1. round trip: `qopt M -o out.onnx` writes the same nodes (op types, inputs,
    outputs, attributes) and initializers (type, dims, raw bytes);
 2. explain under trt:8.6 and trt:10: the summary's MACs by precision.
    TensorRT 8.6 has no FP8, INT4 or FP4: no such MACs there; under 10 every
    FP8 model has FP8 MACs, every INT4 one INT4 weight-only MACs and every
    FP4 (NVFP4) one FP4 weight-only MACs (10 is the newest 10.x; FP4 came in
    10.8);
 3. the plan, built without -allow-float-plan, matches the reference step by
    step (1 LSB, 1e-4 of each tensor's largest magnitude); FLOAT4E2M1 ones
    with it (no FP4 kernel: the weight folds to f32 and a float step runs);
 4. with the fp32 twin beside it, the interpreter's cosine against it.

Prints one row a model (the table of the closing note); exits 1 on a failure.
ONNX Runtime's side (interpreter against ORT, op by op) is
test/ort/compare_with_ort.py on the same folder.

usage: check_lowbit.py --qopt Q --qopt-run R --models DIR --work DIR [--filter REGEX]
"""
import argparse
import os
import re
import subprocess
import sys

import onnx


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def graph_signature(path):
    g = onnx.load(path).graph
    nodes = [(n.op_type, n.domain, list(n.input), list(n.output),
              sorted(a.SerializeToString() for a in n.attribute)) for n in g.node]
    inits = {t.name: (t.data_type, list(t.dims), t.raw_data) for t in g.initializer}
    return nodes, inits


def macs_by_precision(summary):
    """{'INT8': pct, 'FP8': pct, 'INT4 weight-only': pct, 'FP4 weight-only':
    pct, 'total': MACs} from a summary line ('INT8 MACs 0.0% (0 MAC of 1.5
    MMAC), FP8 MACs ...')."""
    found = {"INT8": 0.0, "FP8": 0.0, "INT4 weight-only": 0.0, "FP4 weight-only": 0.0}
    total = re.search(r"of ([0-9.]+) ([KMG]?)MAC\)", summary)
    found["total"] = (float(total.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[total.group(2)]
                      if total else 0.0)
    for kind in found:
        m = re.search(re.escape(kind) + r" MACs ([0-9.]+)%", summary)
        if m:
            found[kind] = float(m.group(1))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qopt", required=True)
    ap.add_argument("--qopt-run", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--filter", default="", help="only models whose file name matches this regex")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    models = sorted(f for f in os.listdir(args.models)
                    if f.endswith("_qdq.onnx") and re.search(args.filter, f))
    if not models:
        sys.exit(f"check_lowbit: no *_qdq.onnx in {args.models}")
    failures = 0
    print("| model | round trip | trt:8.6 INT8/FP8/INT4wo/FP4wo % | trt:10 INT8/FP8/INT4wo/FP4wo % "
          "| plan vs reference | cosine vs fp32 twin |")
    print("|---|---|---|---|---|---|")
    for m in models:
        path = os.path.join(args.models, m)
        problems = []
        out = os.path.join(args.work, m)
        r = run([args.qopt, path, "-o", out])
        same = r.returncode == 0 and graph_signature(path) == graph_signature(out)
        if not same:
            problems.append("round trip: " + (r.stderr.strip() or "the graph changed"))
        split = {}
        for backend in ("trt:8.6", "trt:10"):
            r = run([args.qopt, path, f"--explain={backend}"])
            line = next((l for l in r.stdout.splitlines() if l.startswith("summary:")), "")
            if r.returncode != 0 or not line:
                problems.append(f"explain {backend}: {r.stderr.strip()}")
            split[backend] = macs_by_precision(line)
        fp8 = m.startswith(("fp8", "mixed"))
        int4 = m.startswith("int4")
        fp4 = m.startswith(("fp4", "nvfp4"))
        old, new = split.get("trt:8.6", {}), split.get("trt:10", {})
        if old.get("FP8") or old.get("INT4 weight-only") or old.get("FP4 weight-only"):
            problems.append("trt:8.6 counts FP8, INT4 or FP4 MACs")
        if fp8 and new.get("total") and not new.get("FP8"):
            problems.append("trt:10 counts no FP8 MACs")
        if int4 and new.get("total") and not new.get("INT4 weight-only"):
            problems.append("trt:10 counts no INT4 weight-only MACs")
        if fp4 and new.get("total") and not new.get("FP4 weight-only"):
            problems.append("trt:10 counts no FP4 weight-only MACs")
        r = run([args.qopt_run, path, "--plan", "--compare-reference", "--max-lsb=1",
                 "--atol=1e-4"] + (["--allow-float-plan"] if m.startswith(("fp4", "nvfp4")) else []))
        step = next((l for l in r.stdout.splitlines() if "step by step" in l), "")
        plan_ok = r.returncode == 0
        if not plan_ok:
            problems.append("plan: " + (step or r.stderr.strip()))
        worst = re.search(r"max diff ([0-9.e+-]+) of", step)
        twin = path.replace("_qdq.onnx", "_fp32.onnx")
        cosine = "-"
        if os.path.exists(twin):
            r = run([args.qopt_run, path, f"--compare={twin}"])
            values = [float(c) for c in re.findall(r"cosine=([0-9.]+)", r.stdout)]
            values += [1.0 for _ in re.findall(r": identical \(", r.stdout)]
            cosine = f"{min(values):.5f}" if values else "?"

        def fmt(d):
            return "/".join(f"{d.get(k, 0):g}" for k in ("INT8", "FP8", "INT4 weight-only",
                                                          "FP4 weight-only"))
        print(f"| {m} | {'same' if same else 'DIFFERS'} | {fmt(old)} | {fmt(new)} | "
              f"{'ok' if plan_ok else 'FAIL'} (max {worst.group(1) if worst else '?'}) | {cosine} |")
        for p in problems:
            print(f"  FAIL {m}: {p}")
        failures += bool(problems)
    print(f"check-lowbit: {len(models)} models, {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
