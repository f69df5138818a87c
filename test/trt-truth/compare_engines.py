#!/usr/bin/python3
"""Compare qopt's TensorRT fusion prediction with the layers TensorRT really built.

    /usr/bin/python3 test/trt-truth/compare_engines.py --qopt build/bin/qopt \
        --truth /work/shared/trt-truth --work /tmp/trt-truth

--truth holds make_onnx.py and graphs/*.onnx.engine.graph.json (trtexec --exportLayerInfo of three QAT
ResNet-18 engines, see its README.md). The script writes the ONNX models into --work, runs
`qopt MODEL --explain=trt --report=MODEL.json --disable-output` on each and compares, per engine:

* Compute layers: every TensorRT layer that is not a Reformat or NoOp. Its node set is the ONNX nodes its Name
  mentions, without Q/DQ/Constant/Identity, weights/initializers and "(Unnamed Layer* N)" parts. On qopt's side
  each fusion unit (copies included) is one layer and each node of a float island is a layer of its own. TensorRT
  does not name every node it fuses (BatchNormalization and the Relu after a conv, Flatten), so nodes that no
  TensorRT compute layer names are ignored on both sides. A layer MATCHes when one qopt layer holds exactly its
  named nodes and the INT8/float precision of the activation inputs and outputs agree (compared as multisets;
  qopt ports fed by constants, i.e. weights and biases, are dropped; a grid means INT8, null means float).
* Standalone Q/DQ: TensorRT's Reformat layers with Origin QDQ against the Q/DQ nodes of qopt's "unfused Q",
  "unfused DQ" and "reformat" leftovers. "+x -y": x only in TensorRT, y only in qopt.

KNOWN lists today's mismatches that are open work, keyed by (engine, TensorRT layer Name) or, for standalone
Q/DQ, (engine, Q/DQ node name). A known mismatch prints XFAIL; a known entry that now matches prints XPASS and
fails, so that KNOWN shrinks as qopt improves. Exit status 1 on any unexpected mismatch, XPASS or stale entry.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import onnx

# Open mismatches: (engine, TensorRT layer Name or Q/DQ node name) -> "issue N: the pattern". Empty: every
# compute layer and standalone Q/DQ of the three engines matches.
KNOWN = {}

QDQ = ('QuantizeLinear', 'DequantizeLinear')
NOT_COMPUTE = QDQ + ('Constant', 'Identity')
SUFFIX = '.onnx.engine.graph.json'


def num(name):  # torch's node numbering: Conv_9 < Conv_22
    return int(name.rsplit('_', 1)[1]) if name.rsplit('_', 1)[-1].isdigit() else -1, name


def prec(flags):
    return '[' + ', '.join('int8' if f else 'float' for f in flags) + ']'


def load_onnx(path):
    g = onnx.load(path).graph
    ops = {n.name: n.op_type for n in g.node}
    const = {i.name for i in g.initializer}
    for n in g.node:  # graph order is topological: Q/DQ of weights, Constant
        if all(not i or i in const for i in n.input):
            const.update(n.output)
    inputs = {n.name: [i for i in n.input if i and i not in const] for n in g.node}
    return ops, const, inputs


def trt_layers(graph_json, ops):
    """-> (compute layers [(Name, LayerType, set of nodes, Q/DQ names, in flags, out flags)], standalone Q/DQ)."""
    layers, qdq = [], set()
    for l in json.load(open(graph_json))['Layers']:
        parts = [p for p in l['Name'].split(' + ') if p in ops]
        if l['LayerType'] in ('Reformat', 'NoOp'):
            if l['LayerType'] == 'Reformat' and l.get('Origin') == 'QDQ':
                qdq.update(p for p in parts if ops[p] in QDQ)
            continue
        int8 = lambda ts: ['Int8' in t['Format/Datatype'] for t in ts]
        layers.append((l['Name'], l['LayerType'], {p for p in parts if ops[p] not in NOT_COMPUTE},
                       {p for p in parts if ops[p] in QDQ}, int8(l['Inputs']), int8(l['Outputs'])))
    return layers, qdq


def run_qopt(qopt, model, report):
    cmd = [qopt, model, '--explain=trt', '--report=' + report, '--disable-output']
    for attempt in range(6):  # the binary may be rebuilt under us
        if os.path.exists(report):
            os.remove(report)
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode == 0 and os.path.exists(report):
            return json.load(open(report))
        time.sleep(5)
    sys.exit('error: %s failed (%d):\n%s' % (' '.join(cmd), p.returncode, p.stderr[-2000:]))


def qopt_layers(report, ops, const, inputs):
    """-> (group of each node, {group: (label, nodes, in flags, out flags)}, standalone Q/DQ, requantize sets)."""
    assert len(report['plans']) == 1, 'expected one plan (no -passes)'
    plan = report['plans'][0]
    where, groups = {}, {}
    for u in plan['units']:
        key = 'unit %d' % u['id']
        ins = [p['grid'] is not None for p in u['inputs'] if p['value'] not in const]
        groups[key] = ('unit %d %s' % (u['id'], u['kind']), u['members'], ins,
                       [p['grid'] is not None for p in u['outputs']])
        for m in u['members']:
            where[m] = key
    qdq, requant = set(), []
    for l in plan['leftovers']:
        if l['kind'] == 'float island':
            for n in l['nodes']:
                key = 'float ' + n
                groups[key] = ('float', [n], [False] * len(inputs.get(n, [])), [False])
                where[n] = key
        elif l['kind'] in ('unfused Q', 'unfused DQ', 'reformat'):
            qdq.update(n for n in l['nodes'] if ops.get(n) in QDQ)
        elif l['kind'] == 'requantize':
            requant.append({n for n in l['nodes'] if ops.get(n) in QDQ})
    return where, groups, qdq, requant


def describe(groups, key, named):
    label, nodes, ins, outs = groups[key]
    shown = [n for n in nodes if n in named] + ['(%s)' % n for n in nodes if n not in named]
    return '%s {%s} in %s out %s' % (label, ', '.join(shown), prec(ins), prec(outs))


def compare_engine(engine, graph_json, model, report, results):
    ops, const, inputs = load_onnx(model)
    layers, trt_qdq = trt_layers(graph_json, ops)
    where, groups, q_qdq, requant = qopt_layers(report, ops, const, inputs)
    named = set().union(*(l[2] for l in layers))
    nmatch = 0
    for name, ltype, nodes, qd, ins, outs in layers:
        head = '%s %s in %s out %s' % (ltype, ' + '.join(sorted(nodes, key=num))
                                       or ' + '.join(sorted(qd)), prec(ins), prec(outs))
        why = []
        if not nodes:  # a requantize (Scale) layer: only Q/DQ in its name
            if qd not in requant:
                why.append('qopt has no requantize of %s' % sorted(qd))
        else:
            keys = sorted({where.get(n, 'missing') for n in nodes},
                          key=lambda k: min(num(n) for n in nodes if where.get(n, 'missing') == k))
            if 'missing' in keys or len(keys) > 1 or set(groups[keys[0]][1]) & named != nodes:
                parts = ['%s: not in any qopt unit or float island' % n for n in sorted(nodes) if n not in where]
                parts += [describe(groups, k, named) for k in keys if k != 'missing']
                why.append('qopt groups them as: ' + '; '.join(parts))
            else:
                _, _, qins, qouts = groups[keys[0]]
                if sorted(qins) != sorted(ins):
                    why.append('inputs: TensorRT %s, qopt %s' % (prec(ins), prec(qins)))
                if sorted(qouts) != sorted(outs):
                    why.append('outputs: TensorRT %s, qopt %s' % (prec(outs), prec(qouts)))
        nmatch += not why
        results.append(((engine, name), head, why))
    only_trt, only_q = sorted(trt_qdq - q_qdq, key=num), sorted(q_qdq - trt_qdq, key=num)
    for n in only_trt:
        results.append(((engine, n), 'standalone %s' % n, ['TensorRT runs it as a Reformat; qopt fuses it']))
    for n in only_q:
        results.append(((engine, n), 'standalone %s' % n, ['qopt predicts it standalone; TensorRT has no such '
                                                           'Reformat']))
    for n in sorted(trt_qdq & q_qdq, key=num):
        results.append(((engine, n), 'standalone %s' % n, []))
    eq = 'equal (%d)' % len(trt_qdq) if not (only_trt or only_q) else 'differ (+%d -%d)' % (len(only_trt),
                                                                                            len(only_q))
    return nmatch, len(layers), eq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--qopt', required=True)
    ap.add_argument('--truth', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('-v', '--verbose', action='store_true', help='print matching layers too')
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    p = subprocess.run([sys.executable, os.path.join(a.truth, 'make_onnx.py'), a.work],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode:
        sys.exit('error: make_onnx.py failed:\n' + p.stdout)
    gdir = os.path.join(a.truth, 'graphs')
    engines = sorted(f[:-len(SUFFIX)] for f in os.listdir(gdir) if f.endswith(SUFFIX))
    bad, seen, summary, tot_match, tot = 0, set(), [], 0, 0
    for engine in engines:
        model = os.path.join(a.work, engine + '.onnx')
        report = run_qopt(a.qopt, model, os.path.join(a.work, engine + '.report.json'))
        results = []
        nm, nl, eq = compare_engine(engine, os.path.join(gdir, engine + SUFFIX), model, report, results)
        print('== %s' % engine)
        for key, head, why in results:
            seen.add(key)
            if key in KNOWN:
                status = 'XFAIL' if why else 'XPASS'
            else:
                status = 'FAIL' if why else 'MATCH'
            bad += status in ('FAIL', 'XPASS')
            if status != 'MATCH' or a.verbose:
                print('%-5s %s' % (status, head))
                for w in why:
                    print('        ' + w)
                if status == 'XFAIL':
                    print('        known: ' + KNOWN[key])
                if status == 'XPASS':
                    print('        now matches: remove it from KNOWN (%s)' % KNOWN[key])
        line = '%s: %d of %d compute layers match (node set and precision), standalone Q/DQ: %s' % (
            engine, nm, nl, eq)
        print(line)
        summary.append(line)
        tot_match, tot = tot_match + nm, tot + nl
    for key in sorted(set(KNOWN) - seen):
        print('STALE %s: KNOWN entry names no TensorRT layer or Q/DQ compared' % (key,))
        bad += 1
    print()
    for line in summary:
        print(line)
    print('trt-truth: %d of %d compute layers match%s' % (tot_match, tot, '' if not bad else
                                                           ', %d unexpected result(s)' % bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
