#!/usr/bin/python3
"""End-to-end latency and memory of qopt's INT8 CPU plan against ONNX Runtime.

usage: bench/run_plan_bench.py [-t 1,2] [-n RUNS] [-w WARMUP] [-r ROUNDS] [--no-ort-best]
                               [--qplan] [MODEL.onnx ...]

For each model and thread count, ROUNDS rounds (default 3); each round starts one ONNX Runtime
process (bench/ort_latency.js: onnxruntime-node 1.30, level all, intra-op threads T) and one
qopt-run process (`qopt-run MODEL --plan --threads=T --bench=RUNS`) on the same model file, the
order swapped every round so that neither always runs first. Each process times RUNS runs after
WARMUP untimed ones (qopt-run: one) and reports its median; the result is the median of the
rounds' medians, and the ratio best ORT / qopt of those (> 1: the plan is faster).

Also measured, per process (os.wait4's ru_maxrss: the whole process's peak resident memory):
ORT's (node + onnxruntime-node + the session) and qopt-run's (import, default<cpu>, the plan and
its runs); a node process that only loads onnxruntime-node gives node's own share. With --qplan
the model is first written as a plan file (`qopt -emit=plan`), and qopt-run runs that file, so
its peak is the plan's alone. The plan's build time is qopt-run's "plan build" line (import,
pipeline, plan builder).

ONNX Runtime's best case is measured too (unless --no-ort-best): the model after
`qopt -passes='default<ort>'`; the ratio is against the faster of ORT on the file and on that.

Models: default resnet18_qat, yolo_like_qat and yolo_like_qat_everywhere from
$QOPT_SHARED_DIR/models (default ../shared). Inputs: ImageNet-normalised images for resnet18*,
0..1 images for yolo*, U[-1,1) otherwise (seeded; the two tools draw their own).
onnxruntime-node: $ORT_NODE_DIR, the repository root, or installed into $WORK/ort-node with
`npm install --ignore-scripts onnxruntime-node@1.30.0`.
Env: QOPT_BUILD_DIR (default ./build), WORK (default $QOPT_BUILD_DIR/plan-bench).
Nothing is asserted: this is a measurement; compare ratios from one run, not milliseconds.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("QOPT_BUILD_DIR", os.path.join(ROOT, "build"))
SHARED = os.environ.get("QOPT_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
WORK = os.environ.get("WORK", os.path.join(BUILD, "plan-bench"))
ORT_VERSION = "1.30.0"


def peak_rss_mib(argv, env=None):
    """Runs argv; returns (exit status, stdout, stderr, its peak RSS in MiB).

    The output goes through temporary files (no pipe can fill up), and
    os.wait4 gives the rusage of that one child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err,
                                env=env if env is not None else os.environ)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (proc.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), usage.ru_maxrss / 1024.0)


def find_ort(env):
    probe = ("const p=require('path');console.log(require.resolve("
             "'onnxruntime-node/package.json',{paths:[process.env.ORT_NODE_DIR,"
             "process.cwd()].filter(Boolean)}))")
    for candidate in [env.get("ORT_NODE_DIR"), ROOT, os.path.join(WORK, "ort-node")]:
        if not candidate:
            continue
        r = subprocess.run(["node", "-e", probe], cwd=candidate, capture_output=True, text=True,
                           env=dict(env, ORT_NODE_DIR=candidate))
        if r.returncode == 0:
            return candidate
    target = os.path.join(WORK, "ort-node")
    os.makedirs(target, exist_ok=True)
    print(f"installing onnxruntime-node@{ORT_VERSION} into {target}", flush=True)
    r = subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
                        "--prefix", target, f"onnxruntime-node@{ORT_VERSION}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"run_plan_bench: npm install failed: {r.stderr.strip().splitlines()[-1:]}")
    return target


def dist_of(model):
    base = os.path.basename(model)
    if base.startswith("resnet18"):
        return "imagenet"
    if base.startswith("yolo"):
        return "image"
    return "uniform"


def ort_once(model, threads, args, env):
    argv = ["node", os.path.join(ROOT, "bench", "ort_latency.js"), model,
            "--threads", str(threads), "--runs", str(args.runs), "--warmup", str(args.warmup),
            "--dist", dist_of(model)]
    status, out, err, rss = peak_rss_mib(argv, env)
    if status != 0:
        raise RuntimeError(f"ORT on {model}: {err.strip() or out.strip()}")
    result = json.loads(out.strip().splitlines()[-1])
    return result["median_ms"], rss, result["version"]


PLAN_LINE = re.compile(r"^plan: .* isa (\S+): median ([0-9.]+) ms, min ([0-9.]+) ms", re.M)
BUILD_LINE = re.compile(r"^plan build: (.*); total ([0-9.]+) ms", re.M)
FILE_LINE = re.compile(r"^plan file: read and packed in ([0-9.]+) ms", re.M)


def qopt_once(model, threads, args):
    argv = [os.path.join(BUILD, "bin", "qopt-run"), model, f"--threads={threads}",
            f"--bench={args.runs}", f"--dist={dist_of(model)}"]
    if not model.endswith(".qplan"):
        argv.insert(2, "--plan")
    status, out, err, rss = peak_rss_mib(argv)
    m = PLAN_LINE.search(out)
    if status != 0 or not m:
        raise RuntimeError(f"qopt-run on {model}: {err.strip() or out.strip()}")
    b = BUILD_LINE.search(out)
    f = FILE_LINE.search(out)
    build = ((float(b.group(2)), b.group(1)) if b else
             (float(f.group(1)), "the plan file read and packed") if f else None)
    return float(m.group(2)), rss, m.group(1), build


def write_plan(model):
    os.makedirs(WORK, exist_ok=True)
    target = os.path.join(WORK, os.path.basename(model)[:-len(".onnx")] + ".qplan")
    r = subprocess.run([os.path.join(BUILD, "bin", "qopt"), model, "-passes=default<cpu>",
                        "-emit=plan", "-o", target], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"qopt -emit=plan {model}: {r.stderr.strip()}")
    return target


def ort_best_model(model):
    os.makedirs(WORK, exist_ok=True)
    target = os.path.join(WORK, os.path.basename(model)[:-len(".onnx")] + ".ort.onnx")
    r = subprocess.run([os.path.join(BUILD, "bin", "qopt"), model, "-passes=default<ort>",
                        "-o", target], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"qopt -passes=default<ort> {model}: {r.stderr.strip()}")
    return target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("-t", "--threads", default="1,2")
    parser.add_argument("-n", "--runs", type=int, default=20)
    parser.add_argument("-w", "--warmup", type=int, default=3)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    parser.add_argument("--no-ort-best", action="store_true")
    parser.add_argument("--qplan", action="store_true")
    args = parser.parse_args()
    models = args.models or [os.path.join(SHARED, "models", m + ".onnx") for m in
                             ("resnet18_qat", "yolo_like_qat", "yolo_like_qat_everywhere")]
    threads = [int(t) for t in args.threads.split(",")]
    if not os.access(os.path.join(BUILD, "bin", "qopt-run"), os.X_OK):
        sys.exit(f"run_plan_bench: {BUILD}/bin/qopt-run is missing; build first")

    env = dict(os.environ)
    env["ORT_NODE_DIR"] = find_ort(env)
    _, _, _, node_rss = peak_rss_mib(
        ["node", "-e", "require(require.resolve('onnxruntime-node',"
                       "{paths:[process.env.ORT_NODE_DIR]}))"], env)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), "unknown")
    flags = next((line for line in open("/proc/cpuinfo") if line.startswith("flags")), "")
    isa_flags = [f for f in ("avx2", "avx512_vnni", "avx_vnni", "amx_int8") if f" {f}" in flags]
    print(f"cpu: {cpu} ({os.cpu_count()} cores; {' '.join(isa_flags)}), "
          f"load {open('/proc/loadavg').read().split()[0]}")
    print(f"{args.rounds} rounds x {args.runs} timed runs per process; node alone with "
          f"onnxruntime-node loaded: peak RSS {node_rss:.0f} MiB")
    print(f"{'model':<40} {'T':>2} {'ORT file':>9} {'ORT best':>9} {'qopt ms':>9} "
          f"{'best/qopt':>9} {'ORT MiB':>8} {'qopt MiB':>8}  isa, plan build")
    for model in models:
        ort_models = [model]
        if not args.no_ort_best:
            ort_models.append(ort_best_model(model))
        qopt_model = write_plan(model) if args.qplan else model
        for t in threads:
            ort_ms = [[] for _ in ort_models]
            qopt_ms, ort_rss, qopt_rss = [], [], []
            isa, build, version = "?", None, "?"
            for r in range(args.rounds):
                order = ["qopt"] + list(range(len(ort_models)))
                if r % 2:
                    order.reverse()
                for who in order:
                    if who == "qopt":
                        ms, rss, isa, build = qopt_once(qopt_model, t, args)
                        qopt_ms.append(ms)
                        qopt_rss.append(rss)
                    else:
                        ms, rss, version = ort_once(ort_models[who], t, args, env)
                        ort_ms[who].append(ms)
                        ort_rss.append(rss)
            medians = [statistics.median(m) for m in ort_ms]
            best, q = min(medians), statistics.median(qopt_ms)
            name = os.path.basename(model)[:-len(".onnx")]
            build_text = f", build {build[0]:.0f} ms ({build[1]})" if build else ""
            best_text = f"{medians[1]:>9.2f}" if len(medians) > 1 else f"{'-':>9}"
            print(f"{name:<40} {t:>2} {medians[0]:>9.2f} {best_text} {q:>9.2f} "
                  f"{best / q:>8.2f}x {max(ort_rss):>8.0f} {max(qopt_rss):>8.0f}  "
                  f"{isa}{build_text}", flush=True)
    print(f"ORT = onnxruntime-node {version} on the file (ORT file) and on qopt's "
          f"default<ort> output (ORT best: shown when measured); best/qopt = the faster "
          f"ORT figure / qopt's; qopt = qopt-run "
          f"{'on the plan file' if args.qplan else '--plan on the same .onnx'}")


if __name__ == "__main__":
    main()
