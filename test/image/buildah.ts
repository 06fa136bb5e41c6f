// Debian's buildah with a storage of its own (vfs: no overlay module needed), so that a test run
// neither needs nor touches the machine's container storage. `--isolation chroot` is what works on
// these machines (no user-namespace runtime for RUN steps). Its network configuration directory is
// scratch too (a containers.conf of its own): by default its CNI backend takes a lock file in the
// machine's /etc/cni/net.d, creating the directory, and the tests never touch the machine's own paths.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class Buildah {
  private readonly global: string[];
  private readonly env: NodeJS.ProcessEnv;

  constructor(readonly work: string) {
    this.global = ['--root', path.join(work, 'storage'), '--runroot', path.join(work, 'run'), '--storage-driver', 'vfs'];
    const conf = path.join(work, 'containers.conf');
    mkdirSync(path.join(work, 'cni', 'net.d'), { recursive: true });
    writeFileSync(conf, `[network]\nnetwork_config_dir = ${JSON.stringify(path.join(work, 'cni', 'net.d'))}\n`);
    this.env = { ...process.env, CONTAINERS_CONF: conf };
  }

  /** Runs buildah; its stdout, trimmed. Throws with its stderr on failure. */
  run(args: string[], options: { input?: string } = {}): string {
    const result = spawnSync('buildah', [...this.global, ...args], { encoding: 'utf8', input: options.input, maxBuffer: 64 << 20, env: this.env });
    if (result.status !== 0) throw new Error(`buildah ${args.join(' ')} failed (${result.status}):\n${result.stderr.slice(-4000)}`);
    return result.stdout.trim();
  }

  /** True when `ref` is in this storage. */
  has(ref: string): boolean {
    return spawnSync('buildah', [...this.global, 'inspect', '--type', 'image', ref], { stdio: 'ignore', env: this.env }).status === 0;
  }

  /** An image from scratch (or `base`): `steps` get the working container's id; committed as `ref`. */
  image(ref: string, steps: (container: string) => void, base = 'scratch'): void {
    const container = this.run(base === 'scratch' ? ['from', 'scratch'] : ['from', '--pull=never', base]);
    try {
      steps(container);
      this.run(['commit', '--quiet', container, ref]);
    } finally {
      this.run(['rm', container]);
    }
  }

  /** Calls `fn` with the image's root filesystem mounted (read it, never write it). */
  inspectFiles<T>(ref: string, fn: (rootfs: string) => T): T {
    const container = this.run(['from', '--pull=never', ref]);
    try {
      return fn(this.run(['mount', container]));
    } finally {
      this.run(['umount', container]);
      this.run(['rm', container]);
    }
  }

  /** Runs a command in a container of the image (chroot isolation); its stdout. */
  runIn(ref: string, command: string[]): string {
    const container = this.run(['from', '--pull=never', ref]);
    try {
      return this.run(['run', '--isolation', 'chroot', container, '--', ...command]);
    } finally {
      this.run(['rm', container]);
    }
  }

  /** The image's size as buildah reports it (its layers, uncompressed), e.g. "309 MB". */
  size(ref: string): string {
    return this.run(['images', '--format', '{{.Size}}', '--noheading', ref]).split('\n')[0]!;
  }

  /** Writes the image to an OCI archive that `ctr images import` takes, named `name` there. */
  ociArchive(ref: string, file: string, name = ref): void {
    this.run(['push', '--quiet', ref, `oci-archive:${file}:${name}`]);
  }
}

/** Why images cannot be built here, or undefined when they can. */
export function buildUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  for (const bin of ['buildah', 'mmdebstrap', 'tar']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `${bin} is not installed (Debian: apt-get install buildah mmdebstrap)`;
  }
  return undefined;
}

/** A Debian bookworm root filesystem as a tar, from Debian's mirror (mmdebstrap, no registry). */
export function debianRootfs(file: string, packages: string[]): void {
  const include = packages.length === 0 ? [] : [`--include=${packages.join(',')}`];
  execFileSync('mmdebstrap', ['--quiet', '--variant=minbase', ...include, 'bookworm', file], { stdio: ['ignore', 'ignore', 'pipe'] });
}
