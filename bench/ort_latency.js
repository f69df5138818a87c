#!/usr/bin/env node
// ort_latency.js -- ONNX Runtime's latency on one model at one thread count, for run_plan_bench.py.
//
// usage: node bench/ort_latency.js MODEL.onnx [--threads T] [--runs N] [--warmup W] [--seed S]
//          [--dist uniform|image|imagenet] [--dim name=V ...]
//
// One CPU session (graphOptimizationLevel 'all', intraOpNumThreads T, interOpNumThreads 1,
// sequential), seeded inputs (test/placement/ort_run.js's rules), W untimed runs, then N timed
// runs of `await session.run(feeds)`. Prints one JSON line:
//   {"version": ..., "load_ms": ..., "median_ms": ..., "min_ms": ..., "runs": N}
'use strict';
const path = require('path');
// Seeded inputs, and onnxruntime-node from $ORT_NODE_DIR, the cwd or the repository root.
const { makeInput, loadOrt } = require('../test/placement/ort_run.js');

function parseArgs(argv) {
  const a = { threads: 1, runs: 20, warmup: 3, seed: 1, dist: 'uniform', dims: {} };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    const v = () => argv[++i];
    switch (k) {
      case '--threads': a.threads = parseInt(v(), 10); break;
      case '--runs': a.runs = parseInt(v(), 10); break;
      case '--warmup': a.warmup = parseInt(v(), 10); break;
      case '--seed': a.seed = parseInt(v(), 10); break;
      case '--dist': a.dist = v(); break;
      case '--dim': { const s = v(); const e = s.lastIndexOf('='); a.dims[s.slice(0, e)] = parseInt(s.slice(e + 1), 10); break; }
      default:
        if (k.startsWith('--') || a.model) { console.error(`ort_latency: unexpected argument ${k}`); process.exit(2); }
        a.model = k;
    }
  }
  if (!a.model) { console.error('ort_latency: a model is required'); process.exit(2); }
  if (!['uniform', 'image', 'imagenet'].includes(a.dist)) { console.error(`ort_latency: unknown --dist ${a.dist}`); process.exit(2); }
  return a;
}

async function main() {
  const a = parseArgs(process.argv);
  const ort = loadOrt();
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(path.resolve(a.model), {
    graphOptimizationLevel: 'all', intraOpNumThreads: a.threads, interOpNumThreads: 1,
    executionMode: 'sequential', logSeverityLevel: 4,
  });
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const feeds = {};
  session.inputMetadata.forEach((m, i) => { feeds[m.name] = makeInput(ort, m, i, a); });
  for (let i = 0; i < a.warmup; i++) await session.run(feeds);
  const times = [];
  for (let i = 0; i < a.runs; i++) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((p, q) => p - q);
  const m = times.length >> 1;
  const median = times.length % 2 ? times[m] : (times[m - 1] + times[m]) / 2;
  console.log(JSON.stringify({ version: ort.env.versions.common, load_ms: loadMs, median_ms: median, min_ms: times[0], runs: a.runs }));
}

main().catch((e) => { console.error(`ort_latency: ${String((e && e.message) || e).split('\n')[0]}`); process.exit(1); });
