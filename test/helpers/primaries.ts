// Emulations of what real primaries and meta-plugins do to net.d, written from what their own code
// does (docs/design.md, Neighbours), on real files and inotify:
// - Multus thick: `00-multus.conf` written in place (truncate + write, mode 0600), `clusterNetwork`
//   holding the primary's path as Multus' pod sees it (`/host/etc/cni/net.d/...`).
// - Multus thin: the primary's config embedded in `delegates`, written to `00-multus.conf.new` and
//   renamed into place; a `.conflist` around itself when cniVersion is 1.0.0 or later.
// - Calico: its conflist written in place, mode 0600.
// - Cilium with cni.exclusive: on every event in net.d, its own file rewritten (hidden temp + rename)
//   when the bytes differ, and every other config renamed to `<name>.cilium_bak`.
import { closeSync, existsSync, fsyncSync, openSync, readdirSync, readFileSync, renameSync, watch, writeSync, type FSWatcher } from 'node:fs';
import path from 'node:path';

/** Truncate and write, as Calico, k3s and Multus thick do (O_TRUNC, mode `mode` on creation). */
export function writeInPlace(file: string, text: string, mode = 0o600): void {
  const fd = openSync(file, 'w', mode);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function multusThick(primaryHostPath: string): string {
  return `${JSON.stringify(
    {
      cniVersion: '0.3.1',
      name: 'multus-cni-network',
      type: 'multus',
      capabilities: { portMappings: true },
      kubeconfig: '/etc/cni/net.d/multus.d/multus.kubeconfig',
      clusterNetwork: `/host${primaryHostPath}`,
    },
    null,
    2,
  )}\n`;
}

/** Multus thin's generated config around the primary's text, as its config generator embeds it. */
export function multusThin(primaryText: string, cniVersion = '0.3.1'): string {
  const body = `{\n  "type": "multus",\n  "capabilities": {"portMappings": true},\n  "kubeconfig": "/etc/cni/net.d/multus.d/multus.kubeconfig",\n  "delegates": [\n    ${primaryText.trim()}\n  ]\n}`;
  if (cniVersion >= '1.0.0') return `{\n  "cniVersion": "${cniVersion}",\n  "name": "multus-cni-network",\n  "plugins": [ ${body} ]\n}\n`;
  return `{\n  "cniVersion": "${cniVersion}",\n  "name": "multus-cni-network",\n${body.slice(2)}\n`;
}

/** Multus thin's write: `<name>.new`, then a rename into place. */
export function writeRenamedIn(dir: string, name: string, text: string, tempName = `${name}.new`): void {
  writeInPlace(path.join(dir, tempName), text, 0o644);
  renameSync(path.join(dir, tempName), path.join(dir, name));
}

/**
 * Cilium with cni.exclusive=true, reacting to net.d's inotify events as its fsnotify watcher does.
 * `renames` counts the configs it pushed aside.
 */
export class CiliumExclusive {
  renames = 0;
  rewrites = 0;
  private readonly watcher: FSWatcher;
  private closed = false;

  constructor(
    private readonly netDir: string,
    private readonly text: string,
    private readonly own = '05-cilium.conflist',
  ) {
    this.enforce();
    this.watcher = watch(netDir, () => this.enforce());
  }

  private enforce(): void {
    if (this.closed) return;
    const file = path.join(this.netDir, this.own);
    if (!existsSync(file) || readFileSync(file, 'utf8') !== this.text) {
      const temp = path.join(this.netDir, `.${this.own}${Math.random().toString(36).slice(2, 10)}`);
      writeInPlace(temp, this.text, 0o600);
      renameSync(temp, file);
      this.rewrites++;
    }
    for (const name of readdirSync(this.netDir)) {
      if (name === this.own || name.startsWith('.') || !/\.(conf|conflist|json)$/.test(name)) continue;
      try {
        renameSync(path.join(this.netDir, name), path.join(this.netDir, `${name}.cilium_bak`));
        this.renames++;
      } catch {
        // gone meanwhile
      }
    }
  }

  close(): void {
    this.closed = true;
    this.watcher.close();
  }
}
