// Bundles the compiled CLI (dist/src/cli.js) and its libraries into one ES module,
// dist/cni-chainer.mjs: one file to read and compile at start instead of a few hundred, which saves
// ~11 MiB of RSS and start time (README, "Performance"). The addon (build/Release/inotify.node) and
// @parcel/watcher (a native module, loaded only when WATCH_BACKEND=parcel) stay outside.
import { build } from 'esbuild';

// prom-client's index requires its Pushgateway client, which loads http, https and zlib (and with
// https, TLS) at start: ~8 MiB of RSS in a process that never pushes. The agent is scraped; this
// module stands in for the Pushgateway and says so if anything ever constructs one.
const withoutPushgateway = {
  name: 'without-pushgateway',
  setup(b) {
    b.onResolve({ filter: /\/lib\/pushgateway$/ }, (args) => (args.importer.includes('prom-client') ? { path: args.path, namespace: 'no-pushgateway' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'no-pushgateway' }, () => ({
      contents: "module.exports = class Pushgateway { constructor() { throw new Error('cni-chainer is built without prom-client\\'s Pushgateway'); } };",
      loader: 'js',
    }));
  },
};

await build({
  entryPoints: ['dist/src/cli.js'],
  outfile: 'dist/cni-chainer.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  external: ['@parcel/watcher'],
  // CommonJS libraries (pino, prom-client) call require() for Node's built-ins.
  banner: { js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);" },
  plugins: [withoutPushgateway],
  legalComments: 'none',
  logLevel: 'warning',
});
