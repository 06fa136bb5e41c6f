// A pod on the cluster network that floods the agent's ports must never fail the kubelet's probes: a
// failed liveness probe restarts the agent, and a restart used to unchain the node.
import { spawn } from 'node:child_process';
import { describe, expect } from 'vitest';
import { itWith } from '../../helpers/capability.js';
import { canMakeNetns, PodNetwork } from '../../helpers/netns.js';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

// Holds `count` sockets to host:port open, opening a new one whenever one closes; prints, once a
// second, how many are open and how many connects were refused.
const FLOOD = `
const net = require('node:net');
const [host, port, count] = process.argv.slice(1);
let open = 0, refused = 0;
function one() {
  let connected = false;
  const s = net.connect(Number(port), host);
  s.on('connect', () => { connected = true; open++; });
  s.on('error', (e) => { if (e.code === 'ECONNREFUSED') refused++; });
  s.on('close', () => { if (connected) open--; setTimeout(one, 5); });
}
for (let i = 0; i < Number(count); i++) one();
setInterval(() => console.log(JSON.stringify({ open, refused })), 200);
`;

function flood(pod: PodNetwork, host: string, port: number, count: number) {
  const [command, ...args] = pod.exec([process.execPath, '-e', FLOOD, host, String(port), String(count)]);
  const child = spawn(command!, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let last = { open: 0, refused: 0 };
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = chunk.toString().trim().split('\n');
    last = JSON.parse(lines.at(-1)!) as typeof last;
  });
  return { stats: () => last, stop: () => child.kill('SIGKILL') };
}

describe('probes under a flood from the cluster network', () => {
  itWith(canMakeNetns, 'network namespaces (root, iproute2)')('the kubelet probes answer while a pod holds every connection it can get to both ports', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const healthPort = await freePort();
    const metricsPort = await freePort();
    // HEALTH_BIND is left at its default: that default is the fix under test.
    const daemon = await host.started({ HEALTH_PORT: String(healthPort), METRICS_PORT: String(metricsPort) });
    await daemon.ready();
    const pod = new PodNetwork();
    // The health port cannot even be reached from the pod: every connect is refused.
    const onHealth = flood(pod, pod.hostAddress, healthPort, 200);
    // The metrics port can: the pod holds far more sockets than the server takes.
    const onMetrics = flood(pod, pod.hostAddress, metricsPort, 200);
    await waitFor(() => (onHealth.stats().refused > 50 || onHealth.stats().open >= 64) && onMetrics.stats().open >= 64, 'the flood is under way');
    let answered = 0;
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`http://127.0.0.1:${healthPort}/healthz`, { signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
      if (res?.status === 200) answered++;
    }
    expect(onHealth.stats().open).toBe(0);
    expect(answered).toBe(30);
    expect((await probe(healthPort, '/readyz')).status).toBe(200);
    // The metrics server answers /metrics only: no probe can be asked of it.
    const res = await fetch(`http://127.0.0.1:${metricsPort}/healthz`).catch(() => undefined);
    expect(res === undefined || res.status === 404).toBe(true);
    onHealth.stop();
    onMetrics.stop();
    expect((await daemon.stop()).code).toBe(0);
  });
});
