#!/usr/bin/env python3
"""Round-trip conformance harness for qopt (ONNX -> IR -> .qir text / ONNX).

usage: /usr/bin/python3 run_roundtrip.py --qopt PATH --shared DIR --work TMPDIR
           [--node node] [--timeout 120] [--reject-list FILE] [--filter REGEX] [--jobs N]

Models: every DIR/models/*.onnx and DIR/models/zoo/*.onnx, plus every .onnx file listed in the tables of
DIR/peer-cases/README.md together with its tag (first bracketed words of the last column).

must-reject (tag exactly [NEG], [NEG invalid] or [NEG/edge], or moved there by an override):
    `qopt M -o W/r.onnx` exits 1, prints exactly one stderr line starting "qopt: error: ",
    and creates no W/r.onnx.
must-import (everything else):
    a. `qopt M -o x.qir` exits 0; `qopt x.qir` prints x.qir byte for byte (print-parse-print
       fixpoint); `qopt -` prints the same with x.qir, and with M itself (unless M has external
       data), on stdin.
    b. `qopt x.qir -o x.onnx` and `qopt M -o y.onnx` exit 0 and create their files.
    c. if onnx.checker accepts the original, it must accept x.onnx (and y.onnx).
    d. `node ort_compare.js M x.onnx --seed 1` must exit 0 (bit-identical outputs) -> ort-identical.
       If it exits 3 (ONNX Runtime cannot load/run the ORIGINAL), the graphs are compared
       structurally with onnx python instead -> graph-identical.  y.onnx gets the same check when
       its bytes differ from x.onnx.

Exit status: 0 if every model passed, 1 if any failed, 2 on harness/usage errors.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.external_data_helper import load_external_data_for_model

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_COMPARE = os.path.join(HERE, "ort_compare.js")

# Tags (exact) whose models qopt must refuse to import.  Qualified NEG tags such as
# [NEG/REF], [NEG/fp16], [NEG/domain], [NEG for int8-only] are expected to import.
MUST_REJECT_TAGS = {"[NEG]", "[NEG invalid]", "[NEG/edge]"}

# Per-file class overrides: path relative to --shared  ->  "must-reject" | "must-import".
# Add one entry (with a comment saying why) to move a file between the classes.
# A --reject-list FILE can add more (see load_reject_list).
EXPECTED_REJECT_OVERRIDES = {
    # Tagged [NEG] only because of its uint16 activations ("same with uint16"); the model is
    # valid ONNX and qopt's IR supports 16-bit storage (i16/u16), so it must import and round-trip.
    "peer-cases/onnxruntime-qnn/onnxruntime/test/testdata/transform/fusion/constant_folding_dequantizelinear.qdq16.onnx":
        "must-import",
    # Declares its output C as shape [1], but QLinearMatMul of two 1-D operands gives a scalar
    # (numpy matmul rules); ONNX's own strict shape inference rejects it for this mismatch
    # ("Inferred shape and existing shape differ in rank: (0) vs (1)"), and so does qopt.
    "peer-cases/AMDMIGraphX/test/onnx/qlinearmatmul_1D_test.onnx":
        "must-reject",
    # Tagged [NEG] for their INT4/UINT4 or block-wise (block_size) Q/DQ, which qopt's IR
    # holds since issue 49: valid ONNX (opset 21+) that must import and round-trip.
    "peer-cases/onnx/onnx/backend/test/data/node/test_dequantizelinear_blocked/model.onnx":
        "must-import",
    "peer-cases/onnx/onnx/backend/test/data/node/test_dequantizelinear_int4/model.onnx":
        "must-import",
    "peer-cases/onnx/onnx/backend/test/data/node/test_quantizelinear_blocked_asymmetric/model.onnx":
        "must-import",
    "peer-cases/onnx/onnx/backend/test/data/node/test_quantizelinear_blocked_symmetric/model.onnx":
        "must-import",
    "peer-cases/onnx/onnx/backend/test/data/node/test_quantizelinear_int4/model.onnx":
        "must-import",
    "peer-cases/onnxruntime-qnn/onnxruntime/test/testdata/conv.int4_weights.qdq.onnx":
        "must-import",
}

# Extra `--dim` arguments for ort_compare.js, per model (path relative to --shared).
MODEL_DIMS = {
    # input is [-1, 10] (tract writes dim_value -1); QLinearConv with a width-3 kernel needs more
    # than 1 time step; the io.npz shipped with it uses 10.
    "peer-cases/tract/onnx/test_cases/qtdnn_10x5_101_i32_biases/model.onnx": ["?=10"],
}

TAG_RE = re.compile(r"^\s*((?:\[[^\]]*\])+)")
ROW_RE = re.compile(r"^\|\s*`([^`]+\.onnx)`\s*\|")


class StepFail(Exception):
    pass


# ----------------------------------------------------------------------------------------------
# model list

def read_peer_cases(shared):
    """[(relpath, tag)] for every .onnx row of the tables in peer-cases/README.md."""
    readme = os.path.join(shared, "peer-cases", "README.md")
    rows = []
    with open(readme, encoding="utf-8") as f:
        for line in f:
            m = ROW_RE.match(line)
            if not m:
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            t = TAG_RE.match(cells[-1])
            tag = t.group(1) if t else "[?]"
            rows.append(("peer-cases/" + m.group(1), tag))
    return rows


def load_reject_list(path):
    """Lines: `[reject|import] RELPATH  # why`; a bare RELPATH means reject."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[0] in ("reject", "import"):
                out[parts[1].strip()] = "must-" + parts[0]
            else:
                out[line] = "must-reject"
    return out


def build_model_list(shared, overrides):
    models = []
    mdir = os.path.join(shared, "models")
    if os.path.isdir(mdir):
        for name in sorted(os.listdir(mdir)):
            if name.endswith(".onnx"):
                models.append(("models/" + name, "[models]"))
        zdir = os.path.join(mdir, "zoo")
        if os.path.isdir(zdir):
            for name in sorted(os.listdir(zdir)):
                if name.endswith(".onnx"):
                    models.append(("models/zoo/" + name, "[models]"))
    models += read_peer_cases(shared)
    result = []
    for rel, tag in models:
        cls = "must-reject" if tag in MUST_REJECT_TAGS else "must-import"
        if rel in overrides and overrides[rel] != cls:
            cls = overrides[rel] + "*"  # '*' marks an override in the table
        result.append((rel, tag, cls))
    unknown = set(overrides) - {rel for rel, _, _ in result}
    for rel in sorted(unknown):
        print(f"warning: override for unknown model {rel}", file=sys.stderr)
    return result


# ----------------------------------------------------------------------------------------------
# helpers

def run(cmd, timeout, stdin_bytes=None, cwd=None):
    try:
        return subprocess.run(cmd, input=stdin_bytes, stdin=None if stdin_bytes is not None else subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise StepFail(f"timeout after {timeout}s: {' '.join(os.path.basename(c) for c in cmd)}")


def first_line(b):
    s = b.decode("utf-8", "replace").strip()
    return s.splitlines()[0] if s else ""


def describe_rc(p):
    if p.returncode < 0:
        return f"killed by signal {-p.returncode}"
    return f"exit {p.returncode}"


def qopt_ok(args, cmd_args, what, stdin_bytes=None):
    p = run([args.qopt] + cmd_args, args.timeout, stdin_bytes)
    if p.returncode != 0:
        msg = first_line(p.stderr) or first_line(p.stdout)
        raise StepFail(f"{what}: {describe_rc(p)}: {msg}")
    return p


def first_text_diff(a, b):
    """Line number (1-based) and the two lines where byte strings a and b first differ."""
    if b.startswith(a):
        return f"re-printed text has {len(b) - len(a)} extra trailing byte(s): {b[len(a):][:40]!r}"
    if a.startswith(b):
        return f"re-printed text is truncated: {len(a) - len(b)} byte(s) missing"
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else b"<EOF>"
        y = lb[i] if i < len(lb) else b"<EOF>"
        if x != y:
            return f"line {i + 1}: {x[:80]!r} vs {y[:80]!r}"
    return "trailing bytes"


def checker_error(model):
    try:
        onnx.checker.check_model(model, full_check=True)
        return None
    except Exception as e:  # ValidationError, or anything else the checker throws
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def load_onnx(path, what):
    try:
        return onnx.load(path)
    except Exception as e:
        raise StepFail(f"onnx.load({what}) failed: {str(e).strip()[:200]}")


# ----------------------------------------------------------------------------------------------
# structural comparison (used when ORT cannot run the original)

def _domain(d):
    return "" if d == "ai.onnx" else d


def _node_key(n):
    attrs = sorted(n.attribute, key=lambda a: a.name)
    return (n.op_type, _domain(n.domain), n.name, list(n.input), list(n.output),
            [a.SerializeToString() for a in attrs])


def _bits(arr):
    return arr.dtype.str, arr.shape, np.ascontiguousarray(arr).tobytes()


def graph_difference(a, b):
    """None if graphs a and b (GraphProto) are structurally identical, else the first difference."""
    if len(a.node) != len(b.node):
        return f"node count {len(a.node)} vs {len(b.node)}"
    for i, (x, y) in enumerate(zip(a.node, b.node)):
        kx, ky = _node_key(x), _node_key(y)
        if kx != ky:
            fields = ["op_type", "domain", "name", "inputs", "outputs", "attributes"]
            f = next(fields[j] for j in range(len(fields)) if kx[j] != ky[j])
            return f"node {i} ({x.op_type} '{x.name}'): {f} differ" + (
                "" if f == "attributes" else f": {kx[fields.index(f)]} vs {ky[fields.index(f)]}")
    ia = {t.name: t for t in a.initializer}
    ib = {t.name: t for t in b.initializer}
    if [t.name for t in a.initializer] != [t.name for t in b.initializer]:
        missing = sorted(set(ia) - set(ib))
        extra = sorted(set(ib) - set(ia))
        if missing or extra:
            return f"initializer names differ: missing {missing[:5]}, extra {extra[:5]}"
        # same set in a different order: not a semantic difference, tolerate
    for name, x in ia.items():
        y = ib[name]
        if x.data_type != y.data_type:
            return f"initializer '{name}': data_type {x.data_type} vs {y.data_type}"
        if list(x.dims) != list(y.dims):
            return f"initializer '{name}': dims {list(x.dims)} vs {list(y.dims)}"
        try:
            ax, ay = numpy_helper.to_array(x), numpy_helper.to_array(y)
        except Exception as e:
            return f"initializer '{name}': to_array failed: {e}"
        if _bits(ax) != _bits(ay):
            return f"initializer '{name}': contents differ"
    if len(a.sparse_initializer) != len(b.sparse_initializer):
        return f"sparse_initializer count {len(a.sparse_initializer)} vs {len(b.sparse_initializer)}"
    for kind in ("input", "output"):
        la, lb = getattr(a, kind), getattr(b, kind)
        na, nb = [v.name for v in la], [v.name for v in lb]
        if na != nb:
            return f"graph {kind}s differ: {na} vs {nb}"
        for x, y in zip(la, lb):
            if x.type.SerializeToString() != y.type.SerializeToString():
                return f"graph {kind} '{x.name}': type differs: {_type_str(x.type)} vs {_type_str(y.type)}"
    return None


def _type_str(t):
    """Compact form of a TypeProto, e.g. FLOAT[1,N,?,-1] (no shape: FLOAT<unranked>)."""
    if not t.HasField("tensor_type"):
        s = re.sub(r"\s+", " ", str(t)).strip()
        return s[:120] or "<no type>"
    tt = t.tensor_type
    elem = onnx.TensorProto.DataType.Name(tt.elem_type) if tt.elem_type else "<no elem_type>"
    if not tt.HasField("shape"):
        return elem + "<unranked>"
    dims = []
    for d in tt.shape.dim:
        which = d.WhichOneof("value")
        dims.append(str(d.dim_value) if which == "dim_value" else d.dim_param if which == "dim_param" else "?")
    return f"{elem}[{','.join(dims)}]"


def short_ort_error(msg):
    """Drop ORT's 'Load model from PATH failed:' prefix and the long node signature."""
    msg = re.sub(r"^(run failed: )?Load model from \S+ failed:", r"\1", msg).strip()
    # ".../conv_integer.cc:52 virtual onnxruntime::common::Status ...::Compute(...) const X" -> "conv_integer.cc:52: X"
    msg = re.sub(r"/onnxruntime_src/\S*/(\S+:\d+) [^()]*\([^()]*\)( const)? ", r"\1: ", msg)
    m = re.search(r"\) , Error (.*)$", msg)
    if m:
        node = re.search(r'In Node, \("[^"]*", (\w+),', msg)
        msg = (f"invalid model: {node.group(1)}: " if node else "invalid model: ") + m.group(1)
    return msg


# ----------------------------------------------------------------------------------------------
# per-model checks

def check_reject(args, rel, path, wdir):
    out = os.path.join(wdir, "r.onnx")
    if os.path.exists(out):
        os.remove(out)
    p = run([args.qopt, path, "-o", out], args.timeout)
    lines = p.stderr.decode("utf-8", "replace").splitlines()
    if p.returncode != 1:
        raise StepFail(f"expected exit 1, got {describe_rc(p)}" + (f": {lines[0]}" if lines else ""))
    if len(lines) != 1 or not lines[0].startswith("qopt: error: "):
        raise StepFail(f"stderr must be one 'qopt: error: ' line, got {len(lines)} line(s): "
                       f"{lines[0][:120] if lines else ''!r}")
    if os.path.exists(out):
        raise StepFail("output file was created despite the error")
    return "rejected", lines[0][len("qopt: error: "):][:100]


def ort_or_graph_check(args, rel, path, exported, label, original_model):
    """Returns ('ort-identical'|'graph-identical', detail, ort_reject_reason_or_None)."""
    cmd = [args.node, ORT_COMPARE, path, exported, "--seed", "1"]
    for d in MODEL_DIMS.get(rel, []):
        cmd += ["--dim", d]
    p = run(cmd, args.timeout)
    out = p.stdout.decode("utf-8", "replace").strip().splitlines()
    last = out[-1] if out else first_line(p.stderr)
    if p.returncode == 0:
        return "ort-identical", "", None
    if p.returncode == 3:
        reason = next((l for l in out if l.startswith("ORT rejects original:")), last)
        reason = short_ort_error(reason[len("ORT rejects original:"):].strip())
        if original_model is None:
            raise StepFail(f"{label}: ORT rejects original and onnx cannot load it")
        diff = graph_difference(original_model.graph, load_onnx(exported, label).graph)
        if diff:
            raise StepFail(f"{label}: ORT rejects original; graph differs: {diff}")
        return "graph-identical", "", reason
    if p.returncode == 1:
        bad = next((l.strip() for l in out if "DIFFERENT" in l or "MISSING" in l or "EXTRA" in l
                    or "differ" in l), last)
        raise StepFail(f"{label}: ORT outputs differ: {bad[:200]}")
    raise StepFail(f"{label}: ort_compare {describe_rc(p)}: {last[:200]}")


STATIC_SHAPE_MODELS = []  # (path, count of tensor types with unknown dims)
TENSOR_TYPE_RE = re.compile(r"tensor<([^<>]*(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>)?[^<>]*)>")


def has_static_inputs(model):
    """True if every graph input that is not an initializer has a fully static shape."""
    inits = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            return False
        if any(not d.HasField("dim_value") or d.dim_value < 0 for d in tt.shape.dim):
            return False
    return True


def count_unknown_shapes(qir_text):
    """Tensor types in .qir text that are unranked ('*') or have a dynamic dim ('?')."""
    n = 0
    for line in qir_text.splitlines():
        if line.lstrip().startswith('"') or line.startswith("{-#"):
            continue  # resource blobs
        for m in TENSOR_TYPE_RE.finditer(line):
            dims = m.group(1).split("x!quant")[0]
            if "*" in dims or "?" in dims:
                n += 1
    return n


def check_import(args, rel, path, wdir):
    qir = os.path.join(wdir, "x.qir")
    x_onnx = os.path.join(wdir, "x.onnx")
    y_onnx = os.path.join(wdir, "y.onnx")
    for f in (qir, x_onnx, y_onnx):
        if os.path.exists(f):
            os.remove(f)

    notes = []
    original, external = None, False
    try:
        original = onnx.load(path, load_external_data=False)
        external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in original.graph.initializer)
        if external:
            load_external_data_for_model(original, os.path.dirname(path))
    except Exception as e:
        original = None
        notes.append(f"onnx cannot load original: {str(e).strip()[:60]}")

    # a. print / parse / print fixpoint
    qopt_ok(args, [path, "-o", qir], "import")
    if not os.path.exists(qir):
        raise StepFail("import: exit 0 but x.qir not written")
    with open(qir, "rb") as f:
        text = f.read()
    # Shape inference: a model whose graph inputs all have static shapes
    # must import with a static shape on every tensor (no '*', no '?').
    if original is not None and has_static_inputs(original):
        unknown = count_unknown_shapes(text.decode("utf-8", "replace"))
        STATIC_SHAPE_MODELS.append((path, unknown))
        if unknown:
            raise StepFail(f"{unknown} tensor types with '*' or '?' in a model with static inputs")
    p = qopt_ok(args, [qir], "re-print x.qir")
    if p.stdout != text:
        raise StepFail(f"print-parse-print not a fixpoint ({first_text_diff(text, p.stdout)})")
    p = qopt_ok(args, ["-"], "stdin x.qir", stdin_bytes=text)
    if p.stdout != text:
        raise StepFail(f"`qopt -` (qir on stdin) output differs ({first_text_diff(text, p.stdout)})")
    if not external:  # stdin has no directory to resolve external data against
        with open(path, "rb") as f:
            p = qopt_ok(args, ["-"], "stdin onnx", stdin_bytes=f.read())
        if p.stdout != text:
            raise StepFail(f"`qopt -` (onnx on stdin) output differs from x.qir ({first_text_diff(text, p.stdout)})")

    # b. export, from the re-parsed text and directly
    qopt_ok(args, [qir, "-o", x_onnx], "export from x.qir")
    qopt_ok(args, [path, "-o", y_onnx], "direct export")
    for f in (x_onnx, y_onnx):
        if not os.path.exists(f):
            raise StepFail(f"exit 0 but {os.path.basename(f)} not written")
    with open(x_onnx, "rb") as f1, open(y_onnx, "rb") as f2:
        same_bytes = f1.read() == f2.read()
    if not same_bytes:
        notes.append("y.onnx != x.onnx bytewise")

    # c. onnx checker: what the original passes, the exports must pass
    if original is not None and checker_error(original) is None:
        for f in (x_onnx, y_onnx):
            err = checker_error(load_onnx(f, os.path.basename(f)))
            if err:
                raise StepFail(f"onnx.checker rejects {os.path.basename(f)} (original passes): {err[:160]}")
    elif original is not None:
        notes.append("checker rejects original")

    # d. ONNX Runtime bit-identity (or structural identity when ORT cannot run the original)
    result, detail, ort_reason = ort_or_graph_check(args, rel, path, x_onnx, "x.onnx", original)
    if not same_bytes:
        ort_or_graph_check(args, rel, path, y_onnx, "y.onnx", original)
    if ort_reason:
        notes.insert(0, "ORT rejects original")
    return result, "; ".join(notes), ort_reason


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qopt", required=True, help="path of the qopt binary")
    ap.add_argument("--shared", required=True, help="dir containing models/ and peer-cases/")
    ap.add_argument("--work", required=True, help="scratch dir for outputs (created)")
    ap.add_argument("--node", default="node", help="node executable (default: node)")
    ap.add_argument("--timeout", type=int, default=120, help="per-command timeout in seconds")
    ap.add_argument("--reject-list", help="file of class overrides: '[reject|import] RELPATH  # why'")
    ap.add_argument("--filter", help="only run models whose relative path matches this regex")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                    help="models checked at once (default: one per CPU)")
    args = ap.parse_args()

    args.qopt = os.path.abspath(args.qopt)
    shared = os.path.abspath(args.shared)
    if not (os.path.isfile(args.qopt) and os.access(args.qopt, os.X_OK)):
        print(f"run_roundtrip: qopt not found or not executable: {args.qopt}", file=sys.stderr)
        return 2
    overrides = dict(EXPECTED_REJECT_OVERRIDES)
    if args.reject_list:
        overrides.update(load_reject_list(args.reject_list))
    models = build_model_list(shared, overrides)
    if args.filter:
        models = [m for m in models if re.search(args.filter, m[0])]
    if not models:
        print("run_roundtrip: no models found", file=sys.stderr)
        return 2
    os.makedirs(args.work, exist_ok=True)

    def check_one(i, rel, tag, cls):
        path = os.path.join(shared, rel)
        short = "_".join(rel[:-len(".onnx")].split("/")[-2:])
        wdir = os.path.join(os.path.abspath(args.work), "%03d_%s" % (i, re.sub(r"[^A-Za-z0-9_.-]+", "_", short)))
        os.makedirs(wdir, exist_ok=True)
        reason = None
        try:
            if not os.path.isfile(path):
                raise StepFail("model file missing")
            if cls.startswith("must-reject"):
                result, detail = check_reject(args, rel, path, wdir)
            else:
                result, detail, reason = check_import(args, rel, path, wdir)
        except StepFail as e:
            result, detail = "FAIL", str(e)
        except Exception as e:  # harness bug or unexpected data: report, keep going
            result, detail = "FAIL", f"harness error: {type(e).__name__}: {e}"
        return (rel, tag, cls, result, detail), reason

    rows = []
    ort_rejects = []
    # Models in parallel (each step is a subprocess), printed in order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(check_one, i, *m) for i, m in enumerate(models)]
        for i, future in enumerate(futures):
            row, reason = future.result()
            rel, _, _, result, detail = row
            if reason:
                ort_rejects.append((rel, reason))
            rows.append(row)
            print(f"[{i + 1}/{len(models)}] {result:15s} {rel}" + (f"  -- {detail}" if result == "FAIL" else ""),
                  flush=True)

    # table
    w = max(len(r[0]) for r in rows)
    print()
    print(f"{'model'.ljust(w)}  {'tag':20s} {'class':12s} {'result':16s} detail")
    print("-" * (w + 70))
    for rel, tag, cls, result, detail in rows:
        print(f"{rel.ljust(w)}  {tag:20s} {cls:12s} {result:16s} {detail}")

    if ort_rejects:
        print()
        print(f"ORT rejects {len(ort_rejects)} original model(s) (checked structurally instead):")
        for rel, reason in ort_rejects:
            print(f"  {rel}: {reason[:200]}")

    failed = [r for r in rows if r[3] == "FAIL"]
    count = lambda s: sum(1 for r in rows if r[3] == s)
    print()
    print(f"shape inference: {len(STATIC_SHAPE_MODELS)} models with static inputs imported, "
          f"{sum(1 for _, u in STATIC_SHAPE_MODELS if u == 0)} with a static shape on every tensor, "
          f"{sum(u for _, u in STATIC_SHAPE_MODELS)} tensor types with '*' or '?'")
    print(f"roundtrip: {len(rows) - len(failed)} passed, {len(failed)} failed "
          f"({count('ort-identical')} ort-identical, {count('graph-identical')} graph-identical, "
          f"{count('rejected')} rejected)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
