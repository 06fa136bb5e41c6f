// An idle node stays quiet: no write, and no event the runtime would see, while nothing changes.
import { describe, expect, it } from 'vitest';
import { NodeHost } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

const CALICO = '10-calico.conflist';

describe('a quiet idle node', () => {
  it('no inotify event in net.d while nothing changes, with a standby beside the owner and resyncs every second', async () => {
    const host = new NodeHost();
    host.putFixture(CALICO);
    const standby = await host.startedWithProbes({ RESYNC_INTERVAL_S: '1' });
    const owner = await host.started({ RESYNC_INTERVAL_S: '1' });
    await standby.stoodDown();
    await waitFor(() => host.isChained(CALICO), 'chained');
    await new Promise((resolve) => setTimeout(resolve, 300)); // the start's own writes are done
    // fs.watch is inotify: IN_ATTRIB, IN_CREATE, IN_MODIFY, IN_DELETE and the moves, what containerd,
    // CRI-O and Cilium react to. Earlier versions touched the owner file every 2 s.
    const events: string[] = [];
    const watcher = (await import('node:fs')).watch(host.netDir, (kind, name) => events.push(`${kind} ${String(name)}`));
    await new Promise((resolve) => setTimeout(resolve, 4_500));
    watcher.close();
    expect(events).toEqual([]);
    await standby.stoodDown(0); // still standing by: it never took the node back
    await standby.stop();
    await owner.stop();
  }, 20_000);
});
