// The sandbox ("pause") image, built here: there is no image registry. A static binary of pause.c, one
// uncompressed layer, an OCI image config and manifest, packed as an OCI archive for `ctr images import`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

function blob(dir: string, data: Buffer): { digest: string; size: number } {
  const hex = createHash('sha256').update(data).digest('hex');
  writeFileSync(path.join(dir, 'blobs', 'sha256', hex), data);
  return { digest: `sha256:${hex}`, size: data.length };
}

/** Builds the image archive in `work` and returns its path; the image is named `ref`. */
export function buildPauseImage(work: string, ref: string): string {
  const rootfs = path.join(work, 'rootfs');
  const layout = path.join(work, 'layout');
  mkdirSync(rootfs, { recursive: true });
  mkdirSync(path.join(layout, 'blobs', 'sha256'), { recursive: true });
  execFileSync('gcc', ['-static', '-O2', '-o', path.join(rootfs, 'pause'), path.join(here, 'pause.c')]);
  const layerTar = path.join(work, 'layer.tar');
  execFileSync('tar', ['--owner=0', '--group=0', '--numeric-owner', '-C', rootfs, '-cf', layerTar, 'pause']);
  const layerBytes = readFileSync(layerTar);
  const layer = blob(layout, layerBytes);
  const config = blob(
    layout,
    Buffer.from(
      JSON.stringify({
        architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
        os: 'linux',
        config: { Entrypoint: ['/pause'] },
        rootfs: { type: 'layers', diff_ids: [layer.digest] },
      }),
    ),
  );
  const manifest = blob(
    layout,
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layer }],
      }),
    ),
  );
  writeFileSync(path.join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  writeFileSync(
    path.join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': ref } }],
    }),
  );
  const archive = path.join(work, 'pause.oci.tar');
  execFileSync('tar', ['-C', layout, '-cf', archive, 'oci-layout', 'index.json', 'blobs']);
  return archive;
}
