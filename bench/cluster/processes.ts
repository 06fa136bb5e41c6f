// Stopping the cluster's components. Each is spawned as `nsenter ... -- <component>` into the node's
// namespaces (or directly, on the machine's loopback): nsenter forks to enter the PID namespace and
// waits for its child without passing signals on, so a signal must reach the component itself, the
// one child of the process spawned. nsenter then exits with it.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The process that runs the component: the spawned one's only child (nsenter's), or itself. */
function componentPid(child: ChildProcess): number | undefined {
  if (child.pid === undefined) return undefined;
  try {
    const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
    return children === '' ? child.pid : Number(children.split(/\s+/)[0]);
  } catch {
    return child.pid; // gone meanwhile
  }
}

function signal(child: ChildProcess, sig: NodeJS.Signals): void {
  const pid = componentPid(child);
  if (pid === undefined) return;
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
}

const running = (c: ChildProcess) => c.exitCode === null && c.signalCode === null;

/** `first` to every component (last started first), SIGKILL after `graceMs`; resolves once all exited. */
export async function stopComponents(children: ChildProcess[], first: NodeJS.Signals = 'SIGTERM', graceMs = 5_000): Promise<void> {
  const live = children.filter(running);
  const exited = live.map((c) => new Promise((resolve) => c.once('exit', resolve)));
  for (const child of [...live].reverse()) signal(child, first);
  const timer = setTimeout(() => live.filter(running).forEach((c) => signal(c, 'SIGKILL')), graceMs);
  await Promise.all(exited);
  clearTimeout(timer);
}
