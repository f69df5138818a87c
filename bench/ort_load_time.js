#!/usr/bin/env node
// Median time ONNX Runtime (onnxruntime-node, CPU) takes to load a model:
// InferenceSession.create with graph optimizations disabled, one thread.
// usage: node ort_load_time.js MODEL.onnx [runs]
'use strict';
const path = require('path');
const ort = require(require.resolve('onnxruntime-node', {
  paths: [process.env.ORT_NODE_DIR || process.cwd(), path.join(__dirname, '..')],
}));

async function main() {
  const model = process.argv[2];
  const runs = parseInt(process.argv[3] || '10', 10);
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    const s = await ort.InferenceSession.create(model, {
      graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, interOpNumThreads: 1,
    });
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await s.release();
  }
  times.sort((a, b) => a - b);
  console.log(times[Math.floor(times.length / 2)].toFixed(2));
}
main().catch((e) => { console.error(e.message); process.exit(1); });
