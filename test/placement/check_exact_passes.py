#!/usr/bin/python3
"""Exact placement passes must leave model outputs bit-identical.

usage: /usr/bin/python3 test/placement/check_exact_passes.py --qopt build/bin/qopt
           --qopt-run build/bin/qopt-run --shared DIR --work DIR
           [--filter REGEX] [--only P,...] [--through-pipelines] [--no-ort] [--ort-skip REGEX]
           [--timeout S] [--jobs N]

What is checked ("P" below):
  * every pass whose `qopt -print-passes` description contains "(exact)", alone;
  * every exact pipeline listed there, as default<NAME>: those named *-exact (default<trt-exact>,
    default<ort-exact> once they exist) and any whose description says "exact" and not "lossy"
    (today only default<cleanup>).
  Nothing is hard-coded: new exact passes and pipelines are picked up as they are registered.
  --through-pipelines checks a pass alone only when no exact pipeline runs it (the sanitizer run's
  budget: each pass is still run on every model, inside its pipeline).
  Passes whose result only qopt-run executes (description "(exact in qopt-run", e.g. fuse<trt|ort|cpu>,
  whose q.* ops have no ONNX form) get check (a) alone, once per parameter value.
Models ("M"): every DIR/models/*.onnx and every [POS...] row of DIR/peer-cases/README.md.
  A model that qopt cannot load and export cleanly (`qopt M -o before.onnx` fails) is SKIPPED and
  named in the output: that is the round-trip test's business, not this one's.
For every (M, P):
  (a) `qopt-run M --compare-passes=P --seed 1 --dist D` exits 0 and prints "identical" for every
      output (the reference interpreter before and after P; exit 0 alone is not enough, as it also
      allows -0 vs +0). One qopt-run call takes every P of the model (the model runs once, each
      distinct result once); if that call fails as a whole, each P is run alone;
  (b) `qopt M -o before.onnx` and `qopt M -passes=P -o after.onnx` run in ONNX Runtime 1.30
      (graph optimizations disabled, 1 thread) on the same seeded inputs give bit-identical outputs
      (raw bytes, types, dims) -- one node process per model (ort_run.js compare) for all P.
      If ORT cannot load or run before.onnx itself, (b) is skipped for that model, with ORT's reason.
  D: imagenet for resnet18*, image (0..1) for yolo*, uniform [-1,1) otherwise; symbolic dims are 1
  except MODEL_DIMS in qopt_passes.py. --ort-skip REGEX skips (b) for "MODEL:P" strings it matches
  (to bound CI time if ever needed; nothing is skipped by default).
Output: one line per (M, P): PASS / FAIL / SKIP, then a summary line. Exit 1 on any FAIL (each
  failing line names the model and the pass), 2 on harness errors, else 0.
Models run --jobs at a time (default: one per CPU), printed in order.
Cost: the reference interpreter dominates (ResNet-18 about 2.5 s a run on a 2.5 GHz Xeon). With one
  qopt-run call per pass, 48 models x 18 checks took 458 s there; one call per model runs each
  distinct graph once. ONNX Runtime costs 1.7 s for resnet18_qat's before + 6 afters, so (b) is
  never skipped.
onnxruntime-node: $ORT_NODE_DIR, or the repository root's node_modules
  (npm install --ignore-scripts onnxruntime-node@1.30.0).
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qopt_passes  # noqa: E402

ORT_RUN = os.path.join(HERE, "ort_run.js")


def run(cmd, timeout):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"timeout after {timeout}s")


def first_line(s):
    s = s.strip()
    return s.splitlines()[0] if s else ""


def safe(p):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", p)


def interp_checks(args, path, ps, dist, dims):
    """{P: (ok, detail)} for one qopt-run call with every P as --compare-passes: the model runs
    on the reference interpreter once, and each distinct result of a P once. When that call
    fails as a whole (a pass that errors), each P is run alone so that the failure names it."""
    cmd = [args.qopt_run, path, "--seed=1", f"--dist={dist}"] + [f"--compare-passes={p}" for p in ps]
    cmd += [f"--dim={d}" for d in dims]
    r = run(cmd, args.timeout * len(ps))
    lines = [l for l in r.stdout.strip().splitlines() if l.strip()]
    if len(ps) > 1 and r.returncode != 0 and not lines:
        return {p: interp_checks(args, path, [p], dist, dims)[p] for p in ps}
    # The exit status covers every P at once: each P is judged by its own lines, all there.
    by_p = {}
    for p in ps:
        prefix = f"[{p}] " if len(ps) > 1 else ""
        by_p[p] = [l[len(prefix):] for l in lines if l.startswith(prefix)]
    outputs = max(len(mine) for mine in by_p.values())
    results = {}
    for p, mine in by_p.items():
        if mine and len(mine) == outputs and all(": identical (" in l for l in mine):
            results[p] = (True, f"{len(mine)} output(s) identical")
        elif not mine:
            results[p] = (False, "qopt-run error: " + (first_line(r.stderr) or f"exit {r.returncode}"))
        else:
            bad = [l for l in mine if ": identical (" not in l]
            results[p] = (False, "; ".join(bad[:3]) or f"{len(mine)} of {outputs} outputs compared")
    return results


def check_model(args, rel, checks, runtime_only):
    """Every check on one model: (lines to print, {verdict: count}, failures, skipped model or None)."""
    path = os.path.join(args.shared, rel)
    name = rel.split("/", 1)[1] if rel.startswith("models/") else rel
    work = os.path.join(args.work, safe(rel[:-5]))
    os.makedirs(work, exist_ok=True)
    dist = qopt_passes.dist_for(rel)
    dims = qopt_passes.MODEL_DIMS.get(rel, [])
    out = []
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    failures = []
    t0 = time.time()
    before = os.path.join(work, "before.onnx")
    r = run([args.qopt, path, "-o", before], args.timeout)
    if r.returncode != 0:
        msg = first_line(r.stderr) or f"exit {r.returncode}"
        out.append(f"SKIP {name}: qopt cannot load/export it cleanly: {msg}")
        counts["SKIP"] += len(checks)
        return out, counts, failures, name
    results = {}  # P -> [ok, [details]]
    afters = {}
    exported = []
    for p in checks:
        if p in runtime_only:
            results[p] = [True, [None, "ort: n/a (q.* ops)"]]
            exported.append(p)
            continue
        after = os.path.join(work, f"after.{safe(p)}.onnx")
        r = run([args.qopt, path, f"-passes={p}", "-o", after], args.timeout)
        if r.returncode != 0:
            results[p] = [False, [f"qopt -passes failed: {first_line(r.stderr)}"]]
            continue
        results[p] = [True, [None]]
        exported.append(p)
        if not (args.no_ort or (args.ort_skip and re.search(args.ort_skip, f"{name}:{p}"))):
            afters[after] = p
        else:
            results[p][1].append("ort: skipped")
    for p, (ok, detail) in interp_checks(args, path, exported, dist, dims).items():
        results[p][0] = results[p][0] and ok
        results[p][1][0] = f"interp: {detail}"
    ort_note = ""
    if afters:
        cmd = [args.node, ORT_RUN, "compare", before] + list(afters) + ["--seed", "1", "--dist", dist]
        for d in dims:
            cmd += ["--dim", d]
        r = run(cmd, args.timeout)
        seen = set()
        for line in r.stdout.splitlines():
            try:
                j = json.loads(line)
            except ValueError:
                continue
            if j["status"] == "ref-rejected":
                ort_note = f"ORT cannot run before.onnx: {j['detail'][:160]}"
                break
            p = afters.get(j["file"])
            if p is None:
                continue
            seen.add(p)
            if j["status"] == "identical":
                results[p][1].append("ort: identical")
            else:
                results[p][0] = False
                results[p][1].append(f"ort: {j['status']}: {j['detail'][:300]}")
        for p in afters.values():
            if p not in seen and not ort_note:
                results[p][0] = False
                results[p][1].append(f"ort: no result ({first_line(r.stderr) or 'exit %d' % r.returncode})")
    for p in checks:
        ok, details = results[p]
        if ort_note and ok and p in afters.values():
            details.append("ort: skipped (" + ort_note + ")")
        verdict = "PASS" if ok else "FAIL"
        counts[verdict] += 1
        out.append(f"{verdict} {name} [{p}]: {'; '.join(d for d in details if d)}")
        if not ok:
            failures.append(f"{name} [{p}]")
    out.append(f"     {name}: {len(checks)} check(s), dist {dist}, {time.time() - t0:.1f}s")
    return out, counts, failures, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qopt", required=True)
    ap.add_argument("--qopt-run", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--node", default="node")
    ap.add_argument("--filter", help="only models whose relative path matches this regex")
    ap.add_argument("--only", help="comma-separated passes / default<pipeline>s instead of the discovered ones")
    ap.add_argument("--through-pipelines", action="store_true",
                    help="check a pass alone only if no exact pipeline runs it")
    ap.add_argument("--no-ort", action="store_true", help="skip check (b)")
    ap.add_argument("--ort-skip", help="skip check (b) for MODEL:P strings matching this regex")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                    help="models checked at once (default: one per CPU)")
    args = ap.parse_args()

    try:
        info = qopt_passes.print_passes(args.qopt)
    except Exception as e:  # noqa: BLE001
        print(f"check-exact-passes: cannot run {args.qopt} -print-passes: {e}")
        return 2
    passes = qopt_passes.exact_passes(info)
    pipelines = qopt_passes.exact_pipelines(info)
    # Passes whose result only qopt-run executes (q.* fused ops): interpreter check alone.
    runtime_only = set(qopt_passes.runtime_exact_passes(info))
    if args.through_pipelines:
        in_pipeline = {p.strip().partition("<")[0] for n in pipelines
                       for p in info["pipelines"][n][1].split(",")}
        passes = [p for p in passes if p not in in_pipeline]
    checks = passes + [f"default<{n}>" for n in pipelines] + sorted(runtime_only)
    if args.only:
        checks = [c.strip() for c in args.only.split(",") if c.strip()]
    if not checks:
        print("check-exact-passes: no exact pass or pipeline registered")
        return 2
    print(f"exact passes: {', '.join(passes) or '-'}")
    print(f"exact pipelines: {', '.join(f'default<{n}>' for n in pipelines) or '-'}"
          f"{'' if any(n.endswith('-exact') for n in pipelines) else '  (no default<trt-exact>/default<ort-exact> yet)'}")
    print(f"exact in qopt-run only (no ONNX form; interpreter check): {', '.join(sorted(runtime_only)) or '-'}")
    print(f"checking: {', '.join(checks)}")

    models = qopt_passes.shared_models(args.shared)
    if args.filter:
        models = [(m, t) for m, t in models if re.search(args.filter, m)]
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    failures = []
    skipped_models = []
    t_start = time.time()
    # Models in parallel (each qopt and qopt-run call is one thread), printed in order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(check_model, args, rel, checks, runtime_only) for rel, _ in models]
        for future in futures:
            out, model_counts, model_failures, skipped = future.result()
            print("\n".join(out), flush=True)
            for k, v in model_counts.items():
                counts[k] += v
            failures += model_failures
            if skipped:
                skipped_models.append(skipped)
    total = time.time() - t_start
    print(f"check-exact-passes: {len(models)} models x {len(checks)} passes/pipelines: "
          f"{counts['PASS']} pass, {counts['FAIL']} fail, {counts['SKIP']} skipped "
          f"({len(skipped_models)} model(s) qopt cannot load: {', '.join(skipped_models) or 'none'}); {total:.0f}s")
    for f in failures:
        print(f"  NOT EXACT: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
