#!/usr/bin/python3
"""Data-movement ops between Q/DQ pairs must stay bit-identical through the exact passes and the plan.

    check_movement_exact.py --qopt build/bin/qopt --qopt-run build/bin/qopt-run [--work DIR] [--filter REGEX]
                            [--jobs N]

Generates small .qir models, one per (op, attribute/mode setting, grid):
    %x -> q.quantize (grid G) -> q.dequantize -> OP -> q.quantize (same G) -> q.dequantize -> output
(Concat: two inputs, each on G; Split: each output on G). Grids have zero point 0 and nonzero zero
points, one saturates on the inputs and one clamps all negatives. Inputs are qopt-run's seeded
`--dist=imagenet` values (about -2.1..2.6: the widest distribution it offers, so the small-scale grid
saturates on both sides). For every case:
  * `qopt-run CASE --compare-passes=P --seed=1 --dist=imagenet` prints "identical" for every output,
    for P in PIPELINES;
  * `qopt-run CASE --plan --compare CASE` (the INT8 CPU plan against the input model on the reference
    interpreter) prints "identical" for every output.
A case qopt cannot parse (`qopt CASE --disable-output` fails) fails all its checks, on one line.
Output: one line per failing (case, check) with the tool's message, then
"check-movement: N of M checks bit-identical (K cases)"; exit 1 unless N == M.
Cost: about 0.2 s per qopt-run call (models of at most a few hundred elements).
"""
import argparse
import concurrent.futures
import math
import os
import re
import subprocess
import sys
import tempfile
import time

# Exact passes and pipelines (test/placement/check_exact_passes.py discovers them from -print-passes:
# sink-qdq is "(exact)", fuse<cpu> "(exact in qopt-run", default<trt-exact>/default<ort-exact> are the
# *-exact pipelines). default<ort> is lossy (quantize-activations, relu-into-q, ...): its exact
# variant default<ort-exact> stands in for it. default<cpu> is documented bit-identical in qopt-run
# except for raised QOperator nodes and folded BatchNorms, neither of which occurs here.
PIPELINES = ['sink-qdq', 'fuse<cpu>', 'default<cpu>', 'default<trt-exact>', 'default<ort-exact>']
DIST = 'imagenet'

# name -> (storage, scale, zero point)
GRIDS = {
    'i8': ('i8', 0.1, 0),
    'u8z128': ('u8', 0.1, 128),
    'i8z-3': ('i8', 0.05, -3),
    'sat': ('i8', 0.01, 5),    # [-1.33, 1.22]: imagenet inputs saturate on both sides
    'u8z0': ('u8', 0.02, 0),   # every negative input clamps to 0
}
ALL = list(GRIDS)


def grid_type(g):
    st, scale, zp = GRIDS[g]
    return f'!quant.uniform<{st}:f32, {scale}{":%d" % zp if zp else ""}>'


def ttype(shape, elem):
    return 'tensor<' + ''.join(f'{d}x' for d in shape) + elem + '>'


def dense(values):
    return '[' + ', '.join(repr(v) for v in values) + ']' if isinstance(values, (list, tuple)) else repr(values)


def model(name, g, ins, op, outs, operands=None, consts=(), attrs=''):
    """ins: input shapes; outs: result shapes; operands: the op's operand list ('%d0', '%c_name', '_');
    consts: (name, values, shape, elem)."""
    lines = [f'!g = {grid_type(g)}']
    sig = ', '.join(f'%x{i}: {ttype(s, "f32")}' for i, s in enumerate(ins))
    lines.append(f'graph @{name}({sig}) -> ({", ".join(ttype(s, "f32") for s in outs)}) {{')
    for i, s in enumerate(ins):
        lines.append(f'  %q{i} = q.quantize(%x{i}) : {ttype(s, "!g")} loc("q{i}")')
        lines.append(f'  %d{i} = q.dequantize(%q{i}) : {ttype(s, "f32")} loc("dq{i}")')
    for cname, values, shape, elem in consts:
        lines.append(f'  %c_{cname} = onnx.Constant() {{value = dense<{dense(values)}>}} : {ttype(shape, elem)}')
    operands = operands or [f'%d{i}' for i in range(len(ins))]
    res = [f'%r{i}' for i in range(len(outs))]
    attr = f' {{{attrs}}}' if attrs else ''
    lines.append(f'  {", ".join(res)} = onnx.{op}({", ".join(operands)}){attr} : '
                 f'{", ".join(ttype(s, "f32") for s in outs)} loc("op")')
    for i, s in enumerate(outs):
        lines.append(f'  %o{i} = q.quantize(%r{i}) : {ttype(s, "!g")} loc("oq{i}")')
        lines.append(f'  %y{i} = q.dequantize(%o{i}) : {ttype(s, "f32")} loc("odq{i}")')
    lines.append(f'  return {", ".join(f"%y{i}" for i in range(len(outs)))}')
    lines.append('}')
    return '\n'.join(lines) + '\n'


def ilist(vals):
    return '[' + ', '.join(str(v) for v in vals) + ']'


def s(text):
    return '"' + text + '"'


# --- shapes, as ONNX defines them ---------------------------------------------------------------

def pad_shape(shape, pads):
    n = len(shape)
    return [d + pads[i] + pads[i + n] for i, d in enumerate(shape)]


def slice_shape(shape, starts, ends, axes, steps):
    out = list(shape)
    for st, en, ax, sp in zip(starts, ends, axes, steps):
        dim = shape[ax]
        st, en = (st + dim if st < 0 else st), (en + dim if en < 0 else en)
        if sp > 0:
            st, en = min(max(st, 0), dim), min(max(en, 0), dim)
        else:
            st, en = min(max(st, 0), dim - 1), min(max(en, -1), dim - 1)
        out[ax] = max(0, math.ceil((en - st) / sp))
    return out


def broadcast(a, b):
    r = max(len(a), len(b))
    a, b = [1] * (r - len(a)) + list(a), [1] * (r - len(b)) + list(b)
    return [max(x, y) for x, y in zip(a, b)]


def reshape_shape(shape, target):
    out = [shape[i] if t == 0 else t for i, t in enumerate(target)]
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        out[out.index(-1)] = math.prod(shape) // known
    return out


def pool_shape(shape, k, strides, pads, dil, ceil_mode, auto_pad='NOTSET'):
    out = list(shape[:2])
    n = len(k)
    for i in range(n):
        size = shape[i + 2]
        if auto_pad.startswith('SAME'):
            out.append(-(-size // strides[i]))
            continue
        eff, padded = (k[i] - 1) * dil[i] + 1, size + pads[i] + pads[i + n]
        o = ((padded - eff + (strides[i] - 1 if ceil_mode else 0)) // strides[i]) + 1
        if ceil_mode and (o - 1) * strides[i] >= size + pads[i]:
            o -= 1
        out.append(o)
    return out


# --- the cases ------------------------------------------------------------------------------------

def cases():
    """[(name, text)]."""
    out = []
    rr = iter(ALL * 100)  # round-robin grids for ops that only copy stored values

    def add(name, grids, *a, **kw):
        for g in grids:
            n = re.sub(r'\W', '_', f'{name}_{g}')
            out.append((n, model(n, g, *a, **kw)))

    X = [1, 2, 4, 4]
    # Pad
    P = [0, 0, 1, 2, 0, 0, 2, 1]
    ps = pad_shape(X, P)
    add('pad_constant', ALL, [X], 'Pad', [ps], ['%d0', '%c_p'], [('p', P, [8], 'i64')], 'mode = "constant"')
    for g, v in (('i8', 0.5), ('u8z128', 0.3), ('i8z-3', -0.25), ('u8z0', 0.4),  # on the grid
                 ('i8', 0.05), ('u8z128', 0.05), ('i8z-3', 0.33),               # off the grid
                 ('sat', 2.0), ('u8z0', -0.5)):                                   # outside its range
        add(f'pad_value_{v}', [g], [X], 'Pad', [ps], ['%d0', '%c_p', '%c_v'],
            [('p', P, [8], 'i64'), ('v', v, [], 'f32')], 'mode = "constant"')
    NEG = [0, 0, -1, 1, 0, 0, 2, -2]  # negative pads crop
    add('pad_negative', ['u8z128', 'i8'], [X], 'Pad', [pad_shape(X, NEG)], ['%d0', '%c_p'],
        [('p', NEG, [8], 'i64')], 'mode = "constant"')
    add('pad_axes', ['u8z128', 'i8z-3'], [X], 'Pad', [[1, 2, 5, 7]], ['%d0', '%c_p', '_', '%c_a'],
        [('p', [1, 2, 0, 1], [4], 'i64'), ('a', [2, -1], [2], 'i64')], 'mode = "constant"')
    for mode in ('reflect', 'edge'):
        add(f'pad_{mode}', ['u8z128', 'sat'], [X], 'Pad', [ps], ['%d0', '%c_p'], [('p', P, [8], 'i64')],
            f'mode = "{mode}"')

    # Resize, nearest: every coordinate mode x nearest mode, on a 4x5 -> 7x3 resize (up and down)
    R = [1, 2, 4, 5]
    for ct in ('half_pixel', 'asymmetric', 'align_corners', 'pytorch_half_pixel', 'tf_half_pixel_for_nn',
               'half_pixel_symmetric'):
        for nm in ('round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'):
            add(f'resize_{ct}_{nm}', [next(rr)], [R], 'Resize', [[1, 2, 7, 3]], ['%d0', '_', '_', '%c_s'],
                [('s', [1, 2, 7, 3], [4], 'i64')],
                f'mode = "nearest", coordinate_transformation_mode = {s(ct)}, nearest_mode = {s(nm)}')
    for sc in ([1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 0.5, 1.6], [1.0, 2.0, 1.5, 0.8]):  # scales input
        shape = [math.floor(d * f) for d, f in zip(R, sc)]
        for ct in ('half_pixel', 'asymmetric'):
            add(f'resize_scales_{"_".join(map(str, sc))}_{ct}', [next(rr)], [R], 'Resize', [shape],
                ['%d0', '_', '%c_s'], [('s', sc, [4], 'f32')],
                f'mode = "nearest", coordinate_transformation_mode = {s(ct)}')
    add('resize_pytorch_to_1', ['i8z-3'], [R], 'Resize', [[1, 2, 1, 3]], ['%d0', '_', '_', '%c_s'],
        [('s', [1, 2, 1, 3], [4], 'i64')], 'mode = "nearest", coordinate_transformation_mode = "pytorch_half_pixel"')
    # Dropped: Resize's `axes` attribute (opset 18). qopt parses it and infers the shape, but the reference
    # interpreter rejects it ("sizes must have 4 elements"), so no check can run.
    # tf_crop_and_resize: the roi reaches outside the input, so extrapolation_value is used.
    roi = [0.0, 0.0, -0.2, 0.1, 1.0, 1.0, 0.8, 1.1]  # width 1 on each axis: the scales form's shape is in*scale
    for ev in (0.5, 0.0, 0.05):
        for nm in ('round_prefer_floor', 'floor', 'ceil'):
            attrs = (f'mode = "nearest", coordinate_transformation_mode = "tf_crop_and_resize", '
                     f'nearest_mode = {s(nm)}, extrapolation_value = {ev}')
            add(f'resize_crop_sizes_{ev}_{nm}', ALL if nm == 'floor' else [next(rr)], [R], 'Resize',
                [[1, 2, 6, 7]], ['%d0', '%c_roi', '_', '%c_s'],
                [('roi', roi, [8], 'f32'), ('s', [1, 2, 6, 7], [4], 'i64')], attrs)
        add(f'resize_crop_scales_{ev}', [next(rr)], [R], 'Resize', [[1, 2, 6, 7]], ['%d0', '%c_roi', '%c_s'],
            [('roi', roi, [8], 'f32'), ('s', [1.0, 1.0, 1.5, 1.4], [4], 'f32')],
            f'mode = "nearest", coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = {ev}')

    # Transpose, Reshape, Flatten, Squeeze, Unsqueeze
    T = [1, 2, 3, 4]
    for perm in ([0, 2, 3, 1], [3, 1, 0, 2], None):
        shape = [T[p] for p in perm] if perm else T[::-1]
        add(f'transpose_{perm}', [next(rr)], [T], 'Transpose', [shape], attrs=f'perm = {ilist(perm)}' if perm else '')
    for tgt in ([1, -1, 8], [0, 0, -1], [4, 6], [-1]):
        add(f'reshape_{tgt}', [next(rr)], [T], 'Reshape', [reshape_shape(T, tgt)], ['%d0', '%c_s'],
            [('s', tgt, [len(tgt)], 'i64')])
    for axis in (0, 1, 2, -1, 4):
        a = axis + 4 if axis < 0 else axis
        add(f'flatten_{axis}', [next(rr)], [T], 'Flatten', [[math.prod(T[:a]), math.prod(T[a:])]],
            attrs=f'axis = {axis}')
    S = [1, 3, 1, 4]
    add('squeeze_axes', [next(rr)], [S], 'Squeeze', [[1, 3, 4]], ['%d0', '%c_a'], [('a', [-2], [1], 'i64')])
    add('squeeze_all', [next(rr)], [S], 'Squeeze', [[3, 4]])
    add('unsqueeze', [next(rr)], [[3, 4]], 'Unsqueeze', [[1, 3, 4, 1]], ['%d0', '%c_a'], [('a', [0, -1], [2], 'i64')])

    # Slice
    L = [1, 3, 6, 5]
    for name, st, en, ax, sp in (('steps', [0, 1], [100, 6], [2, 3], [2, 2]),
                                 ('reverse', [-1], [-100], [3], [-1]),
                                 ('negstep2', [5, 3], [0, -100], [2, -1], [-2, -3]),
                                 ('noaxes', [0, 1, 1, 1], [1, 3, -1, 4], None, None),
                                 ('clamp', [-100, 2], [100, 1000], [1, 2], [1, 3])):
        axes, steps = ax or list(range(len(st))), sp or [1] * len(st)
        ops = ['%d0', '%c_st', '%c_en'] + (['%c_ax'] if ax else []) + (['%c_sp'] if sp else [])
        consts = [('st', st, [len(st)], 'i64'), ('en', en, [len(en)], 'i64')]
        consts += ([('ax', ax, [len(ax)], 'i64')] if ax else []) + ([('sp', sp, [len(sp)], 'i64')] if sp else [])
        add(f'slice_{name}', [next(rr)], [L], 'Slice', [slice_shape(L, st, en, axes, steps)], ops, consts)

    # Gather
    G = [3, 4, 2]
    add('gather_axis0', [next(rr)], [G], 'Gather', [[3, 4, 2]], ['%d0', '%c_i'], [('i', [2, 0, -1], [3], 'i64')])
    add('gather_axis1_2d', [next(rr)], [G], 'Gather', [[3, 2, 2, 2]], ['%d0', '%c_i'],
        [('i', [1, 3, 0, -4], [2, 2], 'i32')], 'axis = 1')
    add('gather_scalar', [next(rr)], [G], 'Gather', [[3, 2]], ['%d0', '%c_i'], [('i', 2, [], 'i64')], 'axis = 1')

    # DepthToSpace, SpaceToDepth
    for mode in ('DCR', 'CRD'):
        add(f'depth_to_space_{mode}', [next(rr), next(rr)], [[1, 8, 2, 3]], 'DepthToSpace', [[1, 2, 4, 6]],
            attrs=f'blocksize = 2, mode = "{mode}"')
    add('space_to_depth', [next(rr)], [[1, 2, 4, 6]], 'SpaceToDepth', [[1, 8, 2, 3]], attrs='blocksize = 2')

    # Tile, Expand
    add('tile', [next(rr)], [T], 'Tile', [[1, 4, 3, 12]], ['%d0', '%c_r'], [('r', [1, 2, 1, 3], [4], 'i64')])
    E = [1, 2, 1, 4]
    for tgt in ([2, 1, 3, 1], [3, 1], [1]):
        add(f'expand_{tgt}', [next(rr)], [E], 'Expand', [broadcast(E, tgt)], ['%d0', '%c_s'],
            [('s', tgt, [len(tgt)], 'i64')])

    # Split (each output quantized), Concat (two inputs on the same grid)
    C = [1, 4, 3, 5]
    add('split_sizes', [next(rr)], [C], 'Split', [[1, 1, 3, 5], [1, 3, 3, 5]], ['%d0', '%c_s'],
        [('s', [1, 3], [2], 'i64')], 'axis = 1')
    add('split_num_outputs', [next(rr)], [C], 'Split', [[1, 4, 3, 3], [1, 4, 3, 2]], attrs='axis = -1, num_outputs = 2')
    add('concat_axis1', [next(rr), next(rr)], [[1, 2, 3, 5], C], 'Concat', [[1, 6, 3, 5]], attrs='axis = 1')
    add('concat_axis_neg1', [next(rr)], [[1, 4, 3, 2], C], 'Concat', [[1, 4, 3, 7]], attrs='axis = -1')

    # MaxPool: padding must act as -inf, never as a stored value
    M = [1, 2, 5, 6]
    for name, k, st, pd, dl, ceil, auto in (('pads_strides', [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], 0, 'NOTSET'),
                                            ('asym_pads', [2, 3], [1, 2], [0, 2, 1, 0], [1, 1], 0, 'NOTSET'),
                                            ('dilations', [2, 2], [1, 1], [1, 0, 1, 1], [2, 2], 0, 'NOTSET'),
                                            ('ceil', [2, 2], [2, 2], [0, 0, 0, 0], [1, 1], 1, 'NOTSET'),
                                            ('ceil_pads', [3, 2], [2, 3], [1, 0, 1, 1], [1, 1], 1, 'NOTSET'),
                                            ('same_upper', [3, 2], [2, 2], [0, 0, 0, 0], [1, 1], 0, 'SAME_UPPER'),
                                            ('same_lower', [2, 3], [1, 1], [0, 0, 0, 0], [1, 1], 0, 'SAME_LOWER')):
        attrs = f'kernel_shape = {ilist(k)}, strides = {ilist(st)}, dilations = {ilist(dl)}, ceil_mode = {ceil}'
        attrs += f', auto_pad = "{auto}"' if auto != 'NOTSET' else f', pads = {ilist(pd)}'
        grids = ALL if name in ('pads_strides', 'ceil_pads') else [next(rr)]
        add(f'maxpool_{name}', grids, [M], 'MaxPool', [pool_shape(M, k, st, pd, dl, ceil, auto)], attrs=attrs)
    return out


# --- running ----------------------------------------------------------------------------------------

def run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, '', 'timeout after 120s')


def first_line(text):
    text = text.strip()
    return text.splitlines()[0] if text else ''


def verdict(r):
    """None when every output is identical, else the tool's message."""
    lines = [l for l in r.stdout.strip().splitlines() if l.strip()]
    if r.returncode == 0 and lines and all(': identical (' in l for l in lines):
        return None
    bad = [l for l in lines if ': identical (' not in l]
    msg = '; '.join(bad[:3] + [first_line(r.stderr)] if bad else [first_line(r.stderr) or f'exit {r.returncode}'])
    return msg.strip('; ')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--qopt', default='build/bin/qopt')
    ap.add_argument('--qopt-run', default='build/bin/qopt-run')
    ap.add_argument('--work', help='where the .qir cases go (default: a new temporary directory)')
    ap.add_argument('--filter', default='', help='only cases whose name matches this regex')
    ap.add_argument('--jobs', '-j', type=int, default=os.cpu_count() or 1,
                    help='cases checked at once (default: one per CPU)')
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix='check-movement-')
    os.makedirs(work, exist_ok=True)
    all_cases = [c for c in cases() if re.search(args.filter, c[0])]
    checks = PIPELINES + ['plan']
    def check_case(case):
        """(checks bit-identical, lines to print) for one case."""
        name, text = case
        path = os.path.join(work, name + '.qir')
        with open(path, 'w') as f:
            f.write(text)
        r = run([args.qopt, path, '--disable-output'])
        if r.returncode != 0:
            return 0, [f'FAIL {name} [all {len(checks)} checks]: qopt rejects the case: {first_line(r.stderr)}']
        good, said = 0, []
        for check in checks:
            seeded = ['--seed=1', f'--dist={DIST}']
            cmd = ([args.qopt_run, path, '--plan', f'--compare={path}'] if check == 'plan' else
                   [args.qopt_run, path, f'--compare-passes={check}'])
            msg = verdict(run(cmd + seeded))
            if msg is None:
                good += 1
            else:
                said.append(f'FAIL {name} [{check}]: {msg}')
        return good, said

    total = len(all_cases) * len(checks)
    ok = 0
    t0 = time.time()
    # Cases in parallel (each check is a subprocess), printed in order.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for good, said in pool.map(check_case, all_cases):
            ok += good
            for line in said:
                print(line, flush=True)
    print(f'{time.time() - t0:.0f}s; cases in {work}')
    print(f'check-movement: {ok} of {total} checks bit-identical ({len(all_cases)} cases)')
    return 0 if ok == total and total else 1


if __name__ == '__main__':
    sys.exit(main())
