#!/usr/bin/python3
"""Every fix explain names as `qopt -passes='X'` must remove its leftover.

    check_fixes.py --qopt build/bin/qopt --shared ../shared --work DIR [--backend trt] [--filter REGEX]

For each model of --shared/models and --shared/models/zoo, and each backend: explain the model as it is
(--explain=B --report), then for every distinct fix pipeline X the leftovers name, run X alone on the model
and explain again. A leftover counts as removed when no leftover of the same kind is left on any of
its nodes but Q/DQ (an island that only shrank is still there), nor one with the same Q/DQ-only node list.
Node names are ONNX node names, which the passes keep (DQs that passes copy and rename count by their op).
Prints one line per fix that leaves one of its leftovers in place, and a total "N of M named fixes remove
their leftovers"; exits 1 unless N == M.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def explain(qopt, model, backend, pipeline, report):
    cmd = [qopt, model, f'--explain={backend}', f'--report={report}', '--disable-output']
    if pipeline:
        cmd.append(f'-passes={pipeline}')
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'{" ".join(cmd)}: {r.stderr.strip()}')
    with open(report) as f:
        plans = json.load(f)['plans']
    return plans[-1]['leftovers']


QDQ_OPS = ('quantize', 'dequantize', 'requantize')


def key(leftover):
    """The leftover's kind and nodes; a Q/DQ stands for its op when the leftover has other nodes (passes
    such as ensure-unique-dq copy and rename DQs: the reformat before the same Conv is the same leftover)."""
    nodes, ops = leftover['nodes'], leftover['ops']
    named = all(op in QDQ_OPS for op in ops)
    return leftover['kind'], tuple(n if named or op not in QDQ_OPS else f'<{op}>' for n, op in zip(nodes, ops))


def kind_and_nodes(leftover):
    """(kind, node) for each node of the leftover but Q/DQ: a leftover of the same kind on one of them after
    the fix means it was not removed (an island that only shrank)."""
    return {(leftover['kind'], n) for n, op in zip(leftover['nodes'], leftover['ops']) if op not in QDQ_OPS}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--qopt', required=True)
    ap.add_argument('--shared', required=True)
    ap.add_argument('--work', required=True)
    ap.add_argument('--backend', action='append')
    ap.add_argument('--filter', default='')
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    backends = args.backend or ['trt', 'ort', 'cpu']
    models = []
    for sub in ('models', 'models/zoo'):
        d = os.path.join(args.shared, sub)
        models += [os.path.join(sub, f) for f in sorted(os.listdir(d))
                   if f.endswith('.onnx') and not f.endswith('_fp32.onnx')]
    models = [m for m in models if re.search(args.filter, m)]
    named = removed = 0
    for rel in models:
        path = os.path.join(args.shared, rel)
        for backend in backends:
            tag = re.sub(r'\W', '_', rel) + '.' + backend
            report = os.path.join(args.work, tag + '.json')
            before = explain(args.qopt, path, backend, '', report)
            by_fix = {}
            for l in before:
                if l['fix_pipeline']:
                    by_fix.setdefault(l['fix_pipeline'], []).append(l)
            for fix, leftovers in sorted(by_fix.items()):
                try:
                    after = explain(args.qopt, path, backend, fix, report)
                except RuntimeError as e:
                    print(f'FAIL {rel} [{backend}] {fix}: {e}')
                    named += len(leftovers)
                    continue
                left = {key(l) for l in after}
                touched = {t for l in after for t in kind_and_nodes(l)}
                kept = [l for l in leftovers
                        if key(l) in left or any(t in touched for t in kind_and_nodes(l))]
                named += len(leftovers)
                removed += len(leftovers) - len(kept)
                for l in kept:
                    print(f"FAIL {rel} [{backend}] -passes='{fix}' leaves {l['kind']}: "
                          f"{' -> '.join(l['nodes'])} ({l['reason']})")
    print(f'check-fixes: {removed} of {named} named fixes remove their leftovers '
          f'({len(models)} models, {", ".join(backends)})')
    if named == 0:
        print('check-fixes: no leftover names a pipeline fix: nothing was checked')
        return 1
    return 0 if removed == named else 1


if __name__ == '__main__':
    sys.exit(main())
