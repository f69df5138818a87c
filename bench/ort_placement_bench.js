#!/usr/bin/env node
// ort_placement_bench.js -- ONNX Runtime latency of a model before and after qopt, in one process.
//
// usage: node bench/ort_placement_bench.js --before M.onnx --after M.ort.onnx [--name NAME]
//          [--threads 1,2] [--runs 30] [--warmup 5] [--seed 1] [--dist uniform|image|imagenet]
//          [--dim name=V ...] [--opt-dir DIR] [--python /usr/bin/python3]
//
// For each thread count: creates both sessions (CPU EP, graphOptimizationLevel 'all',
// intraOpNumThreads T, interOpNumThreads 1, sequential), feeds both the same seeded inputs, runs
// `warmup` untimed runs of each, then `runs` timed runs of each, alternating before/after (the
// order swaps every iteration so neither always runs on a warm cache). Time = wall time of
// `await session.run(feeds)`. A session that fails to load is a result ("load-failed: ...").
// With the first thread count, ORT's optimized graphs are saved to OPT-DIR/NAME.{before,after}.opt.onnx
// (sessionOptions.optimizedModelFilePath) and their QLinearConv / ConvInteger / Conv nodes counted
// with python+onnx (Conv = any domain's Conv, incl. com.microsoft.nchwc:Conv and FusedConv).
//
// Output, per thread count:
//   NAME t=T before: med X min Y ms | after: med X min Y ms | before/after median ratio R
// then: NAME ORT graph  before: QLinearConv=a ConvInteger=b Conv=c | after: ...
// Exit 0 even when a session fails to load (reported); 2 on usage errors.
// onnxruntime-node: $ORT_NODE_DIR, the cwd, then the repository root's node_modules.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

function loadOrt() {
  const dirs = [process.env.ORT_NODE_DIR, process.cwd(), path.join(__dirname, '..')].filter(Boolean);
  return require(require.resolve('onnxruntime-node', { paths: dirs }));
}

function parseArgs(argv) {
  const a = { threads: [1, 2], runs: 30, warmup: 5, seed: 1, dist: 'uniform', dims: {}, python: '/usr/bin/python3' };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    const v = () => argv[++i];
    switch (k) {
      case '--before': a.before = v(); break;
      case '--after': a.after = v(); break;
      case '--name': a.name = v(); break;
      case '--threads': a.threads = v().split(',').map((x) => parseInt(x, 10)); break;
      case '--runs': a.runs = parseInt(v(), 10); break;
      case '--warmup': a.warmup = parseInt(v(), 10); break;
      case '--seed': a.seed = parseInt(v(), 10); break;
      case '--dist': a.dist = v(); break;
      case '--opt-dir': a.optDir = v(); break;
      case '--python': a.python = v(); break;
      case '--dim': { const s = v(); const e = s.lastIndexOf('='); a.dims[s.slice(0, e)] = parseInt(s.slice(e + 1), 10); break; }
      default: console.error(`ort_placement_bench: unknown argument ${k}`); process.exit(2);
    }
  }
  if (!a.before || !a.after) { console.error('ort_placement_bench: --before and --after are required'); process.exit(2); }
  a.name = a.name || path.basename(a.before, '.onnx');
  return a;
}

// The inputs of the exactness checks (seeded, same --dist and --dim rules).
const { makeInput } = require('../test/placement/ort_run.js');

const oneLine = (e) => String((e && e.message) || e).replace(/\s*\n\s*/g, ' ').trim().slice(0, 200);

async function open(ort, file, threads, optPath) {
  const o = {
    graphOptimizationLevel: 'all', intraOpNumThreads: threads, interOpNumThreads: 1,
    executionMode: 'sequential', logSeverityLevel: 4,
  };
  if (optPath) o.optimizedModelFilePath = optPath;
  try {
    return { s: await ort.InferenceSession.create(path.resolve(file), o) };
  } catch (e) {
    return { err: oneLine(e) };
  }
}

async function timeRun(x, feeds) {
  const t0 = process.hrtime.bigint();
  await x.s.run(feeds);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const median = (v) => { const s = [...v].sort((p, q) => p - q); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

function countConvs(python, file) {
  const code = 'import sys,onnx\nfor f in sys.argv[1:]:\n  g=onnx.load(f,load_external_data=False).graph\n' +
    "  t=[n.op_type for n in g.node]\n  print(f'QLinearConv={t.count(\"QLinearConv\")} ConvInteger={t.count(\"ConvInteger\")} Conv={t.count(\"Conv\")+t.count(\"FusedConv\")}')\n";
  const r = spawnSync(python, ['-c', code, file], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : `count failed: ${oneLine(r.stderr)}`;
}

async function main() {
  const a = parseArgs(process.argv);
  const ort = loadOrt();
  const optDir = a.optDir || path.dirname(path.resolve(a.after));
  fs.mkdirSync(optDir, { recursive: true });
  const optFiles = { before: path.join(optDir, `${a.name}.before.opt.onnx`), after: path.join(optDir, `${a.name}.after.opt.onnx`) };
  const loaded = {};
  for (const [ti, t] of a.threads.entries()) {
    const x = {};
    for (const k of ['before', 'after']) {
      if (ti === 0 && fs.existsSync(optFiles[k])) fs.unlinkSync(optFiles[k]);
      x[k] = await open(ort, a[k], t, ti === 0 ? optFiles[k] : null);
      if (ti === 0) loaded[k] = !x[k].err;
    }
    const ref = x.before.s || x.after.s;
    const show = (k, times) => (x[k].err ? `${k}: load-failed: ${x[k].err}`
      : `${k}: med ${median(times[k]).toFixed(2)} min ${Math.min(...times[k]).toFixed(2)} ms`);
    if (!ref) {
      console.log(`${a.name} t=${t} before: load-failed: ${x.before.err} | after: load-failed: ${x.after.err}`);
      continue;
    }
    const feeds = {};
    ref.inputMetadata.forEach((m, i) => { feeds[m.name] = makeInput(ort, m, i, a); });
    const live = ['before', 'after'].filter((k) => x[k].s);
    const times = { before: [], after: [] };
    try {
      for (let i = 0; i < a.warmup; i++) for (const k of live) await timeRun(x[k], feeds);
      for (let i = 0; i < a.runs; i++) {
        const order = i % 2 ? [...live].reverse() : live;
        for (const k of order) times[k].push(await timeRun(x[k], feeds));
      }
    } catch (e) {
      console.log(`${a.name} t=${t} run failed: ${oneLine(e)}`);
      continue;
    }
    const ratio = live.length === 2 ? (median(times.before) / median(times.after)).toFixed(3) : 'n/a';
    console.log(`${a.name} t=${t} ${show('before', times)} | ${show('after', times)} | before/after median ratio ${ratio}`);
    for (const k of live) await x[k].s.release();
  }
  const counts = (k) => (loaded[k] && fs.existsSync(optFiles[k]) ? countConvs(a.python, optFiles[k]) : 'n/a (not loaded)');
  console.log(`${a.name} ORT graph  before: ${counts('before')} | after: ${counts('after')}`);
  return 0;
}

main().then((c) => process.exit(c), (e) => { console.error(`ort_placement_bench: ${oneLine(e)}`); process.exit(2); });
