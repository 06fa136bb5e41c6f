// The kubeconfig file in the net dir: rendered from the service-account token, rewritten when the
// token rotates, removed on shutdown. No token means we are not in a pod: no kubeconfig.
import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { ConfigError } from '../config.js';
import { writeFileAtomic } from '../fs/atomic-write.js';
import { renderKubeconfig } from './kubeconfig.js';
import { errnoCode } from '../fs/errno.js';

export type KubeconfigSync = 'written' | 'unchanged' | 'absent';

export class KubeconfigFile {
  constructor(
    private readonly config: Config,
    readonly file: string,
  ) {}

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
    try {
      if (readFileSync(this.file, 'utf8') === desired) return 'unchanged';
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
    await writeFileAtomic(this.file, desired, { mode: this.config.kubeconfigMode });
    return 'written';
  }

  remove(): boolean {
    try {
      unlinkSync(this.file);
      return true;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw err;
    }
  }
}
