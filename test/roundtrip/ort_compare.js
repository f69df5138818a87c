#!/usr/bin/env node
// ort_compare.js -- run two ONNX models on the same seeded random inputs with ONNX Runtime
// (onnxruntime-node, CPU EP) and check that every output is bit-identical.
//
// usage: node ort_compare.js A.onnx B.onnx [--seed N] [--dim name=value]... [--quiet]
//
//   A is the reference ("original") model, B the model under test (e.g. qopt's export).
//   Inputs are generated from A's input metadata and fed unchanged to B:
//     * symbolic / unknown / non-positive dims -> 1 unless given with --dim name=value
//       (name '?' = every dim without a name, e.g. dim_value -1 or no dim info: --dim '?=10')
//     * float32/float64/float16: uniform in [-2, 2)
//     * uint8 0..255, int8 -128..127, uint16 0..65535, int16 -32768..32767,
//       int32/int64 -8..8, uint32/uint64 0..16, bool 0/1, int4 -8..7, uint4 0..15
//     * PRNG: mulberry32(seed, input index) -> identical inputs on every run/machine
//   Outputs are fetched by name (all of A's outputs) and compared as raw bytes, together with
//   element type and dims.  NaN == NaN when the bits are equal; +0 != -0.
//
// exit status:
//   0  all outputs bit-identical
//   1  some output differs (or B has a different set of outputs)
//   2  other error (bad arguments, B fails to load or run, unsupported input type, ...)
//   3  ORT cannot create a session for, or run, the ORIGINAL model A
//      (one line "ORT rejects original: <error>" on stdout)
//
// onnxruntime-node is resolved from $ORT_NODE_DIR, ./node_modules (cwd), the repo root's
// node_modules, then /work/npm.  CI installs it with
//   npm install --ignore-scripts onnxruntime-node@1.30.0      (in the repo root)
'use strict';
const path = require('path');

const EXIT_SAME = 0;
const EXIT_DIFF = 1;
const EXIT_ERROR = 2;
const EXIT_ORIGINAL_REJECTED = 3;

function loadOrt() {
  const dirs = [process.env.ORT_NODE_DIR, process.cwd(), path.join(__dirname, '..', '..'), '/work/npm']
    .filter(Boolean);
  const tried = [];
  for (const d of dirs) {
    try {
      return require(require.resolve('onnxruntime-node', { paths: [d] }));
    } catch (e) {
      tried.push(d);
    }
  }
  // ORT_NODE_DIR may also point directly at the package directory.
  if (process.env.ORT_NODE_DIR) {
    try { return require(process.env.ORT_NODE_DIR); } catch (e) { /* fall through */ }
  }
  throw new Error(`cannot find onnxruntime-node (looked from: ${tried.join(', ')})`);
}

function usage(msg) {
  if (msg) console.error(`ort_compare: ${msg}`);
  console.error('usage: node ort_compare.js A.onnx B.onnx [--seed N] [--dim name=value]... [--quiet]');
  process.exit(EXIT_ERROR);
}

function parseArgs(argv) {
  const a = { files: [], seed: 1, dims: {}, quiet: false };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--seed') {
      if (i + 1 >= argv.length) usage('--seed needs a value');
      a.seed = parseInt(argv[++i], 10);
      if (!Number.isFinite(a.seed)) usage('bad --seed');
    } else if (k === '--dim') {
      if (i + 1 >= argv.length) usage('--dim needs name=value');
      const s = argv[++i];
      const eq = s.lastIndexOf('=');
      const v = parseInt(s.slice(eq + 1), 10);
      if (eq <= 0 || !(v >= 0)) usage(`bad --dim ${s}`);
      a.dims[s.slice(0, eq)] = v;
    } else if (k === '--quiet') {
      a.quiet = true;
    } else if (k === '-h' || k === '--help') {
      usage();
    } else if (k.startsWith('--')) {
      usage(`unknown option ${k}`);
    } else {
      a.files.push(k);
    }
  }
  if (a.files.length !== 2) usage('need exactly two model files');
  return a;
}

// ---------------------------------------------------------------------------------------------
// deterministic input generation

function mulberry32(seed) {
  let t = seed >>> 0;
  return function next() {
    t = (t + 0x6D2B79F5) >>> 0;
    let r = Math.imul(t ^ (t >>> 15), 1 | t);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296; // [0, 1)
  };
}

// float32 -> IEEE half bits (round to nearest even); only needs to handle finite values in [-2,2).
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function toHalfBits(x) {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  let mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

// [typed array constructor, integer range lo..hi inclusive]  (null range = float)
const INPUT_TYPES = {
  float32: [Float32Array, null],
  float64: [Float64Array, null],
  float16: [Uint16Array, null],
  uint8: [Uint8Array, [0, 255]],
  int8: [Int8Array, [-128, 127]],
  uint16: [Uint16Array, [0, 65535]],
  int16: [Int16Array, [-32768, 32767]],
  int32: [Int32Array, [-8, 8]],
  uint32: [Uint32Array, [0, 16]],
  int64: [BigInt64Array, [-8, 8]],
  uint64: [BigUint64Array, [0, 16]],
  bool: [Uint8Array, [0, 1]],
  int4: [Uint8Array, [-8, 7]],
  uint4: [Uint8Array, [0, 15]],
};

function resolveShape(shape, dims) {
  return (shape || []).map((d) => {
    if (typeof d === 'number' && d >= 0) return d;
    const key = (typeof d === 'string' && d !== '') ? d : '?';
    if (Object.prototype.hasOwnProperty.call(dims, key)) return dims[key];
    return 1;
  });
}

function makeInput(ort, meta, idx, args) {
  if (meta.isTensor === false) throw new Error(`input '${meta.name}' is not a tensor`);
  const spec = INPUT_TYPES[meta.type];
  if (!spec) throw new Error(`input '${meta.name}' has unsupported type ${meta.type}`);
  const [T, range] = spec;
  const shape = resolveShape(meta.shape, args.dims);
  const n = shape.reduce((x, y) => x * y, 1);
  const rnd = mulberry32((Math.imul(args.seed, 0x9E3779B1) + Math.imul(idx + 1, 0x85EBCA77)) >>> 0);
  let data;
  if (range === null) {
    data = new T(n);
    for (let i = 0; i < n; i++) {
      const v = rnd() * 4 - 2;
      data[i] = meta.type === 'float16' ? toHalfBits(v) : v;
    }
  } else if (meta.type === 'int4' || meta.type === 'uint4') {
    // packed two elements per byte, low nibble first
    data = new T(Math.ceil(n / 2));
    for (let i = 0; i < n; i++) {
      const v = (range[0] + Math.floor(rnd() * (range[1] - range[0] + 1))) & 0xf;
      data[i >> 1] |= (i & 1) ? (v << 4) : v;
    }
  } else {
    data = new T(n);
    const big = T === BigInt64Array || T === BigUint64Array;
    for (let i = 0; i < n; i++) {
      const v = range[0] + Math.floor(rnd() * (range[1] - range[0] + 1));
      data[i] = big ? BigInt(v) : v;
    }
  }
  return new ort.Tensor(meta.type, data, shape);
}

// ---------------------------------------------------------------------------------------------
// comparison

function rawBytes(t) {
  const d = t.data;
  if (ArrayBuffer.isView(d)) return Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  return Buffer.from(JSON.stringify(d), 'utf8'); // string tensors
}

function describe(t) {
  return `${t.type} [${t.dims.join(',')}]`;
}

function elemString(t, i) {
  const d = t.data;
  if (i >= d.length) return '?';
  return String(d[i]);
}

// returns null if identical, else a one-line description of the first difference
function compareTensors(a, b) {
  if (a.type !== b.type) return `type ${a.type} vs ${b.type}`;
  if (a.dims.length !== b.dims.length || a.dims.some((d, i) => d !== b.dims[i])) {
    return `dims [${a.dims.join(',')}] vs [${b.dims.join(',')}]`;
  }
  const ba = rawBytes(a);
  const bb = rawBytes(b);
  if (ba.equals(bb)) return null;
  if (ba.length !== bb.length) return `byte size ${ba.length} vs ${bb.length}`;
  const d = a.data;
  const width = ArrayBuffer.isView(d) ? (d.BYTES_PER_ELEMENT || 1) : 1;
  let first = -1;
  let count = 0;
  const nElem = Math.floor(ba.length / width);
  for (let i = 0; i < nElem; i++) {
    if (ba.compare(bb, i * width, (i + 1) * width, i * width, (i + 1) * width) !== 0) {
      if (first < 0) first = i;
      count++;
    }
  }
  let maxAbs = '';
  if (a.type === 'float32' || a.type === 'float64') {
    let m = 0;
    for (let i = 0; i < d.length; i++) {
      const x = Math.abs(d[i] - b.data[i]);
      if (x > m || Number.isNaN(x)) m = Number.isNaN(x) ? NaN : x;
    }
    maxAbs = `, max |diff| ${m}`;
  }
  return `${count} element(s) differ, first at flat index ${first}: ${elemString(a, first)} vs ` +
         `${elemString(b, first)}${maxAbs}`;
}

function oneLine(e) {
  const s = (e && e.message) ? e.message : String(e);
  return s.replace(/\s*\n\s*/g, ' ').trim();
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv);
  const [fileA, fileB] = args.files.map((f) => path.resolve(f));
  let ort;
  try {
    ort = loadOrt();
  } catch (e) {
    console.log(`ort_compare: ${oneLine(e)}`);
    return EXIT_ERROR;
  }
  const opts = {
    graphOptimizationLevel: 'disabled',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    logSeverityLevel: 4, // errors are reported by us, on one line
  };

  // --- original model A: any ORT failure here means "ORT rejects original"
  let sessA;
  try {
    sessA = await ort.InferenceSession.create(fileA, opts);
  } catch (e) {
    console.log(`ORT rejects original: ${oneLine(e)}`);
    return EXIT_ORIGINAL_REJECTED;
  }
  const metas = sessA.inputMetadata || [];
  const feeds = {};
  try {
    metas.forEach((m, i) => { feeds[m.name] = makeInput(ort, m, i, args); });
  } catch (e) {
    console.log(`ort_compare: cannot generate inputs: ${oneLine(e)}`);
    return EXIT_ERROR;
  }
  const outNames = sessA.outputNames.slice();
  let outA;
  try {
    outA = await sessA.run(feeds, outNames);
  } catch (e) {
    console.log(`ORT rejects original: run failed: ${oneLine(e)}`);
    return EXIT_ORIGINAL_REJECTED;
  }

  // --- model under test B
  let sessB;
  let outB;
  try {
    sessB = await ort.InferenceSession.create(fileB, opts);
  } catch (e) {
    console.log(`ort_compare: ORT cannot load B: ${oneLine(e)}`);
    return EXIT_ERROR;
  }
  const inNamesA = metas.map((m) => m.name);
  const inNamesB = sessB.inputNames.slice();
  if (JSON.stringify(inNamesA) !== JSON.stringify(inNamesB)) {
    console.log(`  graph inputs differ (names/order): A ${JSON.stringify(inNamesA)} vs B ${JSON.stringify(inNamesB)}`);
    console.log('DIFFERENT');
    return EXIT_DIFF;
  }
  const outNamesB = sessB.outputNames.slice();
  const missing = outNames.filter((n) => !outNamesB.includes(n));
  const extra = outNamesB.filter((n) => !outNames.includes(n));
  try {
    const common = outNames.filter((n) => outNamesB.includes(n));
    outB = common.length ? await sessB.run(feeds, common) : {};
  } catch (e) {
    console.log(`ort_compare: ORT cannot run B: ${oneLine(e)}`);
    return EXIT_ERROR;
  }

  let bad = 0;
  for (const name of outNames) {
    if (!outB[name]) {
      console.log(`  ${name}: MISSING in B`);
      bad++;
      continue;
    }
    const diff = compareTensors(outA[name], outB[name]);
    if (diff === null) {
      if (!args.quiet) console.log(`  ${name}: identical (${describe(outA[name])})`);
    } else {
      console.log(`  ${name}: DIFFERENT (${describe(outA[name])}): ${diff}`);
      bad++;
    }
  }
  for (const name of extra) {
    console.log(`  ${name}: EXTRA output in B`);
    bad++;
  }
  if (JSON.stringify(outNames) !== JSON.stringify(outNamesB) && missing.length === 0 && extra.length === 0) {
    console.log(`  output order differs: A ${JSON.stringify(outNames)} vs B ${JSON.stringify(outNamesB)}`);
    bad++;
  }
  const nIn = metas.length;
  if (bad === 0) {
    console.log(`IDENTICAL: ${outNames.length} output(s) bit-identical (${nIn} input(s), seed ${args.seed})`);
    return EXIT_SAME;
  }
  console.log(`DIFFERENT: ${bad} of ${outNames.length + extra.length} output(s) differ (${nIn} input(s), seed ${args.seed})`);
  return EXIT_DIFF;
}

main().then(
  (code) => process.exit(code),
  (e) => { console.log(`ort_compare: ${oneLine(e)}`); process.exit(EXIT_ERROR); },
);
