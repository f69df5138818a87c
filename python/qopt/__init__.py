"""qopt: optimizer and INT8 compiler for explicitly quantized (Q/DQ) ONNX models.

    import qopt
    m = qopt.load("model.onnx")              # a path, ONNX bytes, or .qir text
    cost = m.run_passes("default<trt>")      # the lossy steps' cost, as dicts
    e = m.explain("trt")                     # where the result leaves INT8, and why
    print(e.summary["leftovers"], e.leftovers[0]["reason"], e.leftovers[0]["fix"])
    m.save("model.trt.onnx")                 # for trtexec

    plan = qopt.Plan(qopt.load("model.onnx"), threads=2)   # default<cpu>, then the plan
    outputs = plan.run({"input": x})         # dict of numpy arrays
    plan.save("model.qplan")                 # qopt.Plan("model.qplan") reads it back

Errors raise qopt.Error with qopt's one-line message.
"""

import json as _json
import os as _os

from ._qopt import Error  # noqa: F401  (qopt's one-line errors)
from . import _qopt

__all__ = ["Error", "Model", "Explanation", "Plan", "load", "passes"]


def load(source, base_dir=None):
    """A Model from a path (.onnx or .qir), ONNX bytes (e.g.
    onnx.ModelProto.SerializeToString()), or .qir text. ONNX bytes with
    external data need `base_dir`, the folder their files are in (never
    the working directory by default)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        head = data.lstrip()[:64]
        if head.startswith((b"graph @", b"model {", b"//", b"!")):
            return Model(_qopt.Model.from_qir(data.decode("utf-8"), "<bytes>"))
        folder = _os.fspath(base_dir) if base_dir is not None else ""
        return Model(_qopt.Model.from_onnx(data, folder, "<bytes>"))
    if isinstance(source, _os.PathLike):
        source = _os.fspath(source)
    if not isinstance(source, str):
        raise TypeError("qopt.load takes a path, ONNX bytes or .qir text, not %s"
                        % type(source).__name__)
    if "\n" in source or source.lstrip().startswith(("graph @", "model {")):
        return Model(_qopt.Model.from_qir(source, "<text>"))
    return Model(_qopt.Model.from_file(source))


def passes():
    """`qopt -print-passes`: every pass, analysis and pipeline."""
    return _qopt.passes()


class Explanation:
    """Where a model leaves INT8 under one backend's rules, as
    `qopt --explain` and `--report=x.json` (docs/report-schema.md) give it.

    summary    dict: total_macs, int8_macs, int4_weight_only_macs, fp8_macs, units,
               copies, requantizes, reformats, float_ops, float_islands,
               unfused_qdq, leftovers
    leftovers  list of dicts: kind, nodes, ops, reason, fix (the -passes
               pipeline that removes it, or ""), fix_in_model, float_macs
    units      list of dicts: the fused units
    text       explain's text, as `qopt --explain` prints it
    """

    def __init__(self, backend, report_json, text):
        self.backend = backend
        self.report = _json.loads(report_json)
        self.summary = self.report["summary"]
        self.units = self.report["units"]
        self.leftovers = []
        for left in self.report["leftovers"]:
            entry = dict(left)
            entry["fix"] = left.get("fix_pipeline", "")
            self.leftovers.append(entry)
        self.hints = self.report.get("hints", [])
        self.import_problems = self.report.get("import_problems", [])
        self.text = text

    def __repr__(self):
        return "<qopt.Explanation %s: %d units, %d leftovers>" % (
            self.backend, self.summary["units"], self.summary["leftovers"])

    def __str__(self):
        return self.text


class Model:
    """A model in qopt's IR. Passes rewrite it in place."""

    def __init__(self, native):
        self._native = native

    def run_passes(self, pipeline):
        """Runs a pipeline (`-passes=` syntax, e.g. "default<trt>"); returns
        the cost report of its lossy steps: a list of dicts with pass, kind
        ("regrid" or "note"), tensor, max_error_lsb and detail."""
        return self._native.run_passes(pipeline)

    def explain(self, backend="trt", check_fixes=True):
        """The model's fusion plan under `backend` ("trt", "trt:8.6", "ort",
        "cpu"); with check_fixes, each fix is checked by running it."""
        report, text = self._native.explain(backend, check_fixes)
        return Explanation(backend, report, text)

    def to_bytes(self):
        """The model as ONNX bytes (onnx.load_from_string reads them)."""
        return self._native.to_onnx()

    def qir(self):
        """The model's .qir text."""
        return self._native.qir()

    def save(self, path):
        """Writes the model; the extension picks ONNX or .qir."""
        self._native.save(_os.fspath(path))

    def __repr__(self):
        return "<qopt.Model %s>" % self._native.source


class Plan:
    """qopt's INT8 CPU plan.

    Plan(model, threads=0, passes="default<cpu>", dims=None,
    int4_activations="f32"): built from a Model (copied: the model is left
    as it was) or a model path, after the pipeline (passes="" for none, e.g.
    for a model that ran default<cpu> already); dims gives symbolic dims
    their values (others are 1). int4_activations="int8" rounds the rows of
    INT4 weight-only MatMuls to int8 (faster, lossy; qopt-run's
    -int4-activations).
    Plan(path) reads a .qplan file or a plan's text form.
    threads: 0 uses every core. The GIL is released while a plan runs.
    """

    def __init__(self, source, threads=0, passes="default<cpu>", dims=None,
                 int4_activations="f32"):
        if int4_activations not in ("f32", "int8"):
            raise ValueError("int4_activations is 'f32' or 'int8', not %r"
                             % (int4_activations,))
        if isinstance(source, _os.PathLike):
            source = _os.fspath(source)
        if isinstance(source, str) and source.endswith((".qplan", ".plan")):
            self._native = _qopt.Plan.from_file(source, threads)
            return
        if isinstance(source, str):
            model = load(source)
        elif isinstance(source, Model):
            model = load(source.qir())  # a copy; .qir holds q.* ops too
        else:
            raise TypeError("qopt.Plan takes a Model or a path, not %s"
                            % type(source).__name__)
        self._native = _qopt.Plan.from_model(model._native, passes, threads,
                                             dict(dims or {}),
                                             int4_activations == "int8")

    @property
    def inputs(self):
        return self._native.inputs

    @property
    def outputs(self):
        return self._native.outputs

    @property
    def isa(self):
        """The kernels' instruction set ("avx512vnni", "avx2", ...)."""
        return self._native.isa

    @property
    def threads(self):
        return self._native.threads

    @threads.setter
    def threads(self, n):
        self._native.threads = n

    def run(self, inputs):
        """Runs the plan on a dict of numpy arrays (by input name, of the
        plan's shapes and dtypes); returns the outputs by name."""
        return self._native.run(dict(inputs))

    def save(self, path, text=False):
        """Writes a .qplan file (or, with text=True, the plan's text form)."""
        self._native.save(_os.fspath(path), text)

    def __repr__(self):
        return "<qopt.Plan inputs=%s outputs=%s isa=%s>" % (
            self.inputs, self.outputs, self.isa)
