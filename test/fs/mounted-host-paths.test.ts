// Which host paths a pod sees below CONTAINER_MOUNT_PREFIX, from mountinfo lines (proc(5)).
import { describe, expect, it } from 'vitest';
import { MountedHostPaths } from '../../src/fs/mounted-host-paths.js';

const line = (mountPoint: string) => `36 35 98:0 /mnt1 ${mountPoint} rw,noatime master:1 - ext3 /dev/root rw,errors=continue`;

describe('MountedHostPaths', () => {
  it("a DaemonSet pod's named hostPath mounts: only they are visible", () => {
    const mounts = new MountedHostPaths('/host', [line('/'), line('/host/etc/cni/net.d'), line('/host/opt/cni/bin'), line('/proc')].join('\n'));
    expect(mounts.visible('/etc/cni/net.d')).toBe(true);
    expect(mounts.visible('/etc/cni/net.d/10-calico.conflist')).toBe(true);
    expect(mounts.visible('/opt/cni/bin/linkerd-cni')).toBe(true);
    expect(mounts.visible('/var/lib/cni-configs')).toBe(false);
    expect(mounts.visible('/etc/cni')).toBe(false);
    expect(mounts.visible('/etc/cni/net.d2')).toBe(false);
    expect(mounts.paths).toEqual(['/etc/cni/net.d', '/opt/cni/bin']);
  });

  it("the host's root mounted at the prefix, or no mount there at all: everything is visible", () => {
    expect(new MountedHostPaths('/host', [line('/'), line('/host'), line('/host/etc/cni/net.d')].join('\n')).visible('/var/lib/x')).toBe(true);
    expect(new MountedHostPaths('/tmp/node/host', [line('/'), line('/tmp')].join('\n')).visible('/var/lib/x')).toBe(true);
  });

  it('reads octal-escaped mount points (a space in a path)', () => {
    const mounts = new MountedHostPaths('/host', line('/host/var/lib/cni\\040configs'));
    expect(mounts.visible('/var/lib/cni configs/x.conflist')).toBe(true);
    expect(mounts.visible('/var/lib/cni')).toBe(false);
  });

  it('reads this process\'s own mountinfo without throwing', () => {
    expect(new MountedHostPaths('/nonexistent-prefix').visible('/x')).toBe(true);
  });
});
