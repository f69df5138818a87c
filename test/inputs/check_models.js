#!/usr/bin/env node
// Load every model under test/inputs/onnx/{good,bad} in ONNX Runtime (onnxruntime-node)
// and, for the ones that load, run them once with zero-filled inputs.
//
// Usage:  node test/inputs/check_models.js [path/to/onnxruntime-node]
//   default module path: /work/npm/node_modules/onnxruntime-node (or $ORT_NODE_PATH)
//
// Exit code is 0 when every good model loads and runs, except the ones listed in
// EXPECTED_GOOD_FAILURES (ORT has no kernel/schema for them); bad-model results are
// informational only (ORT is not the qopt importer, and some "bad" inputs such as
// int4_weight are valid ONNX that qopt merely does not support).
'use strict';
const fs = require('fs');
const path = require('path');

const ortPath = process.argv[2] || process.env.ORT_NODE_PATH ||
    '/work/npm/node_modules/onnxruntime-node';
const ort = require(ortPath);

const ROOT = path.join(__dirname, 'onnx');

// good model -> reason ORT is expected to reject it
const EXPECTED_GOOD_FAILURES = {
  custom_domain_op: 'com.example MyOp has no ORT schema/kernel',
};

const TYPED = {
  float32: Float32Array, float16: Uint16Array, uint8: Uint8Array, int8: Int8Array,
  uint16: Uint16Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array,
  bool: Uint8Array,
};

function feedsFor(session) {
  const feeds = {};
  const meta = session.inputMetadata || [];
  session.inputNames.forEach((name, i) => {
    const m = Array.isArray(meta) ? meta[i] : meta[name];
    const type = (m && m.type) || 'float32';
    const dims = ((m && m.shape) || [1]).map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const Ctor = TYPED[type];
    if (!Ctor) throw new Error(`no feed for input ${name} of type ${type}`);
    feeds[name] = new ort.Tensor(type, new Ctor(n), dims);
  });
  return feeds;
}

async function tryModel(file) {
  let session;
  try {
    session = await ort.InferenceSession.create(file, {logSeverityLevel: 4});
  } catch (e) {
    return {stage: 'create', ok: false, msg: String(e.message || e).split('\n')[0]};
  }
  try {
    const out = await session.run(feedsFor(session), {logSeverityLevel: 4});
    const desc = Object.entries(out).map(([k, t]) => `${k}:${t.type}[${t.dims}]`).join(' ');
    return {stage: 'run', ok: true, msg: desc};
  } catch (e) {
    return {stage: 'run', ok: false, msg: String(e.message || e).split('\n')[0]};
  } finally {
    if (session.release) await session.release();
  }
}

async function main() {
  let unexpected = 0;
  for (const group of ['good', 'bad']) {
    const dir = path.join(ROOT, group);
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.onnx')).sort();
    console.log(`== ${group} (${files.length})`);
    for (const f of files) {
      const name = f.replace(/\.onnx$/, '');
      const r = await tryModel(path.join(dir, f));
      let tag = r.ok ? 'OK  ' : 'FAIL';
      if (group === 'good') {
        const expected = EXPECTED_GOOD_FAILURES[name];
        if (!r.ok && expected) tag = 'XFAIL';
        else if (r.ok && expected) { tag = 'XPASS'; unexpected++; }
        else if (!r.ok) unexpected++;
      } else {
        tag = r.ok ? 'LOADS' : 'REJECTED';
      }
      console.log(`${tag.padEnd(8)} ${name.padEnd(28)} [${r.stage}] ${r.msg.slice(0, 160)}`);
    }
  }
  console.log(unexpected === 0 ? 'all good models behaved as expected' :
      `${unexpected} good model(s) behaved unexpectedly`);
  process.exit(unexpected === 0 ? 0 : 1);
}

main().catch((e) => { console.error(e); process.exit(2); });
