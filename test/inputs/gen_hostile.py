#!/usr/bin/python3
"""Generate the hostile / malformed inputs of qopt's hardening regression tests.

Usage:
    /usr/bin/python3 test/inputs/gen_hostile.py
        (re)write test/inputs/hostile/*.onnx, *.bin and the symlink
    /usr/bin/python3 test/inputs/gen_hostile.py --nested-if N OUT
        write a model whose If nodes nest N levels deep to OUT (used at test
        time: 10,000 levels is too big to commit as a small file)

Each committed file has exactly one defect, is well under 20 KB, and the output
is deterministic (no randomness; running the script twice gives byte-identical
files).  The .qir hostile inputs are not generated: most live inline in
test/lit/Hostile/*.qir, the rest are hand-written in test/inputs/hostile/.
See test/inputs/hostile/README.md for the list.

Requires onnx (written against 1.12) and numpy, like gen_models.py, whose
helpers this script reuses.  Where onnx.helper or the protobuf Python API
refuse a value (unknown enum numbers, data types newer than onnx 1.12), the
protobuf fields are filled directly or the wire bytes are written by hand.
"""

import os
import sys

import numpy as np
from onnx import ModelProto, TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True   # no __pycache__ from importing gen_models
sys.path.insert(0, HERE)
from gen_models import arr, make_model, qdq_u8_graph, vi  # noqa: E402

OUT = os.path.join(HERE, "hostile")

# Data type numbers (TensorProto.DataType); the newer ones are unknown to onnx 1.12.
TP_COMPLEX64 = 14
TP_FLOAT8E4M3FN = 17
TP_UINT4 = 21

# Files written next to the models.
EXT_DATA = "ext_data.bin"          # 16 bytes: float32 [1, 2, 3, 4]
SYMLINK = "ext_symlink_outside.bin"  # symlink to SYMLINK_TARGET
SYMLINK_TARGET = "/etc/passwd"


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def add_graph(name, w, x_shape=(2, 3), extra_inits=()):
    """x f32 -> Add(x, w) (node 'add') -> y, with initializer w."""
    nodes = [helper.make_node("Add", ["x", w.name], ["y"], name="add")]
    return helper.make_graph(nodes, name, [vi("x", TensorProto.FLOAT, list(x_shape))],
                             [vi("y", TensorProto.FLOAT, list(x_shape))],
                             [w] + list(extra_inits))


def raw_tensor(name, data_type, dims, raw=None):
    """TensorProto filled field by field (make_tensor refuses some of these)."""
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    if raw is not None:
        t.raw_data = raw
    return t


def external_tensor(name, dims, location, offset=None, length=None):
    """float32 initializer whose data is external."""
    t = raw_tensor(name, TensorProto.FLOAT, dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key = k
            e.value = v
    return t


def add_model(name, w, **kw):
    return make_model(add_graph(name, w), **kw)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, payload):
    """Length-delimited protobuf field (wire type 2)."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def varint_field(num, v):
    return varint(num << 3) + varint(v)


# --------------------------------------------------------------------------
# hostile models: one defect each
# --------------------------------------------------------------------------

HOSTILE = {}   # name -> (builder, description)


def hostile(desc):
    def deco(fn):
        HOSTILE[fn.__name__] = (fn, desc)
        return fn
    return deco


# ---- sizes and dimensions ------------------------------------------------

@hostile("float initializer 'w' declaring dims [1048576, 1048576] (2^40 elements, "
         "4 TiB) and carrying no data")
def init_2pow40_elements():
    return add_model("init_2pow40_elements",
                     raw_tensor("w", TensorProto.FLOAT, [1 << 20, 1 << 20]))


@hostile("float initializer 'w' with dims [4294967296, 4294967296, 4] whose product "
         "overflows int64 (no data)")
def init_dims_overflow():
    return add_model("init_dims_overflow",
                     raw_tensor("w", TensorProto.FLOAT, [1 << 32, 1 << 32, 4]))


@hostile("float initializer 'w' with a negative dimension: dims [2, -3], 24 bytes raw_data")
def init_negative_dim():
    return add_model("init_negative_dim",
                     raw_tensor("w", TensorProto.FLOAT, [2, -3], bytes(24)))


# ---- external data -------------------------------------------------------

@hostile("initializer 'w' with external data location '../../etc/passwd' "
         "(escapes the model directory)")
def ext_dotdot_path():
    return add_model("ext_dotdot_path", external_tensor("w", [2, 3], "../../etc/passwd"))


@hostile("initializer 'w' with absolute external data location '/etc/passwd'")
def ext_absolute_path():
    return add_model("ext_absolute_path", external_tensor("w", [2, 3], "/etc/passwd"))


@hostile("initializer 'w' (uint8 [1]) whose external data file %s is a symlink "
         "(committed as such) to %s, outside the model directory" % (SYMLINK, SYMLINK_TARGET))
def ext_symlink_outside():
    w = external_tensor("w", [1], SYMLINK)
    w.data_type = TensorProto.UINT8
    nodes = [helper.make_node("Cast", ["w"], ["w_float"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "w_float"], ["y"], name="add")]
    g = helper.make_graph(nodes, "ext_symlink_outside",
                          [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, [2, 3])], [w])
    return make_model(g)


@hostile("initializer 'w' (float [8], 32 bytes) whose external data file %s "
         "has only 16 bytes" % EXT_DATA)
def ext_file_too_short():
    g = add_graph("ext_file_too_short", external_tensor("w", [8], EXT_DATA), x_shape=(8,))
    return make_model(g)


@hostile("initializer 'w' (float [4]) with external data offset 'abc' (not a number); "
         "the data file %s exists and is big enough" % EXT_DATA)
def ext_offset_not_numeric():
    g = add_graph("ext_offset_not_numeric",
                  external_tensor("w", [4], EXT_DATA, offset="abc"), x_shape=(4,))
    return make_model(g)


# ---- tensor encodings ----------------------------------------------------

@hostile("string initializer 'names' with dims [3] but only 2 string_data entries")
def string_init_too_few():
    t = raw_tensor("names", TensorProto.STRING, [3])
    t.string_data.extend([b"a", b"b"])
    nodes = [helper.make_node("Identity", ["names"], ["y"], name="identity")]
    g = helper.make_graph(nodes, "string_init_too_few", [],
                          [vi("y", TensorProto.STRING, [3])], [t])
    return make_model(g)


@hostile("float initializer 'w' with dims [2, 3] but only 2 float_data entries")
def float_data_too_few():
    t = raw_tensor("w", TensorProto.FLOAT, [2, 3])
    t.float_data.extend([1.0, 2.0])
    return add_model("float_data_too_few", t)


@hostile("Constant node 'const' whose value tensor (float [3], 12 bytes) has 8 bytes of raw_data")
def constant_raw_data_size():
    v = raw_tensor("const_value", TensorProto.FLOAT, [3],
                   np.array([1.0, 2.0], np.float32).tobytes())
    nodes = [helper.make_node("Constant", [], ["c"], name="const", value=v),
             helper.make_node("Add", ["x", "c"], ["y"], name="add")]
    g = helper.make_graph(nodes, "constant_raw_data_size", [vi("x", TensorProto.FLOAT, [3])],
                          [vi("y", TensorProto.FLOAT, [3])])
    return make_model(g)


@hostile("initializer 'w' of data type UINT4 (21), dims [2, 3], 3 bytes of packed raw_data")
def init_uint4():
    return add_model("init_uint4", raw_tensor("w", TP_UINT4, [2, 3], bytes([0x21, 0x43, 0x65])))


@hostile("initializer 'w' of data type FLOAT8E4M3FN (17), dims [2, 3], 6 bytes of raw_data")
def init_float8e4m3fn():
    return add_model("init_float8e4m3fn",
                     raw_tensor("w", TP_FLOAT8E4M3FN, [2, 3], bytes([0x38] * 6)))


@hostile("initializer 'w' of data type COMPLEX64 (14), dims [2, 3], 48 bytes of raw_data")
def init_complex64():
    return add_model("init_complex64", raw_tensor("w", TP_COMPLEX64, [2, 3], bytes(48)))


# ---- graph structure -----------------------------------------------------

@hostile("graph input 'x' of type sequence(tensor(float)) feeding SequenceLength")
def input_sequence_type():
    seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("SequenceLength", ["x"], ["y"], name="seq_len")]
    g = helper.make_graph(nodes, "input_sequence_type", [seq],
                          [vi("y", TensorProto.INT64, [])])
    return make_model(g)


@hostile("node 'nameless_op' with an empty op_type (default domain) between x and y")
def node_empty_op_type():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="nameless_op")]
    nodes[0].op_type = ""
    g = helper.make_graph(nodes, "node_empty_op_type", [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, [2, 3])])
    return make_model(g)


@hostile("second initializer has an empty name (the first, 'w', is fine)")
def init_no_name():
    g = add_graph("init_no_name", arr("w", np.ones([2, 3], np.float32)),
                  extra_inits=[arr("", np.zeros([2], np.float32))])
    return make_model(g)


@hostile("two initializers named 'w' (float [2, 3] each, different values)")
def init_duplicate_name():
    g = add_graph("init_duplicate_name", arr("w", np.ones([2, 3], np.float32)),
                  extra_inits=[arr("w", np.zeros([2, 3], np.float32))])
    return make_model(g)


@hostile("default-domain opset_import with version 0 (the graph is fine)")
def opset_zero():
    return add_model("opset_zero", arr("w", np.ones([2, 3], np.float32)), opset=0, ir=7)


@hostile("ModelProto with ir_version 7 and opset_import ai.onnx 13 but no graph")
def no_graph():
    m = ModelProto()
    m.ir_version = 7
    m.producer_name = "gen_hostile"
    m.opset_import.add().version = 13
    return m


@hostile("node 'relu' with an attribute 'alpha' (i = 1) whose type is 99, not an "
         "AttributeProto.AttributeType (wire bytes written by hand)")
def attr_type_99():
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    a = nodes[0].attribute.add()
    # name = "alpha" (field 1), i = 1 (field 3), type = 99 (field 20): python
    # refuses to set an unknown value of the closed enum, so parse the bytes.
    a.MergeFromString(field(1, b"alpha") + varint_field(3, 1) + varint_field(20, 99))
    g = helper.make_graph(nodes, "attr_type_99", [vi("x", TensorProto.FLOAT, [2, 3])],
                          [vi("y", TensorProto.FLOAT, [2, 3])])
    return make_model(g)


# ---- Q/DQ parameters -----------------------------------------------------

@hostile("QuantizeLinear 'x_QuantizeLinear' with an int32 zero point 'x_zero_point' "
         "(int32 is only valid for DequantizeLinear)")
def q_zp_int32():
    g = qdq_u8_graph("q_zp_int32",
                     zp_tensor=helper.make_tensor("x_zero_point", TensorProto.INT32, [], [0]))
    return make_model(g)


@hostile("Q/DQ with an int16 zero point 'x_zero_point' in an opset-13 model "
         "(16-bit Q/DQ needs opset 21)")
def zp_int16_opset13():
    g = qdq_u8_graph("zp_int16_opset13", scale=0.001,
                     zp_tensor=arr("x_zero_point", np.array(-5, np.int16)))
    return make_model(g, opset=13)


@hostile("Q/DQ with a float64 scale 'x_scale' (0.05)")
def scale_float64():
    g = qdq_u8_graph("scale_float64",
                     scale_tensor=helper.make_tensor("x_scale", TensorProto.DOUBLE, [], [0.05]))
    return make_model(g)


@hostile("Q/DQ with an empty scale 'x_scale' (float, dims [0]) and an empty uint8 zero point")
def scale_empty():
    g = qdq_u8_graph("scale_empty",
                     scale_tensor=arr("x_scale", np.zeros([0], np.float32)),
                     zp_tensor=arr("x_zero_point", np.zeros([0], np.uint8)))
    return make_model(g)


# --------------------------------------------------------------------------
# generated at test time
# --------------------------------------------------------------------------

class Nest:
    """Wire bytes of deeply nested messages, built from the inside out in
    O(size): `wrap` makes the current message content field `num` of a new
    enclosing message whose other fields are `before` and `after`."""

    def __init__(self, core):
        self.left, self.right, self.core, self.size = [], [], core, len(core)

    def wrap(self, num, before=b"", after=b""):
        hdr = varint(num << 3 | 2) + varint(self.size)
        self.left.append(before + hdr)
        self.right.append(after)
        self.size += len(before) + len(hdr) + len(after)

    def bytes(self):
        return b"".join(reversed(self.left)) + self.core + b"".join(self.right)


def _vi(name, elem_type, dims):
    """ValueInfoProto bytes: name = 1, type = 2 (TypeProto.tensor_type = 1:
    elem_type = 1, shape = 2 -> dim = 1 -> dim_value = 1)."""
    shape = b"".join(field(1, varint_field(1, d)) for d in dims)
    tensor = varint_field(1, elem_type) + field(2, shape)
    return field(1, name) + field(2, field(1, tensor))


def _identity_graph(name, out):
    """GraphProto bytes: out = Identity(x) (x from the outer scope)."""
    node = field(1, b"x") + field(2, out) + field(4, b"Identity")
    return field(1, node) + field(2, name) + field(12, _vi(out, 1, [2]))


def nested_if_bytes(depth):
    """A valid ModelProto (opset 13) whose If nodes nest `depth` levels deep:
    graph input cond (bool) and x (float [2]); the top If 'if<depth>' gives y;
    the then_branch of If 'if<k>' holds If 'if<k-1>' ... down to 'if1', whose
    then_branch is y0 = Identity(x); every else_branch is e<k> = Identity(x).
    Every If level adds 3 levels of protobuf message nesting (GraphProto ->
    NodeProto -> AttributeProto -> GraphProto).  Field numbers: GraphProto
    node 1, name 2, input 11, output 12; NodeProto input 1, output 2, name 3,
    op_type 4, attribute 5; AttributeProto name 1, g 6, type 20 (GRAPH = 5);
    ModelProto ir_version 1, producer_name 2, graph 7, opset_import 8;
    OperatorSetIdProto version 2."""
    n = Nest(_identity_graph(b"then0", b"y0"))
    for k in range(1, depth + 1):
        out = b"y" if k == depth else b"y%d" % k
        n.wrap(6, before=field(1, b"then_branch"), after=varint_field(20, 5))
        else_attr = (field(1, b"else_branch") + field(6, _identity_graph(b"else%d" % k, b"e%d" % k))
                     + varint_field(20, 5))
        n.wrap(5, before=field(1, b"cond") + field(2, out) + field(3, b"if%d" % k)
               + field(4, b"If"), after=field(5, else_attr))
        if k == depth:
            n.wrap(1, after=field(2, b"nested_if") + field(11, _vi(b"cond", 9, []))
                   + field(11, _vi(b"x", 1, [2])) + field(12, _vi(out, 1, [2])))
        else:
            n.wrap(1, after=field(2, b"then%d" % k) + field(12, _vi(out, 1, [2])))
    n.wrap(7, before=varint_field(1, 7) + field(2, b"gen_hostile"),
           after=field(8, varint_field(2, 13)))
    return n.bytes()


# --------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------

def _write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def write_all():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        p = os.path.join(OUT, f)
        if f.endswith((".onnx", ".bin")) and (os.path.islink(p) or os.path.isfile(p)):
            os.remove(p)
    _write_bytes(os.path.join(OUT, EXT_DATA), np.array([1, 2, 3, 4], np.float32).tobytes())
    os.symlink(SYMLINK_TARGET, os.path.join(OUT, SYMLINK))
    for name, (fn, _) in HOSTILE.items():
        m = fn()
        data = m if isinstance(m, bytes) else m.SerializeToString()
        assert len(data) < 20000, name
        _write_bytes(os.path.join(OUT, name + ".onnx"), data)


def main(argv):
    if len(argv) == 3 and argv[0] == "--nested-if":
        _write_bytes(argv[2], nested_if_bytes(int(argv[1])))
        return
    if argv:
        sys.exit(__doc__)
    write_all()
    print("wrote %d hostile models under %s" % (len(HOSTILE), os.path.relpath(OUT)))


if __name__ == "__main__":
    main(sys.argv[1:])
