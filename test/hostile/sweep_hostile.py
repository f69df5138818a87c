#!/usr/bin/python3
"""Hostile-input sweep for qopt and qopt-run ("hostile inputs, second round").

usage: sweep_hostile.py [--bin DIR] [--work DIR] [--timeout SEC] [--quick]

Generates a corpus of hostile inputs (parameter sweeps over the families
below), runs every case through the tools that apply, classifies each run and
prints one line per failure, then a summary line:

  sweep: N cases, M runs; crashes C, hangs H, malformed accepted A,
         multi-line errors L, files left F, wrong results W

(on one line). The exit status is 1 when any count but N and M is non-zero.

Families (the issue's items):
  device     -o onto character devices (mknod'd inside the work dir, never
             the machine's /dev/null), FIFOs, symlinks, directories, a full
             device, a file-size limit, a FIFO or stdin as the input
  pool       MaxPool/AveragePool/Conv with huge kernels and pads giving a 1x1
             output; huge strides, dilations and pads, valid and invalid
  resource   Concat chains doubling to 2^30..2^40 elements, Expand to
             multi-GiB or overflowing shapes, conv/matmul/gemm/pool operands
             Expand-ed to 2^39+ MACs, /dev/zero as model, input, reference
  resize     nearest Resize between Q/DQ pairs: every
             coordinate_transformation_mode and nearest_mode, tf_crop_and_resize
             with extrapolation; the plan and default<trt-exact> must be exact
  pad        Pad between Q/DQ pairs: constant (with and without a value), zero
             points 0/128 (u8) and 0 (i8), reflect, edge, negative pads
  malformed  models (and .qir texts) that must be refused with one line
  names      newlines, 1 MB names, NUL, invalid UTF-8, escapes in node,
             tensor, input, initializer and graph names
  upsample   opset 7-9 Upsample through default<trt> and default<ort>
  plan       plan files (binary and text) of small valid models, then single
             numeric fields of the text plan set to 0, -1, 2^31, 2^62, and
             truncated binary plans

Classes of failure (each run can have several):
  crash              killed by a signal, exit status >= 128, or stderr with
                     "Stack dump", "LLVM ERROR", "AddressSanitizer",
                     "runtime error:" (and a few similar markers)
  hang               the run passed --timeout
  malformed-accepted an input that must be refused (malformed, or over the
                     resource limits) exited 0
  multi-line-error   exit 1 with other than one stderr line (the .qir parse
                     error form "file:line:col: error:" may add the source
                     line and a caret)
  files-left         a *.tmp-* file left in the case directory, a device or
                     FIFO target no longer what it was, a failed run leaving
                     its output file or changing an existing one
  wrong-result       an exact comparison not identical, a valid model refused
                     where success is required, a resource refusal not naming
                     --max-memory/--max-work, an error line without its reason
                     (e.g. cut at a NUL in a name), or an exit status other
                     than 0/1 below 128

Failure lines read: FAIL <case> | <command> | <class> | <first stderr line or
detail>, with the work directory written as $W. --jobs N (default 2) sets the
workers, --only TEXT runs the cases whose name holds TEXT (and the plan bases).

Every run gets RLIMIT_AS = 8,000,000 KiB (ulimit -v 8000000) and the timeout.
A fresh default work directory is removed after a clean sweep and kept (its
path printed on stderr, with the five slowest runs) when anything failed.
Uses /usr/bin/python3 with onnx 1.12 and numpy; needs root for mknod (without
it the device cases are skipped).
"""

import argparse
import concurrent.futures
import os
import random
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zlib

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

AS_LIMIT = 8000000 * 1024           # ulimit -v 8000000 (KiB)
CRASH_MARKERS = (b"Stack dump", b"LLVM ERROR", b"AddressSanitizer", b"runtime error:",
                 b"PLEASE submit a bug report", b"terminate called", b"Assertion `")
QIR_ERROR = re.compile(rb"^[^\n]*:\d+:\d+: error: ")
IDENTICAL = re.compile(r"^.+: identical \(\d+ elements\)$")
CLASSES = ["crash", "hang", "malformed-accepted", "multi-line-error", "files-left", "wrong-result"]

F32, U8, I8, I64 = T.FLOAT, T.UINT8, T.INT8, T.INT64
QTYPES = {"u8": np.uint8, "i8": np.int8}
P31, P62 = 1 << 31, 1 << 62
EDGE_VALUES = [0, -1, P31, P62]


# ---------------------------------------------------------------------------
# Cases and runs
# ---------------------------------------------------------------------------

class Run:
    """One command. expect: ok (exit 0), any (0 or 1), refuse (1), limit (1
    naming --max-memory/--max-work), identical (0 and every output line
    'identical'), signal-ok (may also die of `sig`)."""

    def __init__(self, tool, args, expect="any", stdin=None, out=None, keep=(), fifo_read=(),
                 fifo_write=None, fsize=None, kill_after=None, sig=None, after=False, reason=None):
        self.tool, self.args, self.expect = tool, [str(a) for a in args], expect
        self.reason = reason            # bytes a refusal's line must hold (its reason)
        self.stdin = stdin              # a path read as stdin
        self.out = out                  # must not exist after a failed run (if absent before)
        self.keep = list(keep)          # paths whose bytes a failed run must not change
        self.fifo_read = list(fifo_read)    # FIFOs to drain while the run goes
        self.fifo_write = fifo_write    # (fifo, bytes) to feed while the run goes
        self.fsize = fsize              # RLIMIT_FSIZE
        self.kill_after = kill_after    # seconds, then `sig`
        self.sig = sig
        self.after = after              # skip (uncounted) when the run before failed


class Case:
    def __init__(self, family, name, root):
        self.family, self.name = family, family + "/" + name
        self.dir = os.path.join(root, family, name)
        if os.path.lexists(self.dir):       # a --work directory used before
            shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        self.runs = []
        self.nodes = {}                 # path -> ("chr", rdev) | ("fifo",) | ("link", target)
        self.slow = False

    def path(self, name):
        return os.path.join(self.dir, name)

    def add(self, tool, *args, **kw):
        self.runs.append(Run(tool, args, **kw))
        return self

    def chardev(self, name, major, minor):
        p = self.path(name)
        os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        self.nodes[p] = ("chr", os.makedev(major, minor))
        return p

    def fifo(self, name):
        p = self.path(name)
        os.mkfifo(p)
        self.nodes[p] = ("fifo",)
        return p

    def symlink(self, name, target):
        p = self.path(name)
        os.symlink(target, p)
        self.nodes[p] = ("link", target)
        return p


# ---------------------------------------------------------------------------
# Model helpers
# ---------------------------------------------------------------------------

def vi(name, shape=None, elem=F32):
    return h.make_tensor_value_info(name, elem, shape)


def init(name, value, dtype=None):
    return nh.from_array(np.asarray(value, dtype=dtype), name)


def ints(name, values):
    return init(name, np.array(values, np.int64))


def model(nodes, inputs, outputs, inits=(), opset=13, gname="g"):
    graph = h.make_graph(nodes, gname, inputs, outputs, list(inits))
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def save(path, m, patches=()):
    data = m if isinstance(m, bytes) else m.SerializeToString()
    for old, new in patches:
        assert len(old) == len(new) and old in data, (path, old)
        data = data.replace(old, new)
    with open(path, "wb") as f:
        f.write(data)
    return path


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def qdq_model(core, in_shape, inits=(), qtype="u8", zp=0, scale=0.05, opset=13, gname="g",
              x="x"):
    """x -> Q -> DQ -> core -> Q -> DQ -> y; core(in_name) gives (nodes, out_name)."""
    nodes = [h.make_node("QuantizeLinear", [x, "s", "z"], ["xq"], name="q_in"),
             h.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in")]
    core_nodes, core_out = core("xd")
    nodes += core_nodes
    nodes += [h.make_node("QuantizeLinear", [core_out, "s", "z"], ["yq"], name="q_out"),
              h.make_node("DequantizeLinear", ["yq", "s", "z"], ["y"], name="dq_out")]
    qinits = [init("s", np.float32(scale)), init("z", np.array(zp, QTYPES[qtype]))]
    return model(nodes, [vi(x, list(in_shape))], [vi("y")], qinits + list(inits), opset, gname)


def qconv_model(channels=4, size=6, wname="w"):
    """A small Q/DQ conv with Q/DQ weights (int8 conv in the plan)."""
    rng = np.random.default_rng(channels * 100 + size)
    w = rng.integers(-20, 20, (channels, channels, 3, 3)).astype(np.int8)

    def core(xd):
        return ([h.make_node("DequantizeLinear", [wname, "ws"], ["wd"], name="dq_w"),
                 h.make_node("Conv", [xd, "wd"], ["c"], name="conv", pads=[1, 1, 1, 1])], "c")
    return qdq_model(core, [1, channels, size, size],
                     [init(wname, w), init("ws", np.float32(0.02))], qtype="i8")


# ---------------------------------------------------------------------------
# Families
# ---------------------------------------------------------------------------

class Corpus:
    def __init__(self, root):
        self.root = root
        self.cases = []
        self.can_mknod = os.geteuid() == 0
        self.skipped = []

    def case(self, family, name):
        c = Case(family, name, self.root)
        self.cases.append(c)
        return c


def family_device(cp):
    """Item 1: -o onto devices, FIFOs, symlinks; no *.tmp-* left."""
    if not cp.can_mknod:
        cp.skipped.append("device: not root, mknod unavailable")
        return
    shared = os.path.join(cp.root, "device-models")
    os.makedirs(shared, exist_ok=True)
    good = save(os.path.join(shared, "conv.onnx"), qconv_model())
    bad = save(os.path.join(shared, "bad.onnx"),
               model([h.make_node("Softmax", ["x"], ["y"], axis=5)], [vi("x", [1, 4])], [vi("y")]))
    big_w = np.arange(16 * 16 * 3 * 3, dtype=np.float32).reshape(16, 16, 3, 3) / 1000
    big = save(os.path.join(shared, "big.onnx"),
               model([h.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                     [vi("x", [1, 16, 8, 8])], [vi("y")], [init("w", big_w)]))
    bigq = save(os.path.join(shared, "bigq.onnx"), qconv_model(16, 8))   # a 2.3 KiB int8 plan
    huge_w = np.ones((4096, 4096), np.float32)
    huge = save(os.path.join(shared, "huge.onnx"),
                model([h.make_node("MatMul", ["x", "w"], ["y"])],
                      [vi("x", [1, 4096])], [vi("y")], [init("w", huge_w)]))
    cpu = "-passes=default<cpu>"

    def devcase(name, *args, expect="ok", model_path=good, node=("null", 1, 3), tool="qopt"):
        c = cp.case("device", name)
        target = c.chardev(*node) if node else None
        args = [a.replace("@T", target) if target else a for a in args]
        c.add(tool, model_path, *args, expect=expect)
        return c

    devcase("qir-to-null", "-o", "@T")
    devcase("onnx-to-null", "-emit=onnx", "-o", "@T")
    devcase("onnx-ext-device", "-o", "@T", node=("dev.onnx", 1, 3))
    devcase("plan-to-null", cpu, "-emit=plan", "-o", "@T")
    devcase("qplan-ext-device", cpu, "-o", "@T", node=("dev.qplan", 1, 3))
    devcase("plantext-to-null", cpu, "-emit=plan-text", "-o", "@T")
    devcase("onnx-to-zero", "-emit=onnx", "-o", "@T", node=("zero", 1, 5))
    devcase("onnx-to-full", "-emit=onnx", "-o", "@T", node=("full", 1, 7), expect="refuse")
    devcase("plan-to-full", cpu, "-emit=plan", "-o", "@T", node=("full", 1, 7), expect="refuse")
    devcase("big-onnx-to-full", "-emit=onnx", "-o", "@T", node=("full", 1, 7), expect="refuse",
            model_path=big)
    c = devcase("reports-to-devices", "--report=@T", node=("rep.html", 1, 3))
    c.add("qopt", good, "--report=" + c.chardev("rep.svg", 1, 3), expect="ok")
    c.add("qopt", good, "--report=" + c.chardev("rep.json", 1, 3), expect="ok")
    c.add("qopt", good, "--report=" + c.chardev("full.html", 1, 7), expect="refuse")
    c = cp.case("device", "report-and-output")
    c.add("qopt", good, "--report=" + c.chardev("rep.html", 1, 3), "-emit=onnx", "-o",
          c.chardev("null", 1, 3), expect="ok")
    devcase("malformed-to-null", "-o", "@T", model_path=bad, expect="refuse")
    devcase("malformed-to-onnx-device", "-o", "@T", model_path=bad, expect="refuse",
            node=("dev.onnx", 1, 3))
    c = devcase("run-npz-to-device", "--seed=1", "-o", "@T", tool="qopt-run",
                node=("out.npz", 1, 3))
    c.add("qopt-run", good, "--seed=1", "-o", c.chardev("out.npy", 1, 3), expect="ok")
    c.add("qopt-run", good, "--seed=1", "-o", c.chardev("full.npz", 1, 7), expect="refuse")

    c = cp.case("device", "symlink-to-null")
    c.chardev("null", 1, 3)
    link = c.symlink("link", "null")
    c.add("qopt", good, "-emit=onnx", "-o", link, expect="ok")
    c.add("qopt", bad, "-emit=onnx", "-o", link, expect="refuse")

    c = cp.case("device", "fifo-output")
    fifo = c.fifo("fifo")
    c.add("qopt", good, "-o", fifo, expect="ok", fifo_read=[fifo])
    c.add("qopt", good, "-emit=onnx", "-o", fifo, expect="ok", fifo_read=[fifo])
    c.add("qopt", good, cpu, "-emit=plan", "-o", fifo, expect="ok", fifo_read=[fifo])
    c.add("qopt", bad, "-emit=onnx", "-o", fifo, expect="refuse", fifo_read=[fifo])
    c.add("qopt-run", good, "--seed=1", "-o", c.fifo("out.npz"), expect="ok",
          fifo_read=[c.path("out.npz")])

    c = cp.case("device", "fifo-input")
    fin = c.fifo("in.onnx")
    with open(good, "rb") as f:
        data = f.read()
    c.add("qopt", fin, "-emit=onnx", "-o", c.path("out.onnx"), expect="ok", fifo_write=(fin, data))
    c.add("qopt-run", c.path("out.onnx"), "--compare", good, "--seed=1", expect="identical",
          after=True)
    c.add("qopt", fin, "-o", c.path("out2.onnx"), expect="refuse",
          fifo_write=(fin, data[:len(data) // 2]), out=c.path("out2.onnx"))

    c = cp.case("device", "stdin-input")
    c.add("qopt", "-", "-emit=onnx", "-o", c.path("out.onnx"), expect="ok", stdin=good)
    c.add("qopt", "-", "-emit=onnx", "-o", c.path("bad.onnx"), expect="refuse", stdin=bad,
          out=c.path("bad.onnx"))

    c = cp.case("device", "output-is-directory")
    os.makedirs(c.path("d.onnx"))
    c.add("qopt", good, "-o", c.path("d.onnx"), expect="refuse")
    c.add("qopt", good, "-o", c.path("missing/sub/out.onnx"), expect="refuse",
          out=c.path("missing/sub/out.onnx"))

    c = cp.case("device", "failed-run-keeps-file")
    kept = c.path("kept.onnx")
    shutil.copy(good, kept)
    c.add("qopt", bad, "-o", kept, expect="refuse", keep=[kept])
    c.add("qopt", good, "-passes=no-such-pass", "-o", kept, expect="refuse", keep=[kept])
    c.add("qopt", good, "-passes=fuse<cpu>", "-emit=onnx", "-o", kept, expect="refuse",
          keep=[kept])
    c.add("qopt", big, "-o", c.path("new.onnx"), "--max-memory=1K", expect="limit",
          out=c.path("new.onnx"))

    c = cp.case("device", "symlink-to-file")
    os.makedirs(c.path("sub"))
    shutil.copy(good, c.path("sub/real.onnx"))
    link = c.symlink("link.onnx", "sub/real.onnx")
    c.add("qopt", good, "-passes=default<trt>", "-o", link, expect="ok")
    c.add("qopt", bad, "-o", link, expect="refuse", keep=[c.path("sub/real.onnx")])
    dangling = c.symlink("dangling.onnx", "sub/missing.onnx")
    del c.nodes[dangling]      # may legitimately be replaced by the written file
    c.add("qopt", good, "-o", dangling, expect="any")

    c = cp.case("device", "file-size-limit")
    c.add("qopt", big, "-emit=onnx", "-o", c.path("out.onnx"), expect="signal-ok", fsize=1024,
          sig=signal.SIGXFSZ, out=c.path("out.onnx"))
    c.add("qopt", bigq, cpu, "-emit=plan", "-o", c.path("out.qplan"), expect="signal-ok",
          fsize=1024, sig=signal.SIGXFSZ, out=c.path("out.qplan"))
    c.add("qopt", big, "-o", c.path("out.qir"), expect="signal-ok", fsize=1024,
          sig=signal.SIGXFSZ, out=c.path("out.qir"))

    for delay in (0.15, 0.4):
        for sig in (signal.SIGTERM, signal.SIGINT):
            c = cp.case("device", "killed-%s-%gs" % (sig.name, delay))
            c.slow = True
            c.add("qopt", huge, "-emit=onnx", "-o", c.path("out.onnx"), expect="signal-ok",
                  kill_after=delay, sig=sig)

    c = cp.case("device", "dev-stdout")
    c.add("qopt", good, "-emit=onnx", "-o", "/dev/stdout", expect="ok")
    c.add("qopt", good, "-o", "-", expect="ok")


def pool_node(op, inp, out, k, s, d, pads, name="pool", **extra):
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=pads)
    if op == "Conv":
        return [h.make_node("Conv", [inp, "pw"], [out], name=name, dilations=[d, d], **attrs)]
    if d != 1:
        attrs["dilations"] = [d, d]
    return [h.make_node(op, [inp], [out], name=name, **attrs, **extra)]


def pool_case(cp, name, op, quant, shape, k, s, d, pads, valid, extra=None):
    extra = extra or {}
    inits = []
    if op == "Conv":
        inits.append(init("pw", np.full((shape[1], shape[1], k, k), 0.5, np.float32))
                     if k <= 3 else None)
    inits = [i for i in inits if i is not None]
    opset = 19 if op == "AveragePool" and d != 1 else 13   # dilations from opset 19
    if quant:
        m = qdq_model(lambda xd: (pool_node(op, xd, "p", k, s, d, pads, **extra), "p"),
                      shape, inits, qtype="i8", opset=opset)
    else:
        m = model(pool_node(op, "x", "y", k, s, d, pads, **extra), [vi("x", shape)], [vi("y")],
                  inits, opset=opset)
    c = cp.case("pool", name)
    p = save(c.path("m.onnx"), m)
    e = "any" if valid else "refuse"
    c.add("qopt", p, "-o", c.path("out.onnx"), expect=e, out=c.path("out.onnx"))
    c.add("qopt-run", p, "--seed=1", expect=e)
    c.add("qopt-run", p, "--plan", "--seed=1", expect=e)
    c.add("qopt", p, "-passes=default<cpu>", "-emit=plan", "-o", c.path("m.qplan"), expect=e,
          out=c.path("m.qplan"))
    c.add("qopt-run", c.path("m.qplan"), "--seed=1", expect="any", after=True)
    c.add("qopt", p, "-passes=default<trt>", "-o", c.path("t.onnx"), expect=e)
    if valid:
        c.add("qopt-run", p, "--plan", "--compare", p, "--seed=1", expect="any")


def family_pool(cp):
    """Item 2: huge windows with pads to a 1x1 output; huge strides/dilations."""
    ops = [("max-f32", "MaxPool", False, {}), ("avg-f32", "AveragePool", False, {}),
           ("avgpad-f32", "AveragePool", False, {"count_include_pad": 1}),
           ("max-i8", "MaxPool", True, {}), ("avg-i8", "AveragePool", True, {})]
    shapes = [[1, 2, 2, 2], [1, 3, 3, 5], [1, 1, 1, 1]]
    halfpads = [499999, P31 - 1, 1 << 40, 1 << 61, (1 << 62) - 2]
    for i, (oname, op, quant, extra) in enumerate(ops):
        for j, p in enumerate(halfpads):
            shape = shapes[(i + j) % len(shapes)]
            hgt, wid = shape[2], shape[3]
            p = min(p, ((1 << 63) - 1 - max(hgt, wid)) // 2)   # the kernel fits in int64
            # kernel = size + 2p on each axis: one output pixel.
            kh, kw = hgt + 2 * p, wid + 2 * p
            attrs = dict(kernel_shape=[kh, kw], pads=[p, p, p, p])
            attrs.update(extra)
            if (i + j) % 2:
                attrs["ceil_mode"] = 1
            if quant:
                m = qdq_model(
                    lambda xd: ([h.make_node(op, [xd], ["p"], name="pool", **attrs)], "p"),
                    shape, qtype="i8")
            else:
                m = model([h.make_node(op, ["x"], ["y"], name="pool", **attrs)],
                          [vi("x", shape)], [vi("y")])
            c = cp.case("pool", "window-%s-p%d" % (oname, p))
            path = save(c.path("m.onnx"), m)
            c.add("qopt-run", path, "--seed=1", expect="any")
            c.add("qopt-run", path, "--plan", "--seed=1", expect="any")
            c.add("qopt-run", path, "--plan", "--compare", path, "--seed=1", expect="any")
            c.add("qopt", path, "-passes=default<cpu>", "-emit=plan", "-o", c.path("m.qplan"),
                  expect="any")
            c.add("qopt-run", c.path("m.qplan"), "--seed=2", expect="any", after=True)
            c.add("qopt", path, "-passes=default<trt>", "-o", c.path("t.onnx"), expect="any")
    # strides / dilations / pads near 2^31 and 2^62 over a 4x4 input.
    geoms = [  # name, k, s, d, pads, valid
        ("k1-s62", 1, P62, 1, [0, 0, 0, 0], True),
        ("k1-s31-d62", 1, P31, P62, [0, 0, 0, 0], True),
        ("k2-d31-p30", 2, 1, P31, [1 << 30] * 4, True),
        ("k2-s62-d62-p61", 2, P62, P62, [1 << 61] * 4, True),
        ("k3-s31-d61-p61", 3, P31 - 1, (1 << 61) - 1, [1 << 61] * 4, True),
        ("k2-d62-p62-0", 2, 1, P62, [P62, P62, 0, 0], True),
        ("k1-s63max", 1, (1 << 63) - 1, 1, [0, 0, 0, 0], True),
        ("neg-pads", 2, 1, 1, [-1, -1, 0, 0], "any"),
        ("k2-d62-nopad", 2, 1, P62, [0, 0, 0, 0], False),
        # 2*2^62+1 taps wide, 2^62 padding each side: the middle tap is
        # the input pixel (valid, 4x4 out) though the window overflows int64.
        ("k3-d62-p62", 3, 1, P62, [P62, P62, P62, P62], True),
        ("k3-d62-nopad", 3, 1, P62, [0, 0, 0, 0], False),
        ("stride0", 2, 0, 1, [0, 0, 0, 0], False),
        ("dilation0", 2, 1, 0, [0, 0, 0, 0], False),
        ("pads-sum-overflow", 1, 1, 1, [P62, P62, P62, P62], False),
    ]
    for gname, k, s, d, pads, valid in geoms:
        for oname, op, quant in [("max-f32", "MaxPool", False), ("avg-i8", "AveragePool", True),
                                 ("conv-f32", "Conv", False)]:
            pool_case(cp, "geom-%s-%s" % (gname, oname), op, quant, [1, 2, 4, 4], k, s, d, pads,
                      valid is not False)


def family_resource(cp):
    """Item 3: Concat chains, Expand, huge convs/matmuls, /dev/zero."""
    def limit_case(name, m, trt=True, slow=False):
        c = cp.case("resource", name)
        c.slow = slow
        p = save(c.path("m.onnx"), m)
        c.add("qopt-run", p, "--seed=1", expect="limit")
        c.add("qopt-run", p, "--plan", "--seed=1", expect="limit")
        c.add("qopt", p, "-passes=default<cpu>", "-emit=plan", "-o", c.path("m.qplan"),
              expect="limit", out=c.path("m.qplan"))
        if trt:
            c.add("qopt", p, "-passes=default<trt>", "-o", c.path("t.onnx"), expect="any")
        return c

    def chain(n, src="x", axis=0, prefix="c"):
        nodes, prev = [], src
        for i in range(n):
            nodes.append(h.make_node("Concat", [prev, prev], ["%s%d" % (prefix, i)], axis=axis))
            prev = "%s%d" % (prefix, i)
        return nodes, prev

    for n in (30, 32, 36, 40):
        nodes, last = chain(n)
        # The interpreter runs each chain up to 2 GiB before refusing: 1 to
        # 15 s depending on how fast the machine gives back 3 GiB (slow).
        limit_case("concat-f32-%d" % n, model(nodes, [vi("x", [1])], [vi(last)]), slow=True)
    for n in (33, 40):
        limit_case("concat-i8-%d" % n, qdq_model(lambda xd: chain(n, xd), [1], qtype="i8"),
                   slow=True)
    nodes, last = chain(40, axis=1)
    limit_case("concat-axis1-40", model(nodes, [vi("x", [1, 1])], [vi(last)]), slow=True)
    nodes, last = chain(40, "k")
    nodes.append(h.make_node("Add", [last, "x"], ["y"]))
    limit_case("concat-const-40", model(nodes, [vi("x", [1])], [vi("y")],
                                        [init("k", np.ones(1, np.float32))]), slow=True)

    def expand(shape, src="x"):
        return [h.make_node("Expand", [src, "shape"], ["e"])], "e"

    for k in (30, 32, 40):
        nodes, out = expand(None)
        limit_case("expand-f32-2^%d" % k,
                   model(nodes + [h.make_node("Neg", [out], ["y"])], [vi("x", [1])], [vi("y")],
                         [ints("shape", [1 << k])]), slow=k == 30)
    nodes, out = expand(None)
    limit_case("expand-2^20x2^20",
               model(nodes, [vi("x", [1])], [vi(out)], [ints("shape", [1 << 20, 1 << 20])]))
    for nm, shp in [("overflow-2^64", [1 << 32, 1 << 32]), ("overflow-2^62x4", [P62, 4]),
                    ("negative", [-4, 4])]:
        c = cp.case("resource", "expand-" + nm)
        nodes, out = expand(None)
        p = save(c.path("m.onnx"), model(nodes, [vi("x", [1])], [vi(out)], [ints("shape", shp)]))
        # Optimizing a model asks for none of its tensors (as for the Concat
        # chain); a negative dim is malformed whatever the size.
        c.add("qopt", p, "-o", c.path("o.onnx"), expect="refuse" if nm == "negative" else "any",
              out=c.path("o.onnx"))
        c.add("qopt-run", p, "--seed=1", expect="refuse")
        c.add("qopt-run", p, "--plan", "--seed=1", expect="refuse")
    nodes, out = expand(None, "k")
    limit_case("expand-const-2^40",
               model(nodes + [h.make_node("Add", [out, "x"], ["y"])], [vi("x", [1])], [vi("y")],
                     [ints("shape", [1 << 40]), init("k", np.ones(1, np.float32))]))
    limit_case("expand-i8-2^33",
               qdq_model(lambda xd: expand(None, xd), [1], [ints("shape", [1 << 33])], qtype="i8"))

    def big_conv(name, img, ker, op="Conv", quant=False, **attrs):
        nodes = [h.make_node("Expand", ["x", "si"], ["image"]),
                 h.make_node("Expand", ["x", "sk"], ["kernel"])]
        inits = [ints("si", img), ints("sk", ker)]
        if quant:
            nodes = [h.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
                     h.make_node("Expand", ["xq", "si"], ["iq"]),
                     h.make_node("Expand", ["xq", "sk"], ["kq"]),
                     h.make_node("DequantizeLinear", ["iq", "s", "z"], ["image"]),
                     h.make_node("DequantizeLinear", ["kq", "s", "z"], ["kernel"])]
            inits += [init("s", np.float32(0.05)), init("z", np.int8(0))]
        nodes.append(h.make_node(op, ["image", "kernel"], ["y"], **attrs))
        limit_case(name, model(nodes, [vi("x", [1])], [vi("y")], inits))

    big_conv("conv-1024-pad512", [1, 1, 1024, 1024], [1, 1, 1024, 1024], pads=[512] * 4)
    big_conv("conv-2048-k512", [1, 1, 2048, 2048], [1, 1, 512, 512])
    big_conv("conv-depthwise-64", [1, 64, 512, 512], [64, 1, 512, 512], group=64, pads=[256] * 4)
    big_conv("conv-i8-1024-pad512", [1, 1, 1024, 1024], [1, 1, 1024, 1024], quant=True,
             pads=[512] * 4)
    big_conv("convtranspose-1024", [1, 1, 1024, 1024], [1, 1, 1024, 1024], op="ConvTranspose")
    big_conv("matmul-2^13", [8192, 8192], [8192, 8192], op="MatMul")
    big_conv("matmul-batched-4096x512", [4096, 512, 512], [4096, 512, 512], op="MatMul")
    big_conv("gemm-2^13", [8192, 8192], [8192, 8192], op="Gemm", transB=1)
    big_conv("matmul-i8-2^13", [8192, 8192], [8192, 8192], op="MatMul", quant=True)
    for op in ("MaxPool", "AveragePool"):
        limit_case("pool-%s-2048-k1024" % op,
                   model([h.make_node("Expand", ["x", "si"], ["image"]),
                          h.make_node(op, ["image"], ["y"], kernel_shape=[1024, 1024])],
                         [vi("x", [1])], [vi("y")], [ints("si", [1, 1, 2048, 2048])]))

    # Endless files.
    neg = save(os.path.join(cp.root, "resource", "neg.onnx"),
               model([h.make_node("Neg", ["x"], ["y"])], [vi("x", [4])], [vi("y", [4])]))
    c = cp.case("resource", "devzero-model-default")
    c.slow = True                       # reads 4 GiB of zeros first
    c.add("qopt", "/dev/zero", expect="limit")
    c = cp.case("resource", "devzero-model")
    c.add("qopt", "/dev/zero", "--max-memory=1M", expect="limit")
    c.add("qopt-run", "/dev/zero", "--max-memory=1M", expect="limit")
    c.add("qopt", "-", "--max-memory=1M", "-o", c.path("o.onnx"), stdin="/dev/zero",
          expect="limit", out=c.path("o.onnx"))
    c = cp.case("resource", "devzero-links")
    for ext in ("onnx", "qir", "qplan", "plan"):
        link = c.symlink("zero." + ext, "/dev/zero")
        c.add("qopt", link, "--max-memory=16M", "-o", c.path("o.onnx"), expect="limit",
              out=c.path("o.onnx"))
        c.add("qopt-run", link, "--max-memory=16M", expect="limit")
    if cp.can_mknod:
        c = cp.case("resource", "mknod-zero-model")
        z = c.chardev("zero.onnx", 1, 5)
        c.add("qopt", z, "--max-memory=64M", expect="limit")
        c.add("qopt-run", z, "--max-memory=64M", "--plan", expect="limit")
    c = cp.case("resource", "devzero-input-default")
    c.slow = True
    c.add("qopt-run", neg, "--input", "x=/dev/zero", expect="limit")
    c = cp.case("resource", "devzero-input")
    c.add("qopt-run", neg, "--input", "x=/dev/zero", "--max-memory=1M", expect="limit")
    c.add("qopt-run", neg, "--input", "x=/dev/zero", "--max-memory=256M", "--plan",
          expect="limit")
    c.add("qopt-run", neg, "--seed=1", "--expect", "y=/dev/zero", "--max-memory=1M",
          expect="limit")
    c.add("qopt-run", neg, "--seed=1", "--op-by-op=/dev/zero", "--max-memory=1M", expect="limit")
    c.add("qopt-run", neg, "--seed=1", "--compare=/dev/zero", "--max-memory=1M", expect="limit")
    c = cp.case("resource", "devurandom")
    c.add("qopt", "/dev/urandom", "--max-memory=64M", expect="limit")
    c.add("qopt-run", neg, "--input", "x=/dev/urandom", "--max-memory=8M", expect="limit")
    c = cp.case("resource", "devzero-plugin")
    c.add("qopt", neg, "-load-pass-plugin=/dev/zero", expect="refuse")
    c.add("qopt-run", neg, "-load-pass-plugin=/dev/zero", "--plan", expect="refuse")


def exact_case(cp, family, name, m, seeds=(1, 2)):
    """Item 4: the plan and default<trt-exact> must give identical outputs."""
    c = cp.case(family, name)
    p = save(c.path("m.onnx"), m)
    for s in seeds:
        c.add("qopt-run", p, "--plan", "--compare", p, "--seed=%d" % s, expect="identical")
    out = c.path("exact.onnx")
    c.add("qopt", p, "-passes=default<trt-exact>", "-o", out, expect="ok")
    c.add("qopt-run", out, "--compare", p, "--seed=%d" % seeds[0], expect="identical", after=True)
    c.add("qopt-run", out, "--plan", "--compare", p, "--seed=%d" % seeds[-1], expect="identical",
          after=True)
    return c


def family_resize(cp):
    coords = [("half_pixel", 13), ("pytorch_half_pixel", 13), ("align_corners", 13),
              ("asymmetric", 13), ("tf_crop_and_resize", 13), ("tf_half_pixel_for_nn", 11),
              ("half_pixel_symmetric", 19)]
    nearests = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
    # name, input shape, scales or None, sizes or None
    geoms = [("up2", [1, 2, 3, 3], [1, 1, 2, 2], None),
             ("down-sizes", [1, 2, 5, 4], None, [1, 2, 3, 2]),
             ("odd-sizes", [1, 2, 3, 5], None, [1, 2, 7, 4]),
             ("frac-scales", [1, 2, 4, 4], [1, 1, 1.5, 0.75], None),
             ("one-pixel", [1, 2, 4, 3], None, [1, 2, 1, 1])]
    roi_default = [0, 0, -0.25, 0.1, 1, 1, 1.2, 0.9]

    def resize_model(coord, opset, nearest, geom, qtype="u8", zp=128, roi=None, extrap=None):
        _, shape, scales, sizes = geom
        inits, ins = [], ["", "", ""]
        if coord == "tf_crop_and_resize":
            inits.append(init("roi", np.array(roi or roi_default, np.float32)))
            ins[0] = "roi"
        elif opset < 13:
            inits.append(init("roi", np.zeros(0, np.float32)))
            ins[0] = "roi"
        if scales is not None:
            inits.append(init("scales", np.array(scales, np.float32)))
            ins[1] = "scales"
        else:
            if opset < 13:
                inits.append(init("scales", np.zeros(0, np.float32)))
                ins[1] = "scales"
            inits.append(ints("sizes", sizes))
            ins[2] = "sizes"
        while ins and ins[-1] == "":
            ins.pop()
        attrs = dict(mode="nearest", coordinate_transformation_mode=coord, nearest_mode=nearest)
        if extrap is not None:
            attrs["extrapolation_value"] = extrap

        def core(xd):
            return [h.make_node("Resize", [xd] + ins, ["r"], name="resize", **attrs)], "r"
        return qdq_model(core, shape, inits, qtype=qtype, zp=zp, opset=opset)

    k = 0
    for coord, opset in coords:
        for nearest in nearests:
            for rep in range(2):
                geom = geoms[(k + rep * 2) % len(geoms)]
                exact_case(cp, "resize", "%s-%s-%s" % (coord, nearest, geom[0]),
                           resize_model(coord, opset, nearest, geom))
            k += 1
    for coord, opset in coords:
        for qtype, zp in (("u8", 0), ("i8", 0)):
            geom = geoms[(len(coord) + zp) % len(geoms)]
            exact_case(cp, "resize", "%s-%s-zp%d-%s" % (coord, qtype, zp, geom[0]),
                       resize_model(coord, opset, "round_prefer_ceil", geom, qtype, zp))
    rois = [[0, 0, -0.5, -0.5, 1, 1, 1.5, 1.5], [0, 0, 0.8, -1.0, 1, 1, 0.2, 2.0]]
    for i, extrap in enumerate([0.0, 1.0, -2.5, 100.0, 0.37]):
        for j, roi in enumerate(rois):
            geom = geoms[(i + j) % 3]
            exact_case(cp, "resize", "tf_crop-extrap%g-roi%d-%s" % (extrap, j, geom[0]),
                       resize_model("tf_crop_and_resize", 13, nearests[(i + j) % 4], geom,
                                    roi=roi, extrap=extrap))


def family_pad(cp):
    shape = [1, 2, 4, 5]
    padsets = [("sym", [0, 0, 1, 1, 0, 0, 1, 1]), ("asym", [0, 0, 2, 0, 0, 0, 1, 3]),
               ("neg", [0, 0, -1, 1, 0, 0, 2, -2]), ("chan", [0, 1, 0, 0, 0, 1, 1, 0])]
    zps = [("u8", 0), ("u8", 128), ("i8", 0)]

    def pad_model(mode, pads, value, qtype, zp, opset=13, axes=None):
        inits = [ints("pads", pads)]
        ins = ["pads"]
        if value is not None:
            inits.append(init("cv", np.float32(value)))
            ins.append("cv")
        if axes is not None:
            if value is None:
                ins.append("")
            inits.append(ints("axes", axes))
            ins.append("axes")

        def core(xd):
            return [h.make_node("Pad", [xd] + ins, ["p"], name="pad", mode=mode)], "p"
        return qdq_model(core, shape, inits, qtype=qtype, zp=zp, opset=opset)

    k = 0
    for value in (None, 0.0, 0.5, -1.0, 100.0):
        for qtype, zp in zps:
            for rep in range(2):
                pname, pads = padsets[(k + rep * 2) % len(padsets)]
                exact_case(cp, "pad", "constant-%s-%s-zp%d-%s" % (
                    "novalue" if value is None else "v%g" % value, qtype, zp, pname),
                    pad_model("constant", pads, value, qtype, zp))
            k += 1
    for mode in ("reflect", "edge"):
        for qtype, zp in zps:
            for pname, pads in padsets:
                exact_case(cp, "pad", "%s-%s-zp%d-%s" % (mode, qtype, zp, pname),
                           pad_model(mode, pads, None, qtype, zp))
    # Pads as attributes (opset 10), axes (opset 18), wrap (opset 19).
    for mode, value in (("constant", 0.25), ("reflect", None), ("edge", None)):
        attrs = dict(mode=mode, pads=[0, 0, 1, 2, 0, 0, 2, 1])
        if value is not None:
            attrs["value"] = value
        m = qdq_model(lambda xd: ([h.make_node("Pad", [xd], ["p"], name="pad", **attrs)], "p"),
                      shape, qtype="u8", zp=128, opset=10)
        exact_case(cp, "pad", "opset10-%s" % mode, m)
    for mode, value in (("constant", None), ("constant", -0.5), ("reflect", None), ("edge", None)):
        exact_case(cp, "pad", "opset18-axes-%s-%s" % (mode, "v" if value is not None else "nov"),
                   pad_model(mode, [1, 2, 2, 0], value, "u8", 128, opset=18, axes=[2, -1]))
    for pname, pads in padsets[:2]:
        exact_case(cp, "pad", "opset19-wrap-%s" % pname,
                   pad_model("wrap", pads, None, "i8", 0, opset=19))


def family_malformed(cp):
    """Item 5: models that must be refused with exit 1 and one line."""
    def refuse_case(name, m=None, text=None, ext="onnx", patches=(), opset=13):
        c = cp.case("malformed", name)
        p = c.path("m." + ext)
        if text is not None:
            write_text(p, text)
        else:
            save(p, m, patches)
        c.add("qopt", p, expect="refuse")
        c.add("qopt", p, "-o", c.path("out.onnx"), expect="refuse", out=c.path("out.onnx"))
        c.add("qopt-run", p, "--seed=1", expect="refuse")
        return c

    x2, y = [vi("x", [1, 4])], [vi("y")]
    img, up = [vi("x", [1, 1, 2, 2])], [vi("y")]

    # Attribute given twice.
    twice = [("softmax-axis", "Softmax", x2, {"axis": 1}, ("axis", 0), ("axis", 1)),
             ("leakyrelu-alpha", "LeakyRelu", x2, {"alpha": 0.1}, ("alpha", 0.2), ("alpha", 0.1)),
             ("transpose-perm", "Transpose", x2, {"perm": [1, 0]}, ("perm", [0, 1]),
              ("perm", [1, 0])),
             ("maxpool-kernel", "MaxPool", img, {"kernel_shape": [1, 1]}, ("kernel_shape", [2, 2]),
              ("kernel_shape", [1, 1])),
             ("resize-mode", "Resize", img, {"mode": "nearest"}, ("mode", "linear"),
              ("mode", "nearest")),
             ("pad-mode", "Pad", img, {"mode": "constant"}, ("mode", "edge"), ("mode", "constant"))]
    for name, op, ins, attrs, other, same in twice:
        for tag, extra in (("differs", other), ("same", same)):
            inputs, inits = ["x"], []
            if op == "Resize":
                inputs += ["", "sc"]
                inits.append(init("sc", np.array([1, 1, 2, 2], np.float32)))
            if op == "Pad":
                inputs.append("pads")
                inits.append(ints("pads", [0, 0, 1, 1, 0, 0, 1, 1]))
            n = h.make_node(op, inputs, ["y"], **attrs)
            n.attribute.extend([h.make_attribute(*extra)])
            refuse_case("attr-twice-%s-%s" % (name, tag), model([n], ins, [vi("y")], inits))
    # Constants with no value or two.
    consts = [("none", []), ("unrelated-only", [("foo", 1)]),
              ("value-and-float", [("value", nh.from_array(np.ones((1, 4), np.float32))),
                                   ("value_float", 1.0)]),
              ("float-and-int", [("value_float", 1.0), ("value_int", 1)]),
              ("ints-and-floats", [("value_ints", [1, 2, 3, 4]), ("value_floats", [1., 2, 3, 4])]),
              ("value-twice", [("value", nh.from_array(np.ones((1, 4), np.float32))),
                               ("value", nh.from_array(np.zeros((1, 4), np.float32)))])]
    for name, attrs in consts:
        cn = h.make_node("Constant", [], ["c"])
        cn.attribute.extend([h.make_attribute(k, v) for k, v in attrs])
        refuse_case("constant-" + name,
                    model([cn, h.make_node("Add", ["x", "c"], ["y"])], x2, y))
    # Graph inputs of element type UNDEFINED (first, second) or an unknown number.
    refuse_case("input-undefined", model([h.make_node("Relu", ["x"], ["y"])],
                                         [vi("x", [1, 4], T.UNDEFINED)], y))
    refuse_case("input2-undefined", model([h.make_node("Add", ["x", "b"], ["y"])],
                                          [vi("x", [1, 4]), vi("b", [1, 4], T.UNDEFINED)], y))
    m = model([h.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 4])], y)
    m.graph.input[0].type.tensor_type.elem_type = 99
    refuse_case("input-elem-type-99", m)
    # Softmax-like axes out of range.
    for op in ("Softmax", "LogSoftmax", "Hardmax"):
        for axis in (2, -3, P31, -P62):
            refuse_case("%s-axis%d" % (op.lower(), axis),
                        model([h.make_node(op, ["x"], ["y"], axis=axis)], x2, y))
    refuse_case("softmax-opset11-axis5", model([h.make_node("Softmax", ["x"], ["y"], axis=5)],
                                               x2, y, opset=11))
    # Split num_outputs mismatch / 0 / negative, split sizes that do not sum.
    ab = [vi("a"), vi("b")]
    for num in (3, 1, 0, -1, P31):
        refuse_case("split-num%d" % num,
                    model([h.make_node("Split", ["x"], ["a", "b"], axis=1, num_outputs=num)],
                          x2, ab, opset=18))
    refuse_case("split-num-and-sizes",
                model([h.make_node("Split", ["x", "sp"], ["a", "b"], axis=1, num_outputs=2)],
                      x2, ab, [ints("sp", [2, 2])], opset=18))
    refuse_case("split-sizes-sum", model([h.make_node("Split", ["x", "sp"], ["a", "b"], axis=1)],
                                         x2, ab, [ints("sp", [1, 1])]))
    # Resize: both scales and sizes, bad lengths, bad values, unknown modes.
    sc = init("sc", np.array([1, 1, 2, 2], np.float32))
    sz = ints("sz", [1, 1, 4, 4])
    for opset in (13, 18):
        refuse_case("resize-both-opset%d" % opset,
                    model([h.make_node("Resize", ["x", "", "sc", "sz"], ["y"])], img, up,
                          [sc, sz], opset=opset))
    for name, arr in (("scales-len3", [1, 2, 2]), ("scales-zero", [1, 1, 0, 2]),
                      ("scales-negative", [1, 1, -2, 2])):
        refuse_case("resize-" + name, model([h.make_node("Resize", ["x", "", "sc"], ["y"])], img,
                                            up, [init("sc", np.array(arr, np.float32))]))
    refuse_case("resize-sizes-len2", model([h.make_node("Resize", ["x", "", "", "sz"], ["y"])],
                                           img, up, [ints("sz", [4, 4])]))
    for attr, value in (("mode", "bogus"), ("mode", ""), ("mode", "NEAREST"), ("mode", "bilinear"),
                        ("coordinate_transformation_mode", "bogus"),
                        ("coordinate_transformation_mode", "tf_half_pixel_for_nearest"),
                        ("nearest_mode", "bogus"), ("nearest_mode", "round")):
        refuse_case("resize-%s-%s" % (attr, value or "empty"),
                    model([h.make_node("Resize", ["x", "", "sc"], ["y"], **{attr: value})], img,
                          up, [sc]))
    pads = ints("pads", [0, 0, 1, 1, 0, 0, 1, 1])
    for value in ("bogus", "", "REFLECT", "edge ", "linear"):
        for opset in (13, 18):
            refuse_case("pad-mode-%s-opset%d" % (value.strip() or "empty", opset),
                        model([h.make_node("Pad", ["x", "pads"], ["y"], mode=value)], img, up,
                              [pads], opset=opset))
    refuse_case("pad-mode-bogus-opset10",
                model([h.make_node("Pad", ["x"], ["y"], mode="bogus",
                                   pads=[0, 0, 1, 1, 0, 0, 1, 1])], img, up, opset=10))
    # Zero points out of their type's range, stored in int32_data.
    for qname, qtype, value in (("i8-300", T.INT8, 300), ("i8-minus129", T.INT8, -129),
                                ("u8-256", T.UINT8, 256), ("u8-minus1", T.UINT8, -1),
                                ("i8-int32max", T.INT8, P31 - 1)):
        for where in ("q", "dq"):
            zp = h.make_tensor("zp", qtype, [], [value])
            s = init("s", np.float32(0.1))
            if where == "q":
                nodes = [h.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
                         h.make_node("DequantizeLinear", ["q", "s"], ["y"])]
                ins = x2
            else:
                nodes = [h.make_node("DequantizeLinear", ["x", "s", "zp"], ["y"])]
                ins = [vi("x", [1, 4], qtype)]
            refuse_case("zp-%s-%s" % (qname, where), model(nodes, ins, y, [s, zp]))
    # .qir texts: opsets below 1, and the schema checks.
    body = ("graph @g(%x: tensor<1x4xf32>) -> (tensor<1x4xf32>) {\n"
            "  %y = onnx.Relu(%x) : tensor<1x4xf32>\n  return %y\n}\n")
    for tag, spec in (("minus1", "ai.onnx:-1"), ("int32min", "ai.onnx:-2147483648"),
                      ("int64min", "ai.onnx:-9223372036854775808"),
                      ("overflow", "ai.onnx:-99999999999999999999"), ("zero", "ai.onnx:0"),
                      ("ms-minus1", "com.microsoft:-1"), ("plus-overflow",
                                                         "ai.onnx:99999999999999999999")):
        refuse_case("qir-opset-" + tag, ext="qir",
                    text='model {ir_version = 7, opset_import = ["%s"]}\n' % spec + body)
    refuse_case("qir-ir-version-negative", ext="qir",
                text='model {ir_version = -1, opset_import = ["ai.onnx:13"]}\n' + body)
    refuse_case("qir-softmax-axis", ext="qir",
                text="graph @g(%x: tensor<1x4xf32>) -> (tensor<1x4xf32>) {\n"
                     "  %y = onnx.Softmax(%x) {axis = 7} : tensor<1x4xf32>\n  return %y\n}\n")
    refuse_case("qir-pad-mode", ext="qir",
                text="graph @g(%x: tensor<1x4xf32>) -> (tensor<1x6xf32>) {\n"
                     "  %p = onnx.Constant() {value = dense<[0, 1, 0, 1]>} : tensor<4xi64>\n"
                     '  %y = onnx.Pad(%x, %p) {mode = "bogus"} : tensor<1x6xf32>\n'
                     "  return %y\n}\n")
    m = model([h.make_node("Relu", ["x"], ["y"])], x2, y)
    m.opset_import[0].version = -1
    refuse_case("onnx-opset-minus1", m)


HOSTILE_NAMES = {
    "newline": "conv\nqopt: error: forged line",
    "crlf": "conv\r\nqopt: error: forged\r",
    "cr": "conv\rqopt: error: overwritten",
    "huge": "c" * (1 << 20),
    "huge-newlines": "ab\n" * ((1 << 20) // 3),
    "nul": "conv\x00tail",
    "escape": "conv\x1b[2J\x1b[31mred\x07",
}
# Invalid UTF-8: a same-length placeholder patched after serialising.
BAD_UTF8 = {"utf8-ff": (b"UTF8QZQZ", b"conv\xff\xfe\xfd\xfc"),
            "utf8-overlong": (b"UTF8QYQY", b"conv\xc0\x80\xe0\x80"),
            "utf8-truncated": (b"UTF8QXQX", b"conv\xe2\x82\xf0\x9f")}


def family_names(cp):
    """Item 6: hostile names; errors stay one line, reports are written."""
    kinds = list(HOSTILE_NAMES) + list(BAD_UTF8)
    locations = ["node", "tensor", "input", "init"]

    def named_model(kind, where, malformed=False):
        if kind in BAD_UTF8:
            bad, patches = BAD_UTF8[kind][0].decode(), [BAD_UTF8[kind]]
        else:
            bad, patches = HOSTILE_NAMES[kind], []
        nm = {loc: default for loc, default in
              (("node", "conv"), ("tensor", "c"), ("input", "x"), ("init", "w"), ("graph", "g"))}
        nm[where] = bad
        # Q/DQ input, a conv whose float weight has no Q/DQ (explain has
        # leftovers to name), a Relu.
        # The Q node carries the name too: -target-opset=9 names it.
        qname = "q" + bad if where == "node" else "q"
        nodes = [h.make_node("QuantizeLinear", [nm["input"], "s", "z"], ["xq"], name=qname),
                 h.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq"),
                 h.make_node("Conv", ["xd", nm["init"]], [nm["tensor"]], name=nm["node"],
                             pads=[1, 1, 1, 1]),
                 h.make_node("Relu", [nm["tensor"]], ["r"], name="relu")]
        if malformed:
            nodes.append(h.make_node("Softmax", ["r"], ["y"], name=nm["node"] + "_sm", axis=9))
        out = "y" if malformed else "r"
        inits = [init("s", np.float32(0.05)), init("z", np.int8(0)),
                 init(nm["init"], np.ones((4, 3, 3, 3), np.float32) / 8)]
        return model(nodes, [vi(nm["input"], [1, 3, 8, 8])], [vi(out)], inits,
                     gname=nm["graph"]), patches

    def valid_case(name, m, patches):
        c = cp.case("names", name)
        p = save(c.path("m.onnx"), m, patches)
        c.add("qopt", p, "--report=" + c.path("r.svg"), expect="ok")
        c.add("qopt", p, "--report=" + c.path("r.html"), expect="ok")
        c.add("qopt", p, "--explain=trt", "--report=" + c.path("r.json"), expect="ok")
        c.add("qopt", p, "-target-opset=9", "-o", c.path("nine.onnx"), expect="refuse",
              out=c.path("nine.onnx"), reason=b"need opset 10")
        c.add("qopt-run", p, "--seed=1", expect="ok")
        c.add("qopt", p, "-o", c.path("out.onnx"), expect="ok")
        c.add("qopt-run", c.path("out.onnx"), "--compare", p, "--seed=1", expect="identical",
              after=True)
        return c

    for i, kind in enumerate(kinds):
        for j, where in enumerate(locations):
            if kind.startswith("huge") and where == "init" or (i + j) % 3 == 2 and where != "node":
                continue
            valid_case("%s-%s" % (kind, where), *named_model(kind, where))
    for kind in ("newline", "huge", "nul", "utf8-ff"):
        valid_case("%s-graph" % kind, *named_model(kind, "graph"))
    for kind in kinds:
        c = cp.case("names", "malformed-%s" % kind)
        p = save(c.path("m.onnx"), *named_model(kind, "node", malformed=True))
        why = b"not an axis of rank 4"
        c.add("qopt", p, expect="refuse", reason=why)
        c.add("qopt", p, "--report=" + c.path("r.html"), expect="refuse",
              out=c.path("r.html"), reason=why)
        c.add("qopt-run", p, "--seed=1", expect="refuse", reason=why)


def family_upsample(cp):
    """Item 7: opset 7-9 Upsample through default<trt> / default<ort>."""
    scalesets = [("2x2", [1, 1, 2, 2]), ("1x3", [1, 1, 1, 3]), ("1.5x2", [1, 1, 1.5, 2]),
                 ("batch2", [2, 1, 2, 2])]
    k = 0
    for opset in (7, 8, 9):
        for mode in ("nearest", "linear"):
            for rep in range(2):
                sname, scales = scalesets[(k + rep) % len(scalesets)]
                k += 1
                inits = []
                if opset >= 9:
                    inits.append(init("scales", np.array(scales, np.float32)))
                    up = h.make_node("Upsample", ["r", "scales"], ["u"], name="up", mode=mode)
                else:
                    up = h.make_node("Upsample", ["r"], ["u"], name="up", mode=mode,
                                     scales=[float(v) for v in scales])
                pre = (h.make_node("Relu", ["x"], ["r"], name="relu") if rep == 0 else
                       h.make_node("Conv", ["x", "w"], ["r"], name="conv", pads=[1, 1, 1, 1]))
                if rep:
                    inits.append(init("w", np.full((2, 2, 3, 3), 0.125, np.float32)))
                nodes = [pre, up]
                m = model(nodes, [vi("x", [1, 2, 3, 3])], [vi("u")], inits, opset=opset)
                upsample_case(cp, "opset%d-%s-%s-%s" % (opset, mode, sname, pre.op_type.lower()), m)
    # Scales from a Constant node (opset 9), and Upsample feeding a conv.
    m = model([h.make_node("Constant", [], ["scales"],
                           value=nh.from_array(np.array([1, 1, 2, 2], np.float32))),
               h.make_node("Upsample", ["x", "scales"], ["u0"], mode="nearest"),
               h.make_node("Conv", ["u0", "w"], ["u"])],
              [vi("x", [1, 2, 3, 3])], [vi("u")],
              [init("w", np.full((1, 2, 1, 1), 0.5, np.float32))], opset=9)
    upsample_case(cp, "opset9-constant-scales-conv", m)
    m = model([h.make_node("Upsample", ["x"], ["u"], mode="nearest", scales=[1.0, 1.0, 3.0, 3.0])],
              [vi("x", [1, 1, 2, 2])], [vi("u")], opset=7)
    upsample_case(cp, "opset7-plain-3x3", m)


def upsample_case(cp, name, m):
    c = cp.case("upsample", name)
    p = save(c.path("m.onnx"), m)
    c.add("qopt", p, "-passes=default<trt>", "-o", c.path("trt.onnx"), expect="ok")
    c.add("qopt-run", c.path("trt.onnx"), "--compare", p, "--seed=1", expect="identical",
          after=True)
    c.add("qopt", p, "-passes=default<ort>", "-o", c.path("ort.onnx"), expect="ok")
    c.add("qopt-run", p, "--seed=1", expect="ok")
    c.add("qopt-run", p, "--plan", "--compare", p, "--seed=1", expect="any")


# --- plan files --------------------------------------------------------------

def plan_models():
    shape = [1, 4, 6, 6]
    pool = qdq_model(lambda xd: ([h.make_node("MaxPool", [xd], ["p"], kernel_shape=[2, 2],
                                              strides=[2, 2])], "p"), shape, qtype="i8")
    avg = qdq_model(lambda xd: ([h.make_node("AveragePool", [xd], ["p"], kernel_shape=[3, 3],
                                             strides=[1, 1], pads=[1, 1, 1, 1])], "p"), shape)
    resize = qdq_model(lambda xd: ([h.make_node("Resize", [xd, "", "sc"], ["r"], mode="nearest")],
                                   "r"), shape, [init("sc", np.array([1, 1, 2, 2], np.float32))],
                       zp=128)
    pad = qdq_model(lambda xd: ([h.make_node("Pad", [xd, "pads"], ["p"], mode="edge")], "p"),
                    shape, [ints("pads", [0, 0, 1, 2, 0, 0, 2, 1])], zp=128)
    concat = qdq_model(lambda xd: ([h.make_node("Relu", [xd], ["r"]),
                                    h.make_node("Concat", [xd, "r"], ["c"], axis=1)], "c"), shape,
                       qtype="i8")
    return {"maxpool": pool, "avgpool": avg, "resize": resize, "pad": pad, "concat": concat,
            "conv": qconv_model(8, 6)}


def family_plan_base(cp):
    bases = []
    for name, m in plan_models().items():
        c = cp.case("plan", "base-" + name)
        p = save(c.path("m.onnx"), m)
        c.add("qopt", p, "-passes=default<cpu>", "-emit=plan", "-o", c.path("m.qplan"), expect="ok")
        c.add("qopt", p, "-passes=default<cpu>", "-emit=plan-text", "-o", c.path("m.plan"),
              expect="ok")
        c.add("qopt-run", c.path("m.qplan"), "--seed=1", "-o", c.path("a.npz"), expect="ok",
              after=True)
        c.add("qopt-run", c.path("m.plan"), "--seed=1", "-o", c.path("b.npz"), expect="ok")
        c.add("qopt-run", c.path("m.plan"), "--run-plan-pass=assign-arena", expect="ok")
        bases.append((name, c))
    return bases


PLAN_NUMBER = re.compile(r"(?<![\w.\-])-?\d+(?![\w.])")
PLAN_KEYS = ("window", "shape", "stride", "geometry", "rows", "columns", "pads", "tensor", "arena",
             "conv", "pool", "copy", "resize", "table:", "broadcast", "placement", "pieces", "dims",
             "kernel", "gemm", "pad", "steps", "inputs", "outputs")


def plan_positions(text):
    """(line index, token index, key) of the numbers worth mutating."""
    out = []
    for li, line in enumerate(text.split("\n")):
        if line.startswith("resources:") or line.startswith("  blob") or ":" not in line:
            if line.startswith("resources:"):
                break
            continue
        key, rest = line.split(":", 1)
        if not any(k.rstrip(":") in key for k in PLAN_KEYS):
            continue
        rest = re.sub(r'"[^"]*"', lambda m: " " * len(m.group(0)), rest.split("#")[0])
        for ti, _ in enumerate(PLAN_NUMBER.finditer(rest)):
            out.append((li, ti, key))
    return out


def mutate_plan(text, li, ti, value):
    lines = text.split("\n")
    key, rest = lines[li].split(":", 1)
    body, hashpart = (rest.split("#", 1) + [None])[:2]
    masked = re.sub(r'"[^"]*"', lambda m: " " * len(m.group(0)), body)
    match = list(PLAN_NUMBER.finditer(masked))[ti]
    body = body[:match.start()] + str(value) + body[match.end():]
    lines[li] = key + ":" + body + ("#" + hashpart if hashpart is not None else "")
    return "\n".join(lines)


def family_plan_mutations(cp, bases, per_model=6):
    for name, base in bases:
        tpath, bpath = base.path("m.plan"), base.path("m.qplan")
        if not (os.path.exists(tpath) and os.path.exists(bpath)):
            cp.skipped.append("plan mutations of %s: no base plan" % name)
            continue
        with open(tpath) as f:
            text = f.read()
        positions = plan_positions(text)
        rng = random.Random(zlib.crc32(name.encode()))
        # Geometry lines first (window, shape, stride, geometry), then others.
        geo = [p for p in positions if any(k in p[2] for k in ("window", "shape", "stride",
                                                                "geometry", "rows", "columns"))]
        rest = [p for p in positions if p not in geo]
        picks = rng.sample(geo, min(len(geo), per_model - 2))
        picks += rng.sample(rest, min(len(rest), per_model - len(picks)))
        for li, ti, key in sorted(picks):
            c = cp.case("plan", "mut-%s-%s-L%d-T%d" % (name, re.sub(r"\W+", "_", key.strip()),
                                                        li + 1, ti))
            for v in EDGE_VALUES:
                p = write_text(c.path("v%s.plan" % v), mutate_plan(text, li, ti, v))
                c.add("qopt-run", p, "--seed=1", expect="any")
            c.add("qopt-run", c.path("v%d.plan" % P31), "--run-plan-pass=assign-arena",
                  expect="any")
        with open(bpath, "rb") as f:
            data = f.read()
        c = cp.case("plan", "trunc-" + name)
        for cut in sorted({0, 4, 8, 16, len(data) // 3, len(data) // 2, len(data) - 1}):
            p = c.path("t%d.qplan" % cut)
            with open(p, "wb") as f:
                f.write(data[:cut])
            c.add("qopt-run", p, "--seed=1", expect="refuse")
        flips = rng.sample(range(8, len(data)), min(4, len(data) - 8))
        for pos in sorted(flips):
            p = c.path("f%d.qplan" % pos)
            with open(p, "wb") as f:
                f.write(data[:pos] + bytes([data[pos] ^ 0xff]) + data[pos + 1:])
            c.add("qopt-run", p, "--seed=1", expect="any")


# ---------------------------------------------------------------------------
# Running and classifying
# ---------------------------------------------------------------------------

def snapshot_nodes(case):
    bad = []
    for p, kind in case.nodes.items():
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            bad.append("%s is gone" % os.path.basename(p))
            continue
        if kind[0] == "chr":
            if not stat.S_ISCHR(st.st_mode) or st.st_rdev != kind[1]:
                bad.append("%s is no longer the character device" % os.path.basename(p))
        elif kind[0] == "fifo":
            if not stat.S_ISFIFO(st.st_mode):
                bad.append("%s is no longer a FIFO" % os.path.basename(p))
        elif kind[0] == "link":
            if not stat.S_ISLNK(st.st_mode) or os.readlink(p) != kind[1]:
                bad.append("%s is no longer the symlink" % os.path.basename(p))
    return bad


def restore_nodes(case):
    for p, kind in case.nodes.items():
        if os.path.lexists(p):
            st = os.lstat(p)
            ok = ((kind[0] == "chr" and stat.S_ISCHR(st.st_mode) and st.st_rdev == kind[1]) or
                  (kind[0] == "fifo" and stat.S_ISFIFO(st.st_mode)) or
                  (kind[0] == "link" and stat.S_ISLNK(st.st_mode)))
            if ok:
                continue
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
        if kind[0] == "chr":
            os.mknod(p, 0o666 | stat.S_IFCHR, kind[1])
        elif kind[0] == "fifo":
            os.mkfifo(p)
        else:
            os.symlink(kind[1], p)


def tmp_files(case):
    found = []
    for d, dirs, files in os.walk(case.dir):
        for n in files + dirs:
            if ".tmp-" in n:
                found.append(os.path.join(d, n))
    return found


def fifo_reader(path, done):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while True:
            finished = done.is_set()
            try:
                while os.read(fd, 1 << 16):
                    pass
            except BlockingIOError:
                pass
            if finished:
                break
            time.sleep(0.005)
    finally:
        os.close(fd)


def fifo_writer(path, data, done):
    fd = None
    while fd is None and not done.is_set():
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:      # ENXIO: no reader yet
            time.sleep(0.005)
    if fd is None:
        return
    os.set_blocking(fd, True)
    try:
        os.write(fd, data)
    except OSError:          # EPIPE: the reader went away
        pass
    finally:
        os.close(fd)


class Runner:
    def __init__(self, bins, work, timeout):
        self.bins, self.work, self.timeout = bins, work, timeout
        self.lock = threading.Lock()
        self.failures = []
        self.counts = dict.fromkeys(CLASSES, 0)
        self.runs = 0
        self.times = []                 # (seconds, case, command)

    def show(self, run):
        words = [run.tool] + run.args
        text = " ".join(shlex.quote(w) for w in words).replace(self.work, "$W")
        if run.stdin:
            text += " < " + run.stdin.replace(self.work, "$W")
        if run.fsize:
            text = "(ulimit -f %d) " % (run.fsize // 512) + text
        if run.kill_after:
            text += " (%s after %gs)" % (run.sig.name, run.kill_after)
        return text

    def execute(self, run, case):
        argv = [self.bins[run.tool]] + run.args

        def limits():
            resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if run.fsize:
                resource.setrlimit(resource.RLIMIT_FSIZE, (run.fsize, run.fsize))

        done = threading.Event()
        helpers = [threading.Thread(target=fifo_reader, args=(f, done)) for f in run.fifo_read]
        if run.fifo_write:
            helpers.append(threading.Thread(target=fifo_writer, args=run.fifo_write + (done,)))
        for t in helpers:
            t.start()
        stdin = open(run.stdin, "rb") if run.stdin else subprocess.DEVNULL
        timed_out = False
        try:
            try:
                proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, preexec_fn=limits,
                                        start_new_session=True, cwd=case.dir)
            except OSError as e:       # the tool cannot be started at all
                return 127, b"", ("sweep: cannot run %s: %s" % (argv[0], e)).encode(), False
            timer = None
            if run.kill_after:
                timer = threading.Timer(run.kill_after,
                                        lambda: proc.poll() is None and proc.send_signal(run.sig))
                timer.start()
            try:
                out, err = proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                out, err = proc.communicate()
            if timer:
                timer.cancel()
        finally:
            done.set()
            for t in helpers:
                t.join()
            if run.stdin:
                stdin.close()
        return proc.returncode, out, err, timed_out

    def run_case(self, case):
        results = []
        failed_before = False
        for run in case.runs:
            if run.after and failed_before:
                continue
            out_existed = run.out and os.path.lexists(run.out)
            kept = {}
            for p in run.keep:
                with open(p, "rb") as f:
                    kept[p] = f.read()
            start = time.time()
            rc, out, err, timed_out = self.execute(run, case)
            fails = self.classify(run, rc, out, err, timed_out)
            # Files: temporaries, devices and FIFOs, outputs of failed runs.
            tmps = tmp_files(case)
            if tmps and not timed_out:
                fails.append(("files-left", "left " + ", ".join(
                    os.path.relpath(t, case.dir) for t in tmps)))
            for t in tmps:
                os.unlink(t)
            bad_nodes = snapshot_nodes(case)
            if bad_nodes:
                fails.append(("files-left", "; ".join(bad_nodes)))
                restore_nodes(case)
            if rc != 0 and not timed_out:
                if run.out and not out_existed and os.path.lexists(run.out):
                    fails.append(("files-left", "failed run left its output %s" %
                                  os.path.basename(run.out)))
                for p, data in kept.items():
                    with open(p, "rb") as f:
                        if f.read() != data:
                            fails.append(("files-left", "failed run changed %s" %
                                          os.path.basename(p)))
            failed_before = rc != 0 or timed_out
            results.append((run, rc, err, fails, time.time() - start))
        with self.lock:
            for run, rc, err, fails, secs in results:
                self.runs += 1
                self.times.append((secs, case.name, self.show(run)))
                for cls, detail in fails:
                    self.counts[cls] += 1
                    detail = detail.replace(self.work, "$W")
                    line = "FAIL %s | %s | %s | %s" % (case.name, self.show(run), cls, detail)
                    self.failures.append(line)
                    print(line, flush=True)
        return results

    def classify(self, run, rc, out, err, timed_out):
        first = first_line(err)
        if timed_out:
            return [("hang", "no exit after %gs; %s" % (self.timeout, first))]
        fails = []
        marker = next((m for m in CRASH_MARKERS if m in err), None)
        died = rc < 0 or rc >= 128
        if run.expect == "signal-ok" and rc == -run.sig:
            died = False
        if marker or died:
            what = ("signal %s" % signal.Signals(-rc).name if rc < 0 else "exit status %d" % rc)
            return [("crash", "%s%s; %s" % (what, ", '%s' on stderr" % marker.decode()
                                              if marker else "", first))]
        if rc not in (0, 1):
            if run.expect != "signal-ok":
                fails.append(("wrong-result", "exit status %d; %s" % (rc, first)))
            return fails
        if rc == 1:
            lines = err.rstrip(b"\n").split(b"\n") if err.strip() else []
            if not lines:
                fails.append(("multi-line-error", "exit status 1 with nothing on stderr"))
            elif len(lines) > 1 and not (QIR_ERROR.match(lines[0]) and len(lines) <= 3):
                fails.append(("multi-line-error", "%d lines: %s" % (len(lines), first)))
        e = run.expect
        if rc == 1 and run.reason and run.reason not in err:
            fails.append(("wrong-result", "the error line lacks its reason ('%s'): %s" % (
                run.reason.decode(), first)))
        if e in ("refuse", "limit") and rc == 0:
            fails.append(("malformed-accepted", "exit status 0 (must be refused)"))
        elif e == "limit" and b"--max-memory" not in err and b"--max-work" not in err:
            fails.append(("wrong-result", "refusal names neither --max-memory nor --max-work: "
                          + first))
        elif e == "ok" and rc != 0:
            fails.append(("wrong-result", "valid input refused: " + first))
        elif e == "identical":
            lines = out.decode("utf-8", "backslashreplace").splitlines()
            odd = [l for l in lines if not IDENTICAL.match(l)]
            if rc != 0 or not lines or odd:
                fails.append(("wrong-result", "not identical: %s%s" % (
                    "; ".join(odd[:3]) if odd else "(no comparison)", "; " + first if first
                    else "")))
        return fails


def first_line(err):
    text = err.decode("utf-8", "backslashreplace").split("\n", 1)[0] if err else ""
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return text[:300] + ("..." if len(text) > 300 else "")


QUICK_QUOTA = {"device": 8, "pool": 6, "resource": 6, "resize": 8, "pad": 6, "malformed": 10,
               "names": 5, "upsample": 4, "plan": 3}
QUICK_PLAN_MUTATIONS = 5


def pick_quick(cases, quota):
    out = []
    for fam, n in quota.items():
        pool = [c for c in cases if c.family == fam and not c.slow]
        if not pool or n <= 0:
            continue
        step = len(pool) / min(n, len(pool))
        out += [pool[int(i * step)] for i in range(min(n, len(pool)))]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="/work/main/build/bin")
    ap.add_argument("--work")
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="run only the cases whose name contains this")
    args = ap.parse_args()

    bins = {t: os.path.join(os.path.abspath(args.bin), t) for t in ("qopt", "qopt-run")}
    for t, p in bins.items():
        if not os.access(p, os.X_OK):
            sys.exit("sweep: %s not found in %s" % (t, args.bin))
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="qopt-sweep-"))
    os.makedirs(work, exist_ok=True)
    start = time.time()
    cp = Corpus(work)
    for fam in (family_device, family_pool, family_resource, family_resize, family_pad,
                family_malformed, family_names, family_upsample):
        fam(cp)
    bases = family_plan_base(cp)
    phase1 = list(cp.cases)
    if args.quick:
        phase1 = pick_quick(phase1, {k: v for k, v in QUICK_QUOTA.items()})
    if args.only:
        phase1 = [c for c in phase1 if args.only in c.name or "/base-" in c.name]
    runner = Runner(bins, work, args.timeout)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(runner.run_case, phase1))
        # Plan mutations come from the plans the first phase wrote.
        before = len(cp.cases)
        family_plan_mutations(cp, [(n, c) for n, c in bases if c in phase1])
        phase2 = cp.cases[before:]
        if args.quick:
            phase2 = pick_quick(phase2, {"plan": QUICK_PLAN_MUTATIONS})
        if args.only:
            phase2 = [c for c in phase2 if args.only in c.name]
        list(pool.map(runner.run_case, phase2))
    for note in cp.skipped:
        print("sweep: skipped " + note)
    n_cases = len(phase1) + len(phase2)
    k = runner.counts
    print("sweep: %d cases, %d runs; crashes %d, hangs %d, malformed accepted %d, multi-line "
          "errors %d, files left %d, wrong results %d" % (
              n_cases, runner.runs, k["crash"], k["hang"], k["malformed-accepted"],
              k["multi-line-error"], k["files-left"], k["wrong-result"]))
    for secs, name, cmd in sorted(runner.times, reverse=True)[:5]:
        print("sweep: slow run %.1f s: %s | %s" % (secs, name, cmd), file=sys.stderr)
    print("sweep: %.0f s, work directory %s" % (time.time() - start, work), file=sys.stderr)
    failed = any(k.values())
    if not args.work and not failed:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
