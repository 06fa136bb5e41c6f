// HealthPort: while another live instance owns the node, a port in use is waited for, not an error;
// otherwise it is (cli.ts exits 2). Release and reclaim hand the port back and forth.
import { createServer, type Server } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { HealthPort } from '../../src/daemon/http/health-port.js';
import { HealthServer } from '../../src/daemon/http/health-server.js';
import { Metrics } from '../../src/daemon/shared/metrics.js';
import { freePort } from '../helpers/node-host.js';
import { waitFor } from '../helpers/wait.js';

function setup(port: number, ownerMayHoldPort: () => boolean) {
  const lines: Array<{ msg: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
  const server = new HealthServer({ alive: () => true, readiness: () => ({ ready: true, reasons: [] }) as never }, new Metrics('0.0.0', 'native'), log);
  return { health: new HealthPort(server, port, '127.0.0.1', log, ownerMayHoldPort), server, lines };
}

function hold(port: number): Promise<Server> {
  return new Promise((resolve) => {
    const blocker = createServer().listen(port, '127.0.0.1', () => resolve(blocker));
  });
}

const ready = async (port: number) => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200;

describe('HealthPort', () => {
  it('waits for a port the owning instance holds, and listens as soon as it is free', async () => {
    const port = await freePort();
    const blocker = await hold(port);
    const { health, server, lines } = setup(port, () => true);
    try {
      await health.start(); // no throw: another instance owns the node
      expect(lines.map((l) => l.msg)).toContain('HEALTH_PORT is held by the instance that owns this node (an upgrade): serving probes once it stands down');
      expect(server.listening).toBe(false);
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
      await waitFor(() => server.listening, 'listening once the port is free');
      expect(await ready(port)).toBe(true);
    } finally {
      await health.close();
    }
  });

  it('throws EADDRINUSE when no other instance owns the node', async () => {
    const port = await freePort();
    const blocker = await hold(port);
    const { health } = setup(port, () => false);
    try {
      await expect(health.start()).rejects.toMatchObject({ code: 'EADDRINUSE' });
    } finally {
      await health.close();
      blocker.close();
    }
  });

  it('releases the port to another process, and takes it back once that one is gone', async () => {
    const port = await freePort();
    const { health, server } = setup(port, () => true);
    try {
      await health.start();
      expect(server.listening).toBe(true);
      await health.release();
      const newer = await hold(port); // the port is really free: another process binds it
      health.reclaim();
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(server.listening).toBe(false); // still held by the newer one: retrying, not failing
      await new Promise<void>((resolve) => newer.close(() => resolve()));
      await waitFor(() => server.listening, 'listening again');
    } finally {
      await health.close();
    }
  });
});

describe('HealthPort, released while a retry is listening', () => {
  it('gives the port up again: a released instance never keeps it', async () => {
    const port = await freePort();
    const blocker = await hold(port);
    const { health, server } = setup(port, () => true);
    try {
      await health.start(); // waiting: the port is held
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
      await health.release(); // stood down before its retry ran
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(server.listening).toBe(false);
    } finally {
      await health.close();
    }
  });
});
