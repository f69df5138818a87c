#!/usr/bin/env node
// ort_run.js -- ONNX Runtime 1.30 (onnxruntime-node, CPU EP) helper for the placement checks.
//
// Two modes:
//
//   node ort_run.js compare REF.onnx CAND.onnx [CAND.onnx ...] [options]
//     Runs REF and every CAND on the same seeded inputs (generated once from REF's input
//     metadata) and compares every output of REF with the same-named output of each CAND as
//     raw bytes (element type and dims too; NaN == NaN only when the bits are equal, +0 != -0).
//     Prints one JSON line per candidate:
//       {"file": CAND, "status": "identical"|"different"|"load-failed"|"run-failed", "detail": "..."}
//     exit 0: every candidate identical; 1: some candidate differs, fails to load or to run;
//          2: usage / harness error; 3: ORT cannot load or run REF itself (one JSON line
//          {"file": REF, "status": "ref-rejected", "detail": ...}, no candidate is run).
//
//   node ort_run.js load MODEL.onnx [--level all] [--opt-model OUT.onnx]
//     Creates a session and prints {"file", "status": "loaded"|"load-failed", "detail"};
//     with --opt-model also saves ORT's optimized graph there. exit 0 loaded, 1 not.
//
// options:
//   --seed N        input seed (default 1)
//   --dist D        float inputs: uniform (U[-1,1), default), image (smooth image-like values
//                   in [0,1] for 4-D inputs), imagenet (image, then ImageNet mean/std on 3 channels)
//   --dim name=V    value of a symbolic dim ('?' = dims without a name, e.g. dim_value -1); else 1
//   --level L       graph optimization level: disabled (default for compare) | basic | extended | all
//   --threads N     intra-op threads (default 1); inter-op is always 1, execution sequential
//
// onnxruntime-node is resolved from $ORT_NODE_DIR, the cwd, then this repository's root
// (install there: npm install --ignore-scripts onnxruntime-node@1.30.0).
'use strict';
const path = require('path');

function loadOrt() {
  const dirs = [process.env.ORT_NODE_DIR, process.cwd(), path.join(__dirname, '..', '..')].filter(Boolean);
  return require(require.resolve('onnxruntime-node', { paths: dirs }));
}

function oneLine(e) {
  return String((e && e.message) || e).replace(/\s*\n\s*/g, ' ').trim();
}

function usage(msg) {
  console.error(`ort_run: ${msg}`);
  console.error('usage: node ort_run.js compare REF CAND... [--seed N] [--dist D] [--dim n=v] [--level L] [--threads N]');
  console.error('       node ort_run.js load MODEL [--level L] [--opt-model OUT]');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { mode: argv[2], files: [], seed: 1, dist: 'uniform', dims: {}, level: null, threads: 1 };
  if (a.mode !== 'compare' && a.mode !== 'load') usage('first argument must be compare or load');
  for (let i = 3; i < argv.length; i++) {
    const k = argv[i];
    const v = () => { if (i + 1 >= argv.length) usage(`${k} needs a value`); return argv[++i]; };
    if (k === '--seed') a.seed = parseInt(v(), 10);
    else if (k === '--dist') a.dist = v();
    else if (k === '--level') a.level = v();
    else if (k === '--threads') a.threads = parseInt(v(), 10);
    else if (k === '--opt-model') a.optModel = v();
    else if (k === '--dim') {
      const s = v(); const eq = s.lastIndexOf('=');
      if (eq <= 0) usage(`bad --dim ${s}`);
      a.dims[s.slice(0, eq)] = parseInt(s.slice(eq + 1), 10);
    } else if (k.startsWith('--')) usage(`unknown option ${k}`);
    else a.files.push(k);
  }
  if (!['uniform', 'image', 'imagenet'].includes(a.dist)) usage(`bad --dist ${a.dist}`);
  if (a.level === null) a.level = a.mode === 'compare' ? 'disabled' : 'all';
  if (a.mode === 'compare' && a.files.length < 2) usage('compare needs REF and at least one CAND');
  if (a.mode === 'load' && a.files.length !== 1) usage('load needs exactly one model');
  return a;
}

function mulberry32(seed) {
  let t = seed >>> 0;
  return () => {
    t = (t + 0x6D2B79F5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

// [typed array, integer range] (null = float)
const TYPES = {
  float32: [Float32Array, null], float64: [Float64Array, null],
  uint8: [Uint8Array, [0, 255]], int8: [Int8Array, [-128, 127]],
  uint16: [Uint16Array, [0, 65535]], int16: [Int16Array, [-32768, 32767]],
  int32: [Int32Array, [-8, 8]], uint32: [Uint32Array, [0, 16]],
  int64: [BigInt64Array, [-8, 8]], uint64: [BigUint64Array, [0, 16]], bool: [Uint8Array, [0, 1]],
};

function makeInput(ort, meta, idx, a) {
  const spec = TYPES[meta.type];
  if (!spec) throw new Error(`input '${meta.name}' has unsupported type ${meta.type}`);
  const [T, range] = spec;
  const dims = (meta.shape || []).map((d) => {
    if (typeof d === 'number' && d >= 0) return d;
    const key = typeof d === 'string' && d !== '' ? d : '?';
    return Object.prototype.hasOwnProperty.call(a.dims, key) ? a.dims[key] : 1;
  });
  const n = dims.reduce((x, y) => x * y, 1);
  const rnd = mulberry32((Math.imul(a.seed, 0x9E3779B1) + Math.imul(idx + 1, 0x85EBCA77)) >>> 0);
  const data = new T(n);
  const big = T === BigInt64Array || T === BigUint64Array;
  for (let i = 0; i < n; i++) {
    if (range) {
      const v = range[0] + Math.floor(rnd() * (range[1] - range[0] + 1));
      data[i] = big ? BigInt(v) : v;
    } else if (a.dist !== 'uniform' && dims.length === 4) {
      const [, C, H, W] = dims;
      const c = Math.floor(i / (H * W)) % C, y = Math.floor(i / W) % H, x = i % W;
      let v = 0.5 + 0.25 * Math.sin(0.11 * x + 0.7 * c) * Math.cos(0.07 * y + 0.3 * c);
      v = Math.min(1, Math.max(0, v + 0.2 * (rnd() - 0.5)));
      if (a.dist === 'imagenet' && C === 3) v = (v - [0.485, 0.456, 0.406][c]) / [0.229, 0.224, 0.225][c];
      data[i] = v;
    } else {
      data[i] = rnd() * 2 - 1;
    }
  }
  return new ort.Tensor(meta.type, data, dims);
}

function rawBytes(t) {
  const d = t.data;
  if (ArrayBuffer.isView(d)) return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return Buffer.from(JSON.stringify(d), 'utf8');
}

// null if bit-identical, else a short description
function diff(a, b) {
  if (a.type !== b.type) return `type ${a.type} vs ${b.type}`;
  if (a.dims.join(',') !== b.dims.join(',')) return `dims [${a.dims}] vs [${b.dims}]`;
  const x = rawBytes(a), y = rawBytes(b);
  if (x.equals(y)) return null;
  const w = (ArrayBuffer.isView(a.data) && a.data.BYTES_PER_ELEMENT) || 1;
  let count = 0, first = -1, maxAbs = 0;
  for (let i = 0; i * w < x.length; i++) {
    if (x.compare(y, i * w, (i + 1) * w, i * w, (i + 1) * w) !== 0) {
      if (first < 0) first = i;
      count++;
      if (typeof a.data[i] === 'number') maxAbs = Math.max(maxAbs, Math.abs(a.data[i] - b.data[i]));
    }
  }
  return `${count} element(s) differ, first at ${first}: ${a.data[first]} vs ${b.data[first]}, max |diff| ${maxAbs}`;
}

function sessionOptions(a) {
  const o = {
    graphOptimizationLevel: a.level, intraOpNumThreads: a.threads, interOpNumThreads: 1,
    executionMode: 'sequential', logSeverityLevel: 4,
  };
  if (a.optModel) o.optimizedModelFilePath = path.resolve(a.optModel);
  return o;
}

const say = (o) => console.log(JSON.stringify(o));

async function main() {
  const a = parseArgs(process.argv);
  const ort = loadOrt();
  if (a.mode === 'load') {
    try {
      const s = await ort.InferenceSession.create(path.resolve(a.files[0]), sessionOptions(a));
      say({ file: a.files[0], status: 'loaded', detail: `level ${a.level}` });
      await s.release();
      return 0;
    } catch (e) {
      say({ file: a.files[0], status: 'load-failed', detail: oneLine(e) });
      return 1;
    }
  }
  const [ref, ...cands] = a.files;
  let feeds = {}, outRef, names;
  try {
    const s = await ort.InferenceSession.create(path.resolve(ref), sessionOptions(a));
    s.inputMetadata.forEach((m, i) => { feeds[m.name] = makeInput(ort, m, i, a); });
    names = s.outputNames.slice();
    outRef = await s.run(feeds, names);
  } catch (e) {
    say({ file: ref, status: 'ref-rejected', detail: oneLine(e) });
    return 3;
  }
  let bad = 0;
  for (const c of cands) {
    let s;
    try {
      s = await ort.InferenceSession.create(path.resolve(c), sessionOptions(a));
    } catch (e) {
      say({ file: c, status: 'load-failed', detail: oneLine(e) }); bad++; continue;
    }
    const want = s.outputNames.slice();
    if (want.join('\n') !== names.join('\n')) {
      say({ file: c, status: 'different', detail: `outputs ${JSON.stringify(want)} vs ${JSON.stringify(names)}` });
      bad++; continue;
    }
    let out;
    try {
      out = await s.run(feeds, names);
    } catch (e) {
      say({ file: c, status: 'run-failed', detail: oneLine(e) }); bad++; continue;
    }
    const diffs = names.map((n) => [n, diff(outRef[n], out[n])]).filter(([, d]) => d !== null);
    if (diffs.length === 0) {
      say({ file: c, status: 'identical', detail: `${names.length} output(s) bit-identical` });
    } else {
      say({ file: c, status: 'different', detail: diffs.map(([n, d]) => `${n}: ${d}`).join('; ') });
      bad++;
    }
    await s.release();
  }
  return bad ? 1 : 0;
}

// bench/ort_placement_bench.js feeds its sessions the same inputs.
module.exports = { makeInput, loadOrt };

if (require.main === module) {
  main().then((c) => process.exit(c), (e) => { console.error(`ort_run: ${oneLine(e)}`); process.exit(2); });
}
