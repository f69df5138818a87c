#!/usr/bin/python3
"""Writes fp32 ONNX models in the QDQ form ONNX Runtime's quantize_static
gives them (QuantFormat.QDQ, activations QUInt8, weights QInt8 per
channel, MinMax calibration), for checks beyond torch.ao's exports.

ONNX Runtime's Python quantizer is not installable here (no PyPI), so this
follows what it writes, from its documentation and output files:
  - calibration: ONNX Runtime (onnxruntime-node 1.30, test/ort/ort_reference.js)
    runs the model with every float tensor as an output on seeded image-like
    inputs; each tensor's range is [min(min, 0), max(max, 0)];
  - activations: uint8, scale (max - min) / 255, zero point round(-min /
    scale); one QuantizeLinear -> DequantizeLinear pair per tensor, on every
    float input and output of an op ONNX Runtime quantizes (Conv, Gemm,
    MatMul, Add, Mul, pools, Concat, data movement, Sigmoid, Softmax, ...),
    no Cast between them;
  - a Relu or Clip right after a Conv/Gemm/MatMul with one consumer is
    removed, its output's range going to the op's output (ONNX Runtime's
    QDQRemovableActivation);
  - weights: int8 initializers, symmetric per output channel (axis 0; a
    Gemm/MatMul's per column), behind a DequantizeLinear; biases: int32
    initializers on input scale x weight scale, zero point 0.
The fp32 input is copied beside the output as NAME_fp32.onnx (the twin).

    /usr/bin/python3 bench/gen_ort_qdq_models.py OUTDIR MODEL_fp32.onnx ...

Each MODEL_fp32.onnx (or MODEL.onnx) becomes OUTDIR/ortqdq_MODEL_qat.onnx and
OUTDIR/ortqdq_MODEL_fp32.onnx. Needs node and onnxruntime-node 1.30 (the
test suite's; ORT_NODE_DIR or the repository's node_modules).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_REFERENCE = os.path.join(HERE, "..", "test", "ort", "ort_reference.js")
QUANTIZED_OPS = {
    "Conv", "Gemm", "MatMul", "Add", "Mul", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Concat", "Reshape", "Transpose", "Flatten",
    "Squeeze", "Unsqueeze", "Resize", "Split", "Sigmoid", "Softmax",
    "LeakyRelu", "Relu", "Clip", "HardSigmoid",
}
WEIGHTED = {"Conv", "Gemm", "MatMul"}
REMOVABLE = {"Relu", "Clip"}


def calibrate(model, seeds=4):
    """min/max of every float tensor, from ONNX Runtime on seeded inputs."""
    inferred = onnx.shape_inference.infer_shapes(model)
    floats = {vi.name for vi in list(inferred.graph.value_info) + list(inferred.graph.output)
              if vi.type.tensor_type.elem_type == T.FLOAT}
    debug = onnx.ModelProto()
    debug.CopyFrom(inferred)
    have = {o.name for o in debug.graph.output}
    for n in debug.graph.node:
        for o in n.output:
            if o in floats and o not in have:
                debug.graph.output.append(h.make_tensor_value_info(o, T.FLOAT, None))
                have.add(o)
    ranges = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "debug.onnx")
        onnx.save(debug, path)
        for seed in range(1, seeds + 1):
            out = os.path.join(tmp, f"run{seed}")
            subprocess.run(["node", ORT_REFERENCE, path, out, "--seed", str(seed),
                            "--dist", "imagenet"], check=True)
            with open(os.path.join(out, "manifest.json")) as f:
                manifest = json.load(f)
            for entry in manifest["inputs"] + manifest["outputs"]:
                a = np.load(os.path.join(out, entry["file"]))
                if a.dtype != np.float32 or a.size == 0:
                    continue
                lo, hi = float(a.min()), float(a.max())
                old = ranges.get(entry["name"], (lo, hi))
                ranges[entry["name"]] = (min(old[0], lo), max(old[1], hi))
    return ranges


def u8_params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zero = int(round(-lo / scale))
    return np.float32(scale), np.uint8(min(max(zero, 0), 255))


def quantize(model, ranges):
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    producer = {o: n for n in g.node for o in n.output}
    outputs = {o.name for o in g.output}

    # QDQRemovableActivation: Conv/Gemm/MatMul -> Relu/Clip with one consumer.
    removed = {}
    for n in list(g.node):
        if n.op_type not in REMOVABLE:
            continue
        p = producer.get(n.input[0])
        if p is None or p.op_type not in WEIGHTED or len(consumers[n.input[0]]) != 1 \
                or n.input[0] in outputs:
            continue
        if n.op_type == "Clip" and (len(n.input) < 2 or n.input[1] not in inits or
                                    nh.to_array(inits[n.input[1]]).item() != 0):
            continue
        removed[n.input[0]] = n.output[0]
        ranges[n.input[0]] = ranges.get(n.output[0], ranges.get(n.input[0]))
        g.node.remove(n)
    for n in g.node:
        for k, i in enumerate(n.input):
            for before, after in removed.items():
                if i == after:
                    n.input[k] = before
    for o in g.output:
        for before, after in removed.items():
            if o.name == after:
                # A removed activation that is a graph output keeps its name.
                for n in g.node:
                    for k, out in enumerate(n.output):
                        if out == before:
                            n.output[k] = after
                    for k, i in enumerate(n.input):
                        if i == before:
                            n.input[k] = after
                ranges[after] = ranges[before]

    new_nodes, new_inits = [], []
    activation_qdq = {}

    def activation(name):
        """The DQ output standing for float tensor `name` (made once)."""
        if name in activation_qdq:
            return activation_qdq[name]
        if name not in ranges:
            return None
        scale, zero = u8_params(*ranges[name])
        s, z = name + "_scale", name + "_zero_point"
        new_inits.append(nh.from_array(np.array(scale, np.float32), s))
        new_inits.append(nh.from_array(np.array(zero, np.uint8), z))
        new_nodes.append(h.make_node("QuantizeLinear", [name, s, z], [name + "_QuantizeLinear_Output"],
                                     name=name + "_QuantizeLinear"))
        new_nodes.append(h.make_node("DequantizeLinear", [name + "_QuantizeLinear_Output", s, z],
                                     [name + "_DequantizeLinear_Output"],
                                     name=name + "_DequantizeLinear"))
        activation_qdq[name] = (name + "_DequantizeLinear_Output", float(scale))
        return activation_qdq[name]

    def weight(name, axis):
        w = nh.to_array(inits[name]).astype(np.float32)
        moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
        amax = np.maximum(np.abs(moved).max(axis=1), 1e-12)
        scale = (amax / 127.0).astype(np.float32)
        shape = [1] * w.ndim
        shape[axis] = -1
        q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
        qn, s, z = name + "_quantized", name + "_scale", name + "_zero_point"
        new_inits.extend([nh.from_array(q, qn), nh.from_array(scale, s),
                          nh.from_array(np.zeros(len(scale), np.int8), z)])
        new_nodes.append(h.make_node("DequantizeLinear", [qn, s, z], [name + "_DequantizeLinear_Output"],
                                     axis=axis, name=name + "_DequantizeLinear"))
        return name + "_DequantizeLinear_Output", scale

    def bias(name, input_scale, weight_scale):
        b = nh.to_array(inits[name]).astype(np.float64)
        scale = (input_scale * weight_scale.astype(np.float64)).astype(np.float32)
        q = np.round(b / scale).astype(np.int32)
        qn, s, z = name + "_quantized", name + "_scale", name + "_zero_point"
        new_inits.extend([nh.from_array(q, qn), nh.from_array(scale, s),
                          nh.from_array(np.zeros(len(scale), np.int32), z)])
        new_nodes.append(h.make_node("DequantizeLinear", [qn, s, z], [name + "_DequantizeLinear_Output"],
                                     axis=0, name=name + "_DequantizeLinear"))
        return name + "_DequantizeLinear_Output"

    rewired = []
    for n in g.node:
        if n.op_type not in QUANTIZED_OPS:
            rewired.append(n)
            continue
        inputs = list(n.input)
        if n.op_type in WEIGHTED and len(inputs) >= 2 and inputs[1] in inits:
            x = activation(inputs[0])
            transposed = n.op_type == "Gemm" and any(
                a.name == "transB" and a.i for a in n.attribute)
            axis = 0 if n.op_type == "Conv" or transposed else 1
            if x is not None and nh.to_array(inits[inputs[1]]).ndim >= 2:
                inputs[0] = x[0]
                inputs[1], ws = weight(inputs[1], axis)
                if len(inputs) > 2 and inputs[2] in inits:
                    inputs[2] = bias(inputs[2], x[1], ws)
        else:
            for k, i in enumerate(inputs):
                if i and i not in inits and (n.op_type not in ("Reshape", "Resize", "Split",
                                                               "Squeeze", "Unsqueeze", "Clip")
                                             or k == 0):
                    x = activation(i)
                    if x is not None:
                        inputs[k] = x[0]
        del n.input[:]
        n.input.extend(inputs)
        rewired.append(n)
        for o in n.output:
            activation(o)
    # Topological order: each Q/DQ right after its tensor's producer.
    made = {}
    for node in new_nodes:
        made.setdefault(node.input[0], []).append(node)
    ordered = []

    def emit(node):
        ordered.append(node)
        for o in node.output:
            for m in made.pop(o, []):
                emit(m)

    names = [i.name for i in g.input] + [i.name for i in g.initializer]
    for name in names + [i.name for i in new_inits]:
        for m in made.pop(name, []):
            emit(m)
    for n in rewired:
        emit(n)
    del g.node[:]
    g.node.extend(ordered)
    g.initializer.extend(new_inits)
    used = {i for n in g.node for i in n.input}
    for init in list(g.initializer):
        if init.name not in used:
            g.initializer.remove(init)
    del g.value_info[:]
    return model


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for path in sys.argv[2:]:
        base = os.path.basename(path)[: -len(".onnx")]
        if base.endswith("_fp32"):
            base = base[: -len("_fp32")]
        model = onnx.load(path)
        ranges = calibrate(model)
        quantized = quantize(model, ranges)
        onnx.checker.check_model(quantized)
        onnx.save(quantized, os.path.join(outdir, f"ortqdq_{base}_qat.onnx"))
        shutil.copy(path, os.path.join(outdir, f"ortqdq_{base}_fp32.onnx"))
        print(f"wrote ortqdq_{base}_qat.onnx", flush=True)


if __name__ == "__main__":
    main()
