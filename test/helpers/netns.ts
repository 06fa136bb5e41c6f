// A pod on the cluster network, as far as the node's own ports are concerned: a network namespace
// joined to the host by a veth pair, with the host's end at `hostAddress`. What runs in it reaches the
// node only through that address, never through the host's loopback.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterEach } from 'vitest';

const made: PodNetwork[] = [];
afterEach(() => {
  for (const net of made.splice(0)) net.remove();
});

/** True when this machine can make network namespaces (root, iproute2). */
export const canMakeNetns = spawnSync('ip', ['netns', 'list']).status === 0 && process.getuid?.() === 0;

export class PodNetwork {
  readonly name = `cc-pod-${randomBytes(3).toString('hex')}`;
  private readonly hostLink = `cch${randomBytes(3).toString('hex')}`;
  private readonly podLink = `ccp${randomBytes(3).toString('hex')}`;
  // TEST-NET-2 (RFC 5737): no real host has it, so nothing but this veth pair answers there.
  readonly hostAddress = `198.51.100.${1 + 4 * Math.floor(Math.random() * 60)}`;
  private readonly podAddress = this.hostAddress.replace(/\d+$/, (n) => String(Number(n) + 1));

  constructor() {
    const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
    ip('netns', 'add', this.name);
    made.push(this);
    ip('link', 'add', this.hostLink, 'type', 'veth', 'peer', 'name', this.podLink);
    ip('link', 'set', this.podLink, 'netns', this.name);
    ip('addr', 'add', `${this.hostAddress}/30`, 'dev', this.hostLink);
    ip('link', 'set', this.hostLink, 'up');
    ip('netns', 'exec', this.name, 'ip', 'addr', 'add', `${this.podAddress}/30`, 'dev', this.podLink);
    ip('netns', 'exec', this.name, 'ip', 'link', 'set', this.podLink, 'up');
    ip('netns', 'exec', this.name, 'ip', 'link', 'set', 'lo', 'up');
  }

  /** The command line that runs `argv` inside the pod's network. */
  exec(argv: string[]): string[] {
    return ['ip', 'netns', 'exec', this.name, ...argv];
  }

  remove(): void {
    spawnSync('ip', ['link', 'del', this.hostLink]);
    spawnSync('ip', ['netns', 'del', this.name]);
  }
}
