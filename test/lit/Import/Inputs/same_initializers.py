"""Exit 0 when two ONNX files hold the same initializers: names, data types,
dims and values (the stored bytes for the types newer than onnx 1.12, INT4,
FLOAT8 and the rest, which it cannot decode; the values bit for bit for the
others, whichever field holds them), and the same nodes' attributes as sets;
print the first difference otherwise."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

NEW_TYPES = range(17, 27)  # FLOAT8*, UINT4, INT4, FLOAT4E2M1, ...


def stored(t):
    return t.raw_data if t.raw_data else bytes(v & 0xFF for v in t.int32_data)


def initializers(path):
    return {t.name: t for t in onnx.load(path).graph.initializer}


def main(a, b):
    ia, ib = initializers(a), initializers(b)
    if set(ia) != set(ib):
        print("initializer names differ:", sorted(set(ia) ^ set(ib)))
        return 1
    for name, t in ia.items():
        u = ib[name]
        if (t.data_type, list(t.dims)) != (u.data_type, list(u.dims)):
            print("%s: type/dims %s %s vs %s %s" % (name, t.data_type, list(t.dims),
                                                   u.data_type, list(u.dims)))
            return 1
        if t.data_type in NEW_TYPES:
            # raw_data, or int32_data with one stored byte a value.
            same = stored(t) == stored(u)
        else:
            x, y = numpy_helper.to_array(t), numpy_helper.to_array(u)
            same = x.dtype == y.dtype and x.tobytes() == y.tobytes()
        if not same:
            print("%s: values differ" % name)
            return 1
    na, nb = onnx.load(a).graph.node, onnx.load(b).graph.node
    for x, y in zip(na, nb):
        ax = {(at.name, at.i) for at in x.attribute}
        ay = {(at.name, at.i) for at in y.attribute}
        if (x.op_type, list(x.input), ax) != (y.op_type, list(y.input), ay):
            print("node %s differs: %s vs %s" % (x.name, sorted(ax), sorted(ay)))
            return 1
    print("same initializers and nodes (%d initializers)" % len(ia))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
