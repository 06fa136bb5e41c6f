// The kubeconfig file in the net dir: rendered from the agent's credential for the plugin (the node's
// token, else the pod's: credentials.ts), rewritten when it changes, removed at an uninstall. No token
// means we are not in a pod: no kubeconfig.
import { existsSync, readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { writeFileAtomic } from '../fs/atomic-write.js';
import { readEntry } from '../fs/bounded-read.js';
import { withDir, withDirSync } from '../fs/dir.js';
import type { HostRoot } from '../fs/host-root.js';
import type { Credentials } from './credentials.js';
import { renderKubeconfig } from './kubeconfig.js';
import { errnoCode } from '../fs/errno.js';

export type KubeconfigSync = 'written' | 'unchanged' | 'absent';

export class KubeconfigFile {
  constructor(
    private readonly config: Config,
    private readonly root: HostRoot,
    /** Where its token comes from; undefined for a kubeconfig that is only removed (`uninstall`). */
    private readonly credentials?: Credentials,
  ) {}

  get name(): string {
    return this.config.kubeconfigName;
  }

  /** The file's desired content, or undefined when there is no token. */
  render(): string | undefined {
    const token = this.credentials?.kubeconfigToken();
    if (token === undefined) return undefined;
    const { host, port, protocol } = this.config.kubernetes;
    if (host === undefined) {
      throw new ConfigError([`KUBERNETES_SERVICE_HOST: required to write the kubeconfig (a token exists at ${this.credentials!.podTokenFile})`]);
    }
    const caData =
      !this.config.skipTlsVerify && existsSync(this.config.caFile) ? readFileSync(this.config.caFile).toString('base64') : undefined;
    return renderKubeconfig({ protocol, host, port, token, caData, skipTlsVerify: this.config.skipTlsVerify });
  }

  async sync(): Promise<KubeconfigSync> {
    const desired = this.render();
    if (desired === undefined) return 'absent';
    const bytes = Buffer.from(desired);
    return withDir(this.root.openDir(this.config.netDir), async (dir) => {
      // Bounded, non-blocking and no-follow: a FIFO or a link to /dev/zero at this name is replaced,
      // never read.
      const current = readEntry(dir, this.name, bytes.length);
      // Its mode too: the file holds the service-account token, and a chmod must not leave it
      // readable by anyone on the host until the next token rotation.
      if (current.kind === 'file' && current.bytes.equals(bytes) && (current.stat.mode & 0o7777) === this.config.kubeconfigMode) return 'unchanged';
      await writeFileAtomic(dir, this.name, bytes, { mode: this.config.kubeconfigMode });
      return 'written';
    });
  }

  /**
   * The token of the kubeconfig on disk (an earlier agent's, or linkerd's installer's), read bounded
   * and without following a link; undefined when there is none.
   */
  tokenOnDisk(): string | undefined {
    try {
      return withDirSync(this.root.openDir(this.config.netDir), (dir) => {
        const current = readEntry(dir, this.name, 64 << 10);
        if (current.kind !== 'file') return undefined;
        const line = /^\s*token:\s*(.+?)\s*$/m.exec(current.bytes.toString('utf8'))?.[1];
        if (line === undefined) return undefined;
        // Ours writes a JSON string (kubeconfig.ts); linkerd's installer a plain scalar.
        try {
          return line.startsWith('"') ? (JSON.parse(line) as string) : line;
        } catch {
          return undefined;
        }
      });
    } catch {
      // net.d missing, a loop, unreadable: no token to carry on, and the write says what is wrong.
      return undefined;
    }
  }

  /** True when a kubeconfig was there to remove. */
  async remove(): Promise<boolean> {
    try {
      return await withDir(this.root.openDir(this.config.netDir), (dir) => {
        dir.unlink(this.name);
        return true;
      });
    } catch (err) {
      if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return false;
      throw err;
    }
  }
}
