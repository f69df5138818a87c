#!/usr/bin/env python3
"""Every shared model as a user brings it: import, the default pipelines, the plan, accuracy.

Models: DIR/models/*.onnx and DIR/models/zoo/*_qat.onnx (raw pytorch-quantization-style
exports, with fp32 twins NAME_fp32.onnx), and EXTRA/*_qat.onnx for each --extra EXTRA (the
torch.ao exports bench/gen_torchao_models.py writes). For each model:

  import     the .qir has no onnx.QuantizeLinear/DequantizeLinear left (every Q/DQ typed) and
             no tensor with a '?' or '*' dim;
  pipelines  default<trt>, default<ort>, default<cpu>, each explained under its own backend's
             rules (--report JSON): leftovers after <= before and INT8 MACs after >= before;
             after default<trt>, INT8 MACs >= 99% of all MACs (not for a dynamically
             quantized model: TensorRT has no dynamic quantization);
  plan       qopt-run --plan --compare-reference --max-lsb=1 --atol=1e-4 (every step against
             the reference interpreter on the same inputs, then the outputs), without
             --allow-float-plan: the plan must be mostly int8 (dynamically quantized models
             too);
  accuracy   with an fp32 twin: cosine of the first output to the twin's, on the same seeded
             inputs, for the model as given and after each default pipeline; a pipeline may
             lose at most 0.005 against the input model (0.01 for default<trt> on a model
             whose activations are asymmetric: symmetrize-activations halves their resolution);
  ort        with --ort: ONNX Runtime 1.30 runs the input model and every output
             (default<trt>, default<ort>, and default<cpu> lowered to QOperator form by
             lower-qoperator) on the same seeded inputs; with a twin it runs the twin too, and
             the same cosine bounds hold on its outputs.

Prints one table row per model and exits non-zero when a check fails. KNOWN lists the failures
that are open work (each names its issue): they print as XFAIL, and one that no longer fails
prints as XPASS and fails the run, so the list is kept true.
usage: check_zoo.py --qopt Q --qopt-run R --shared DIR --work DIR [--filter REGEX] [--jobs N]
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

PIPELINES = ["trt", "ort", "cpu"]
DYNAMIC_DIM = re.compile(r"tensor<[^>]*[?*]")
SYMMETRIZED = re.compile(r"total symmetrize-activations: [1-9]")
PLAIN_QDQ = re.compile(r"onnx\.(QuantizeLinear|DequantizeLinear)\(")
DYNAMIC_QUANT = re.compile(r"onnx\.DynamicQuantizeLinear\(|\"com\.microsoft\.DynamicQuantizeMatMul\"")
MAX_COSINE_LOSS = 0.005
# default<trt> on asymmetric (torch.ao, ORT quantizer) activations: issue 48's bound.
MAX_COSINE_LOSS_SYMMETRIZED = 0.01
HERE = os.path.dirname(os.path.abspath(__file__))
ORT_REFERENCE = os.path.join(HERE, "..", "ort", "ort_reference.js")

# Open work: (model, check) -> why. Checks: "<pipeline>-leftovers", "<pipeline>-int8".
KNOWN = {
    # (model, check): "issue N: why it fails"
}


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def summary(report_path):
    with open(report_path) as f:
        plans = json.load(f)["plans"]
    return plans[0]["summary"], plans[-1]["summary"]


def int8_share(s):
    return s["int8_macs"] / s["total_macs"] if s["total_macs"] else 1.0


def first_output(npz_path):
    with np.load(npz_path) as z:
        return z[z.files[0]].astype(np.float64).ravel()


def cosine(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    return float(a @ b / (na * nb)) if na and nb else float("nan")


def check_model(args, rel, path, twin, extra, problems):
    name = os.path.basename(path)[: -len(".onnx")]
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    row = {"model": rel}

    # Import.
    r = run([args.qopt, path, "-elide-resource-data"])
    if r.returncode:
        problems.append((rel, "", f"import failed: {r.stderr.strip()}"))
        return row
    row["plain_qdq"] = len(PLAIN_QDQ.findall(r.stdout))
    row["dynamic"] = sum(1 for line in r.stdout.splitlines()
                         if not line.lstrip().startswith("//") and DYNAMIC_DIM.search(line))
    if row["plain_qdq"]:
        problems.append((rel, "", f"{row['plain_qdq']} Q/DQ kept as plain ONNX ops"))
    if row["dynamic"]:
        problems.append((rel, "", f"{row['dynamic']} lines with non-static tensors"))
    dynamic_quant = bool(DYNAMIC_QUANT.search(r.stdout))

    # The default pipelines, each under its own backend's rules.
    outputs = {}
    for p in PIPELINES:
        report = os.path.join(work, f"{p}.json")
        # qopt's fused q.* ops (default<cpu>) have no ONNX form: .qir.
        out = os.path.join(work, f"{p}.qir" if p == "cpu" else f"{p}.onnx")
        r = run([args.qopt, path, f"-passes=default<{p}>", f"--explain={p}",
                 f"--report={report}", "-o", out])
        if r.returncode:
            problems.append((rel, "", f"default<{p}> failed: {r.stderr.strip()}"))
            continue
        outputs[p] = out
        if p == "trt" and SYMMETRIZED.search(r.stderr):
            row["symmetrized"] = True
        before, after = summary(report)
        row[f"{p}_leftovers"] = f"{before['leftovers']}->{after['leftovers']}"
        row[f"{p}_int8"] = f"{100 * int8_share(before):.1f}->{100 * int8_share(after):.1f}"
        if after["leftovers"] > before["leftovers"]:
            problems.append((rel, f"{p}-leftovers",
                             f"default<{p}> leaves more leftovers under its rules "
                             f"({before['leftovers']} -> {after['leftovers']})"))
        if after["int8_macs"] < before["int8_macs"]:
            problems.append((rel, f"{p}-int8", f"default<{p}> lowers the INT8 MACs "
                             f"({before['int8_macs']} -> {after['int8_macs']})"))
        if p == "trt" and before["total_macs"] and int8_share(after) < 0.99 \
                and not dynamic_quant:
            problems.append((rel, "", f"INT8 MACs {100 * int8_share(after):.1f}% < 99% "
                            "after default<trt>"))

    # The plan, step by step against the reference.
    r = run([args.qopt_run, path, "--plan", "--compare-reference", "--max-lsb=1",
             "--atol=1e-4", f"--dist={args.dist}"])
    row["plan"] = "ok" if r.returncode == 0 else "FAIL"
    if r.returncode:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        problems.append((rel, "", f"plan differs from the reference: " + " | ".join(tail)))

    # Accuracy against the fp32 twin.
    if twin:
        ref = os.path.join(work, "fp32.npz")
        r = run([args.qopt_run, twin, f"--dist={args.dist}", "-o", ref])
        if r.returncode:
            problems.append((rel, "", f"fp32 twin failed: {r.stderr.strip()}"))
            return row
        want = first_output(ref)
        cos = {}
        for label, model in [("input", path)] + sorted(outputs.items()):
            npz = os.path.join(work, f"{label}.npz")
            r = run([args.qopt_run, model, f"--dist={args.dist}", "-o", npz])
            if r.returncode:
                problems.append((rel, "", f"{label} run failed: {r.stderr.strip()}"))
                continue
            cos[label] = cosine(first_output(npz), want)
        row["cosine"] = " ".join(f"{k}={v:.5f}" for k, v in cos.items())
        check_cosines(rel, row, cos, "", problems)
    if args.ort:
        check_in_ort(args, rel, row, path, twin, outputs, work, problems)
    return row


def allowed_loss(row, p):
    return MAX_COSINE_LOSS_SYMMETRIZED if p == "trt" and row.get("symmetrized") \
        else MAX_COSINE_LOSS


def check_cosines(rel, row, cos, where, problems):
    for p in PIPELINES:
        loss = allowed_loss(row, p)
        if p in cos and "input" in cos and cos[p] < cos["input"] - loss:
            problems.append((rel, "", f"default<{p}>{where} cosine to fp32 {cos[p]:.5f} < "
                            f"input's {cos['input']:.5f} - {loss}"))


def ort_first_output(args, model, out):
    r = run(["node", ORT_REFERENCE, model, out, "--seed", "1", "--dist", args.dist])
    if r.returncode:
        return None, (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:]
    with open(os.path.join(out, "manifest.json")) as f:
        first = json.load(f)["outputs"][0]["file"]
    return np.load(os.path.join(out, first)).astype(np.float64).ravel(), None


def check_in_ort(args, rel, row, path, twin, outputs, work, problems):
    """ONNX Runtime runs every output (default<cpu>'s in QOperator form); with an fp32 twin,
    its cosines to the twin hold the same bounds."""
    want = None
    if twin:
        want, err = ort_first_output(args, twin, os.path.join(work, "ort-fp32"))
        if err:
            problems.append((rel, "", f"ONNX Runtime cannot run the fp32 twin: {err}"))
            return
    cos = {}
    for label, model in [("input", path)] + sorted(outputs.items()):
        if not model.endswith(".onnx"):
            # default<cpu>'s fused q.* ops reach ONNX through lower-qoperator.
            lowered = os.path.join(work, f"{label}-qoperator.onnx")
            r = run([args.qopt, model, "-passes=lower-qoperator", "-o", lowered])
            if r.returncode:
                problems.append((rel, "", f"lower-qoperator on default<{label}>'s "
                                 f"output failed: {r.stderr.strip()}"))
                continue
            model = lowered
        got, err = ort_first_output(args, model, os.path.join(work, f"ort-{label}"))
        if err:
            problems.append((rel, "", f"ONNX Runtime cannot run the {label} model: {err}"))
            continue
        cos[label] = cosine(got, want) if want is not None else float("nan")
    if want is None:
        row["ort_cosine"] = "runs: " + " ".join(cos)
        return
    row["ort_cosine"] = " ".join(f"{k}={v:.5f}" for k, v in cos.items())
    check_cosines(rel, row, cos, " in ONNX Runtime", problems)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qopt", required=True)
    ap.add_argument("--qopt-run", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--filter", help="only models whose relative path matches this regex")
    ap.add_argument("--dist", default="imagenet")
    ap.add_argument("--extra", action="append", default=[],
                    help="a directory of more NAME_qat.onnx models with NAME_fp32.onnx twins")
    ap.add_argument("--ort", action="store_true",
                    help="also run every model's outputs in ONNX Runtime 1.30 "
                         "(node, onnxruntime-node)")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                    help="models checked at once (default: one per CPU)")
    args = ap.parse_args()

    models = []
    mdir = os.path.join(args.shared, "models")
    for sub in ["", "zoo"]:
        d = os.path.join(mdir, sub)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if not f.endswith(".onnx") or f.endswith("_fp32.onnx"):
                continue
            rel = os.path.join("models", sub, f) if sub else os.path.join("models", f)
            twin = os.path.join(d, f.replace("_qat.onnx", "_fp32.onnx"))
            models.append((rel, os.path.join(d, f),
                           twin if f.endswith("_qat.onnx") and os.path.exists(twin) else None,
                           False))
    for d in args.extra:
        for f in sorted(os.listdir(d)):
            if f.endswith("_qat.onnx"):
                twin = os.path.join(d, f.replace("_qat.onnx", "_fp32.onnx"))
                models.append((os.path.join(os.path.basename(d.rstrip("/")), f),
                               os.path.join(d, f), twin if os.path.exists(twin) else None,
                               True))
    if args.filter:
        models = [m for m in models if re.search(args.filter, m[0])]
    if not models:
        sys.exit(f"check_zoo: no models under {mdir}")

    problems = []
    cols = ["model", "plain_qdq", "dynamic"] + [f"{p}_{k}" for p in PIPELINES
                                               for k in ("leftovers", "int8")] + ["plan", "cosine"] + (
                                                   ["ort_cosine"] if args.ort else [])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    start = time.time()
    def check_one(model):
        mine = []
        return check_model(args, *model, mine), mine

    # Models in parallel (each check is a subprocess), printed in order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for row, mine in pool.map(check_one, models):
            problems += mine
            print("| " + " | ".join(str(row.get(c, "")) for c in cols) + " |", flush=True)
    failed = 0
    seen = set()
    for rel, check, text in problems:
        if (rel, check) in KNOWN:
            seen.add((rel, check))
            print(f"XFAIL {rel}: {text} ({KNOWN[(rel, check)]})")
        else:
            failed += 1
            print(f"FAIL {rel}: {text}")
    checked = {m[0] for m in models}
    for rel, check in sorted(set(KNOWN) - seen):
        if rel in checked:
            failed += 1
            print(f"XPASS {rel}: {check} holds now; remove it from KNOWN")
    print(f"check-zoo: {len(models)} models, {failed} failed, {len(seen)} known, "
          f"{time.time() - start:.0f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
