#!/usr/bin/env node
// Runs a model in ONNX Runtime (CPU, graph optimizations disabled, 1 thread)
// on seeded inputs and writes inputs and outputs as .npy files, so that
// qopt-run can replay the inputs and compare its outputs:
//   node ort_reference.js MODEL.onnx OUTDIR [--seed N] [--dist image|imagenet|uniform]
// Writes OUTDIR/in.<name>.npy, OUTDIR/out.<name>.npy and OUTDIR/manifest.json.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(require.resolve('onnxruntime-node', {
  paths: [process.env.ORT_NODE_DIR || process.cwd(), path.join(__dirname, '..', '..')],
}));

function mulberry32(a) {
  return () => {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DTYPES = {
  float32: ['<f4', Float32Array], int64: ['<i8', BigInt64Array], int32: ['<i4', Int32Array],
  uint8: ['|u1', Uint8Array], int8: ['|i1', Int8Array], float64: ['<f8', Float64Array],
  bool: ['|b1', Uint8Array], float16: ['<f2', Uint16Array],
};

// The float16 bits of a float32 value (round to nearest, ties to even),
// for ORT's float16 tensors (their data is the raw bits).
function toHalfBits(v) {
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff, man = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = man | 0x800000, shift = 14 - e;
    let h = m >>> shift;
    const rest = m & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rest > half || (rest === half && (h & 1))) h += 1;
    return sign | h;
  }
  let h = (e << 10) | (man >>> 13);
  const rest = man & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h += 1;
  return sign | h;
}

function npy(type, dims, data) {
  const descr = DTYPES[type][0];
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0; head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.concat([head, Buffer.from(header, 'latin1'), body]);
}

async function main() {
  const args = process.argv.slice(2);
  const model = args[0], out = args[1];
  let seed = 1, dist = 'uniform';
  for (let i = 2; i < args.length; i++) {
    if (args[i] === '--seed') seed = parseInt(args[++i], 10);
    else if (args[i] === '--dist') dist = args[++i];
  }
  fs.mkdirSync(out, { recursive: true });
  const session = await ort.InferenceSession.create(model, {
    graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1,
  });
  const feeds = {};
  const manifest = { inputs: [], outputs: [] };
  session.inputMetadata.forEach((meta, k) => {
    const dims = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const rnd = mulberry32(seed * 7919 + k);
    const type = meta.type;
    const Ctor = DTYPES[type][1];
    const data = new Ctor(n);
    for (let i = 0; i < n; i++) {
      if (type === 'float16') {
        data[i] = toHalfBits(rnd() * 2 - 1);
      } else if (type === 'float32' || type === 'float64') {
        if (dist !== 'uniform' && dims.length === 4) {
          const [, C, H, W] = dims;
          const c = Math.floor(i / (H * W)) % C, y = Math.floor(i / W) % H, x = i % W;
          let v = 0.5 + 0.25 * Math.sin(0.11 * x + 0.7 * c) * Math.cos(0.07 * y + 0.3 * c);
          v = Math.min(1, Math.max(0, v + 0.2 * (rnd() - 0.5)));
          if (dist === 'imagenet' && C === 3)
            v = (v - [0.485, 0.456, 0.406][c]) / [0.229, 0.224, 0.225][c];
          data[i] = v;
        } else {
          data[i] = rnd() * 2 - 1;
        }
      } else if (type === 'int64') {
        data[i] = BigInt(Math.floor(rnd() * 8));
      } else {
        data[i] = Math.floor(rnd() * 8);
      }
    }
    feeds[meta.name] = new ort.Tensor(type, data, dims);
    const file = `in.${k}.npy`;
    fs.writeFileSync(path.join(out, file), npy(type, dims, data));
    manifest.inputs.push({ name: meta.name, file });
  });
  const results = await session.run(feeds);
  session.outputNames.forEach((name, k) => {
    const t = results[name];
    const file = `out.${k}.npy`;
    fs.writeFileSync(path.join(out, file), npy(t.type, t.dims, t.data));
    manifest.outputs.push({ name, file });
  });
  fs.writeFileSync(path.join(out, 'manifest.json'), JSON.stringify(manifest, null, 1));
}
main().catch((e) => { console.error(`ort_reference: ${e.message.split('\n')[0]}`); process.exit(1); });
