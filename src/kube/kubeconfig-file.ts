// The kubeconfig file in the net dir: rendered from the service-account token, rewritten when the
// token rotates, removed on shutdown. No token means we are not in a pod: no kubeconfig.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { writeFileAtomic } from '../fs/atomic-write.js';
import { readEntry } from '../fs/bounded-read.js';
import { withDir } from '../fs/dir.js';
import type { HostRoot } from '../fs/host-root.js';
import { renderKubeconfig } from './kubeconfig.js';
import { errnoCode } from '../fs/errno.js';

export type KubeconfigSync = 'written' | 'unchanged' | 'absent';

export class KubeconfigFile {
  constructor(
    private readonly config: Config,
    private readonly root: HostRoot,
  ) {}

  get name(): string {
    return this.config.kubeconfigName;
  }

  get tokenFile(): string {
    return path.join(this.config.serviceAccountDir, 'token');
  }

  /** The file's desired content, or undefined when there is no token. */
  render(): string | undefined {
    let token: string;
    try {
      token = readFileSync(this.tokenFile, 'utf8').trim();
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }
    const { host, port, protocol } = this.config.kubernetes;
    if (host === undefined) {
      throw new ConfigError([`KUBERNETES_SERVICE_HOST: required to write the kubeconfig (a token exists at ${this.tokenFile})`]);
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
