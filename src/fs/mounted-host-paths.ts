// Which host paths the container can see below CONTAINER_MOUNT_PREFIX. A DaemonSet pod mounts named
// host directories (net.d and the bin dir) under the prefix, not the host's whole root: a symlink
// target or a Multus delegate elsewhere on the host is then simply absent in the pod, which looks
// like a dangling link but is a missing mount, and the fix is the operator's (a hostPath volume).
// The mount points come from /proc/self/mountinfo (proc(5): field 5 is the mount point, with space,
// tab, newline and backslash octal-escaped). No mount at or below the prefix means the prefix is an
// ordinary directory tree (the agent run on the host itself, or in tests): everything is visible.
import { readFileSync } from 'node:fs';
import path from 'node:path';

function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

export class MountedHostPaths {
  /** Host paths mounted below the prefix; undefined when every host path is visible. */
  private readonly mounted: string[] | undefined;

  constructor(hostRootOnDisk: string, mountinfo = readMountinfo()) {
    const root = path.resolve(hostRootOnDisk);
    const points = mountinfo
      .split('\n')
      .map((line) => line.split(' ')[4])
      .filter((p): p is string => p !== undefined)
      .map(unescapeMountPath);
    if (points.includes(root)) this.mounted = undefined; // the host's root itself is mounted there
    else {
      const below = points.filter((p) => p.startsWith(`${root}/`)).map((p) => `/${path.relative(root, p)}`);
      this.mounted = below.length === 0 ? undefined : below;
    }
  }

  /** True when `hostPath` lies at or below a mounted host path (or every host path is visible). */
  visible(hostPath: string): boolean {
    if (this.mounted === undefined) return true;
    return this.mounted.some((m) => hostPath === m || hostPath.startsWith(`${m}/`));
  }

  /** The host paths mounted below the prefix (for messages); empty when all are visible. */
  get paths(): readonly string[] {
    return this.mounted ?? [];
  }
}

function readMountinfo(): string {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return '';
  }
}
