'use strict';
// ONNX Runtime's side of compare.py that the C harness (ort_c_bench) cannot give: the reference outputs
// and ORT's own profile aggregated by op type. Uses onnxruntime-node from /work/shared/peer's work
// directory (the same libonnxruntime.so.1 as ort_c_bench), session options as ort_c_bench: intra = T,
// inter = 1, sequential, all graph optimizations.
//
//   node ort_ref.js SPEC.json OUT_DIR
//
// SPEC.json: { "model": PATH, "threads": 1, "profile_runs": 20,
//              "inputs": [ {"name", "dtype": "float32", "shape": [..], "file": RAW_LITTLE_ENDIAN} |
//                          {"name", "dtype": "int64", "shape": [], "value": 16000} ] }
// Writes OUT_DIR/outputs.json ([{name, type, dims, file}], raw float32 files beside it) and
// OUT_DIR/profile.json ({runs, model_run_median_us, op_types: {op: {us, nodes, share}}}): us is the median
// over `profile_runs` runs (after 5 warm-up runs) of the op type's time in one run, nodes its node calls per
// run, share = us / sum of us. Profiling adds a little time to every node. A control-flow node (If, Loop)
// includes the nodes of its subgraphs, which are listed as well.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { createRequire } = require('module');

const work = process.env.PEER_WORK ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'onnx-light-peer');
const ort = createRequire(path.join(path.resolve(work), 'package.json'))('onnxruntime-node');

function feedsOf(spec) {
  const feeds = {};
  for (const i of spec.inputs) {
    if (i.dtype === 'float32') {
      const b = fs.readFileSync(i.file);
      const data = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
      feeds[i.name] = new ort.Tensor('float32', data, i.shape);
    } else if (i.dtype === 'int64') {
      feeds[i.name] = new ort.Tensor('int64', BigInt64Array.from([BigInt(i.value)]), i.shape);
    } else {
      throw new Error(`${i.name}: unsupported dtype ${i.dtype}`);
    }
  }
  return feeds;
}

function options(spec, extra) {
  return Object.assign({ intraOpNumThreads: spec.threads || 1, interOpNumThreads: 1, executionMode: 'sequential',
                         graphOptimizationLevel: spec.graph_optimization_level || 'all', executionProviders: ['cpu'] }, extra);
}

async function main() {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const out = process.argv[3];
  fs.mkdirSync(out, { recursive: true });
  const feeds = feedsOf(spec);

  // reference outputs
  const session = await ort.InferenceSession.create(spec.model, options(spec, {}));
  const res = await session.run(feeds);
  const outs = [];
  session.outputNames.forEach((name, k) => {
    const t = res[name];
    const file = path.join(out, `output${k}.bin`);
    if (t.type !== 'float32') throw new Error(`${name}: output type ${t.type} (only float32 compared)`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    outs.push({ name, type: t.type, dims: t.dims.map(Number), file });
  });
  fs.writeFileSync(path.join(out, 'outputs.json'), JSON.stringify(outs, null, 1));
  await session.release();

  // profile: a fresh session with enableProfiling
  const runs = spec.profile_runs || 20, warmup = 5;
  const profDir = fs.mkdtempSync(path.join(out, 'prof-'));
  const ps = await ort.InferenceSession.create(spec.model, options(spec, {
    enableProfiling: true, profileFilePrefix: path.join(profDir, 'ort') }));
  for (let r = 0; r < warmup + runs; r++) await ps.run(feeds);
  await ps.endProfiling();
  await ps.release();
  const file = fs.readdirSync(profDir).filter((f) => f.endsWith('.json')).map((f) => path.join(profDir, f))[0];
  if (!file) throw new Error(`no profile written under ${profDir}`);
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  // the first runs are cold (page faults, thread start-up): keep only the nodes inside the last `runs` runs
  const kept = events.filter((e) => e.cat === 'Session' && e.name === 'model_run').sort((a, b) => a.ts - b.ts)
    .slice(warmup);
  // per op type: the median over the kept runs of its time in each run (robust to a preempted run)
  const runOf = (e) => kept.findIndex((r) => e.ts >= r.ts && e.ts <= r.ts + r.dur);
  const perRun = {};  // op -> [us in run 0, run 1, ...]
  const nodes = {};
  for (const e of events) {
    if (e.cat !== 'Node' || !String(e.name).endsWith('_kernel_time')) continue;
    const k = runOf(e);
    if (k < 0) continue;
    const op = (e.args && e.args.op_name) || '?';
    perRun[op] = perRun[op] || new Array(kept.length).fill(0);
    perRun[op][k] += e.dur;
    nodes[op] = (nodes[op] || 0) + 1;
  }
  const n = kept.length;
  const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[s.length >> 1]; };
  const ops = {};
  let total = 0;
  for (const op of Object.keys(perRun)) {
    ops[op] = { us: median(perRun[op]), nodes: nodes[op] / n };
    total += ops[op].us;
  }
  for (const op of Object.keys(ops)) ops[op].share = total ? ops[op].us / total : 0;
  const modelUs = kept.map((r) => r.dur).sort((a, b) => a - b);
  fs.writeFileSync(path.join(out, 'profile.json'),
    JSON.stringify({ runs: n, model_run_median_us: modelUs[n >> 1], op_types: ops, trace: file }, null, 1));
}

module.exports = { ort, feedsOf };  // for first_run_ort.js

if (require.main === module) main().catch((e) => { console.error(`ort_ref.js: ${e.message}`); process.exit(1); });
