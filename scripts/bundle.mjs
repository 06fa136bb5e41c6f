// Bundles the compiled CLI (dist/src/cli.js) and its libraries into one ES module,
// dist/cni-chainer.mjs: one file to read and compile at start instead of a few hundred, which saves
// ~11 MiB of RSS and start time (docs/performance.md). The addon (build/Release/cni_chainer.node) and
// @parcel/watcher (a native module, loaded only when WATCH_BACKEND=parcel) stay outside, and so does
// the Prometheus exposition, dist/cni-chainer-prometheus.mjs (see `prometheusApart`).
import { build } from 'esbuild';
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';

// Node's built-ins that our ES modules import are loaded with require(), and handed over without
// copying their properties. Importing a built-in as an ES module builds a facade that reads every
// export, and esbuild's CommonJS interop (__toESM) reads every property descriptor; both evaluate
// Node's lazy exports, which load whole subsystems: node:http's WebSocket loads undici, node:util's
// TextDecoder and diff load the encoding and assert machinery, node:crypto its webcrypto. Measured:
// a bare node listening with node:http is 59 MiB of RSS when it was imported, 47 MiB when required;
// the interop's copies cost the agent 8.6 ms of start. So the wrapper is an object with no own
// properties whose prototype is the module: a property is looked up, and evaluated, when used.
// (CommonJS libraries' own require() calls are left to esbuild: they use the module directly.)
const builtins = new Set(builtinModules);
const builtinsViaRequire = {
  name: 'builtins-via-require',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (args) => {
      const bare = args.path.replace(/^node:/, '');
      if (args.kind !== 'import-statement' && args.kind !== 'dynamic-import') return undefined;
      if (!(args.path.startsWith('node:') || builtins.has(bare))) return undefined;
      return { path: bare, namespace: 'builtin-cjs' };
    });
    b.onLoad({ filter: /.*/, namespace: 'builtin-cjs' }, (args) => ({
      contents: `module.exports = Object.create(require('node:${args.path}'));`,
      loader: 'js',
    }));
  },
};

// sonic-boom (pino's destination) loads node:assert for one argument check, and node:assert loads
// its diff and colour machinery: 6.6 ms of start. Its one call gets a plain check instead.
const sonicBoomAssert = {
  name: 'sonic-boom-assert',
  setup(b) {
    b.onResolve({ filter: /^assert$/ }, (args) => (args.importer.includes('/node_modules/sonic-boom/') ? { path: 'assert', namespace: 'plain-assert' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'plain-assert' }, () => ({
      contents: 'module.exports = function assert(ok, message) { if (!ok) throw new Error(message); };',
      loader: 'js',
    }));
  },
};

// Modules of bundled libraries that the agent never uses but that their index loads at start, each
// replaced by a stand-in that throws if it is ever called:
// - prom-client's Pushgateway loads http, https and zlib (and with https, TLS): ~8 MiB of RSS in a
//   process that is scraped and never pushes;
// - pino's transports load worker_threads (thread-stream): the agent writes to stdout synchronously
//   (log.ts) and runs no transport.
const unused = [
  { library: 'prom-client', module: /(^|\/)pushgateway(\.js)?$/, what: "prom-client's Pushgateway" },
  { library: 'pino', module: /(^|\/)transport(\.js)?$/, what: "pino's transports" },
];
const withoutUnused = {
  name: 'without-unused',
  setup(b) {
    b.onResolve({ filter: /^\./ }, (args) => {
      const hit = unused.find((u) => args.importer.includes(`/node_modules/${u.library}/`) && u.module.test(args.path));
      return hit === undefined ? undefined : { path: hit.what, namespace: 'unused' };
    });
    b.onLoad({ filter: /.*/, namespace: 'unused' }, (args) => ({
      contents: `module.exports = function unused() { throw new Error(${JSON.stringify(`cni-chainer is built without ${args.path}`)}); };`,
      loader: 'js',
    }));
  },
};

// pino's tools.js loads worker_threads (and with it Node's worker and messaging internals: 2.3 ms of
// start, measured with a bare require) for one value, isMainThread, which it reads only for an
// asynchronous destination. The agent's destination is synchronous (log.ts) and runs on the main
// thread, so the stand-in says what is true of it.
const pinoMainThread = {
  name: 'pino-main-thread',
  setup(b) {
    b.onResolve({ filter: /^(node:)?worker_threads$/ }, (args) => (args.importer.includes('/node_modules/pino/') ? { path: 'worker_threads', namespace: 'main-thread' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'main-thread' }, () => ({ contents: 'module.exports = { isMainThread: true };', loader: 'js' }));
  },
};

// prom-client and what it brings (@opentelemetry/api, bintrees, tdigest) are a third of the bundle,
// and the agent needs them only once /metrics is scraped (health-server.ts imports prometheus.ts
// then). V8 pre-parses a whole script when it is loaded, so they live in a second file that is read
// at the first scrape. prometheus.ts imports nothing of the agent's but types, so no module is in
// both files.
const PROMETHEUS_FILE = 'cni-chainer-prometheus.mjs';
const prometheusApart = {
  name: 'prometheus-apart',
  setup(b) {
    b.onResolve({ filter: /^\.\/prometheus\.js$/ }, (args) => (args.importer.endsWith('/daemon/http/health-server.js') ? { path: `./${PROMETHEUS_FILE}`, external: true } : undefined));
  },
};

const common = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // CommonJS libraries (pino, prom-client) call require() for Node's built-ins.
  banner: { js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);" },
  legalComments: 'none',
  // Minified (400 -> 180 KB): V8 keeps a script's whole source in the heap for as long as the script
  // lives, so every byte here is anonymous memory of the pod (RssAnon 1 s after start -0.45 MiB,
  // interleaved starts). Stack traces are decoded with the map written beside the bundle, which
  // nothing loads at run time: `node --enable-source-maps dist/cni-chainer.mjs` when debugging.
  minify: true,
  sourcemap: 'linked',
  sourcesContent: false,
  logLevel: 'warning',
};
await build({
  ...common,
  entryPoints: ['dist/src/cli.js'],
  outfile: 'dist/cni-chainer.mjs',
  external: ['@parcel/watcher'],
  plugins: [sonicBoomAssert, pinoMainThread, prometheusApart, builtinsViaRequire, withoutUnused],
});
await build({
  ...common,
  entryPoints: ['dist/src/daemon/http/prometheus.js'],
  outfile: `dist/${PROMETHEUS_FILE}`,
  plugins: [builtinsViaRequire, withoutUnused],
});
// The bench's reference agent (bench/bare-agent.ts), bundled like the agent so that the bench
// compares like with like (docs/performance.md).
if (existsSync('dist/bench/bare-agent.js')) {
  await build({
    ...common,
    entryPoints: ['dist/bench/bare-agent.js'],
    outfile: 'dist/bench/bare-agent.mjs',
    plugins: [builtinsViaRequire, withoutUnused],
  });
}
const mainBundle = readFileSync('dist/cni-chainer.mjs', 'latin1');
if (!mainBundle.includes(`"./${PROMETHEUS_FILE}"`) || mainBundle.includes('node_modules/prom-client/')) {
  throw new Error(`dist/cni-chainer.mjs must load prom-client from ./${PROMETHEUS_FILE}, not contain it`);
}

// V8 keeps a script's source for as long as the script lives (lazy compilation reads it again), and
// keeps it one byte per character only if every character is ASCII: a single arrow in a comment made
// it two bytes per character, 1 MB of heap for the whole life of the process instead of 0.5 MB. esbuild
// escapes non-ASCII in strings and regular expressions (its default charset) but not in the comments
// it keeps, so the build refuses any that reach the bundle.
for (const file of ['cni-chainer.mjs', PROMETHEUS_FILE, ...(existsSync('dist/bench/bare-agent.mjs') ? ['bench/bare-agent.mjs'] : [])]) {
  const bundle = readFileSync(`dist/${file}`, 'latin1');
  const nonAscii = bundle.split('\n').flatMap((line, k) => (/[^\x00-\x7f]/.test(line) ? [`  line ${k + 1}: ${line.trim().slice(0, 100)}`] : []));
  if (nonAscii.length > 0) {
    throw new Error(`dist/${file} must be ASCII (V8 would keep its source as UTF-16); non-ASCII in comments kept by esbuild:\n${nonAscii.join('\n')}`);
  }
}
