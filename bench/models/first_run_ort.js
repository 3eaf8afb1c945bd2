'use strict';
// ONNX Runtime's side of first_run.py: in one fresh process, the session creation, the first run and the
// median of the next `steady_runs` runs (onnxruntime-node, options of ort_c_bench: intra = T, inter = 1,
// sequential, all graph optimizations). Node adds its own cost to every run; first_run.py therefore also
// reports each side's first run minus its steady run, where that cost cancels.
//
//   node first_run_ort.js SPEC.json      (SPEC as ort_ref.js's, plus "steady_runs")
// Prints {"create_ms", "first_ms", "steady_ms"} on one line.
const fs = require('fs');
const { ort, feedsOf } = require('./ort_ref');

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const feeds = feedsOf(spec);
  const ms = (a, b) => Number(b - a) / 1e6;
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(spec.model, {
    intraOpNumThreads: spec.threads || 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', executionProviders: ['cpu'] });
  const t1 = process.hrtime.bigint();
  await session.run(feeds);
  const t2 = process.hrtime.bigint();
  const steady = [];
  for (let r = 0; r < (spec.steady_runs || 20); r++) {
    const a = process.hrtime.bigint();
    await session.run(feeds);
    steady.push(ms(a, process.hrtime.bigint()));
  }
  steady.sort((a, b) => a - b);
  console.log(JSON.stringify({ create_ms: ms(t0, t1), first_ms: ms(t1, t2), steady_ms: steady[steady.length >> 1] }));
}

main().catch((e) => { console.error(`first_run_ort.js: ${e.message}`); process.exit(1); });
