/**
 * Summarizes a .cpuprofile written under load (BENCH_CPU_PROF, bench/bench-child.ts): self time per
 * request by category and by function, and optionally the callers of some functions.
 *
 *   node scripts/cpu-profile-summary.js <file.cpuprofile> <req/s under load> [top=30]
 *   CPU_PROFILE_WINDOW=12.5 (seconds of load at the end of the profile, the last 0.3 s left out: the stop)
 *   CPU_PROFILE_CALLERS='^writev$' CPU_PROFILE_DEPTH=8 (who calls a native function, e.g. a socket write)
 *
 * A native frame (writev, the garbage collector's own excepted) is counted in the category of its nearest
 * JavaScript caller, so a socket write lands on the code that wrote, not on "native".
 */
const fs = require('node:fs');
const process = require('node:process');

const [file, rateArg, topArg] = process.argv.slice(2);
if (!file || !rateArg) {
  console.error('usage: node scripts/cpu-profile-summary.js <file.cpuprofile> <req/s> [top]');
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const windowSeconds = Number(process.env.CPU_PROFILE_WINDOW ?? 12.5);
const requests = Number(rateArg) * windowSeconds;
const top = Number(topArg ?? 30);

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const end = profile.endTime - 300_000;
const start = end - windowSeconds * 1e6;
const selfTime = new Map();
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0;
  if (at < start || at >= end) continue;
  selfTime.set(profile.samples[i], (selfTime.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
}

const shortUrl = (url) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/.*node_modules\//, 'nm:')
    .replace(/.*\.bench-build-\d+\//, '');
const label = (node) => {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}`;
};

const CATEGORIES = [
  [/pino|sonic-boom|src\/logging/, 'logging'],
  [/nm:(ioredis|redis-parser)|src\/rate-limits\/redis|redis-credit-ledger/, 'redis client'],
  [/nm:(pg|pg-protocol|pg-pool|typeorm)\//, 'pg/typeorm'],
  [/nm:(class-validator|class-transformer)|src\/common\/validation/, 'validation'],
  [/src\/access\/guards/, 'guards'],
  [/src\/access\/|src\/rate-limits\//, 'key check steps'],
  [/src\/usage\//, 'usage counter'],
  [/src\/http\//, 'http adapter (src/http)'],
  [/src\//, 'src, other'],
  [/nm:@nestjs\//, 'nest'],
  [/nm:rxjs\//, 'rxjs'],
  [
    /nm:(express|router|body-parser|raw-body|finalhandler|on-finished|path-to-regexp|qs|type-is|content-type|parseurl)\//,
    'express',
  ],
  [/^node:internal\/crypto|^node:crypto/, 'crypto'],
  [/^node:(_http|http|net|events|stream|internal\/(http|streams|stream_base|net))/, 'node http/net/streams'],
  [/^node:(internal\/process\/task_queues|internal\/timers|timers)/, 'node timers/microtasks'],
  [/^node:/, 'node, other'],
  [/nm:/, 'packages, other'],
];
const SPECIAL = new Set(['(garbage collector)', '(idle)', '(program)', '(root)']);
function category(node) {
  const { functionName, url } = node.callFrame;
  if (functionName === '(garbage collector)') return 'GC';
  if (SPECIAL.has(functionName)) return functionName;
  if (functionName === 'runMicrotasks') return 'node timers/microtasks';
  // A native frame goes to the code that called into Node for it: a socket write to whoever wrote.
  let caller = node;
  if (!url)
    while (parent.has(caller.id) && (!caller.callFrame.url || caller.callFrame.url.startsWith('node:')))
      caller = byId.get(parent.get(caller.id));
  const where = shortUrl(caller.callFrame.url || url);
  if (!url && /src\/http\/|nm:(express|@nestjs)\//.test(where)) return 'node http/net/streams';
  for (const [pattern, name] of CATEGORIES) if (pattern.test(where)) return name;
  return 'native, other';
}

const perFunction = new Map();
const perCategory = new Map();
let busy = 0;
for (const [id, time] of selfTime) {
  const node = byId.get(id);
  if (node.callFrame.functionName === '(idle)') continue;
  busy += time;
  perFunction.set(label(node), (perFunction.get(label(node)) ?? 0) + time);
  perCategory.set(category(node), (perCategory.get(category(node)) ?? 0) + time);
}
const micros = (time) => (time / requests).toFixed(2).padStart(7);
const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);

console.log(
  `${file}: ${windowSeconds} s of load, ${(busy / requests).toFixed(1)} µs busy a request (main thread)`,
);
console.log('\nself time by category, µs a request');
for (const [name, time] of sorted(perCategory)) console.log(micros(time), name);
console.log(`\ntop ${top} functions by self time, µs a request`);
for (const [name, time] of sorted(perFunction).slice(0, top)) console.log(micros(time), name);

if (process.env.CPU_PROFILE_CALLERS) {
  const pattern = new RegExp(process.env.CPU_PROFILE_CALLERS);
  const depth = Number(process.env.CPU_PROFILE_DEPTH ?? 6);
  const chains = new Map();
  for (const [id, time] of selfTime) {
    if (!pattern.test(byId.get(id).callFrame.functionName)) continue;
    const chain = [];
    for (let up = parent.get(id); up !== undefined && chain.length < depth; up = parent.get(up))
      chain.push(label(byId.get(up)));
    const key = chain.join(' < ');
    chains.set(key, (chains.get(key) ?? 0) + time);
  }
  console.log(`\ncallers of ${process.env.CPU_PROFILE_CALLERS}, µs a request`);
  for (const [chain, time] of sorted(chains).slice(0, 15)) console.log(micros(time), chain);
}
