// A small CRI client (runtime.v1 over gRPC on a unix socket): what kubelet would call to start pods.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const protoFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cri.proto');

type Callback<T> = (err: grpc.ServiceError | null, value: T) => void;
interface RuntimeServiceClient extends grpc.Client {
  Version(req: object, cb: Callback<{ runtime_name: string; runtime_version: string }>): void;
  RunPodSandbox(req: object, options: grpc.CallOptions, cb: Callback<{ pod_sandbox_id: string }>): void;
  StopPodSandbox(req: object, options: grpc.CallOptions, cb: Callback<object>): void;
  RemovePodSandbox(req: object, options: grpc.CallOptions, cb: Callback<object>): void;
  Status(req: object, cb: Callback<{ status: { conditions: Array<{ type: string; status: boolean; reason: string; message: string }> } }>): void;
}

function call<T>(fn: (cb: Callback<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value))));
}

export class CriClient {
  private readonly client: RuntimeServiceClient;

  constructor(socket: string) {
    const definition = protoLoader.loadSync(protoFile, { keepCase: true, longs: String, enums: String, defaults: true });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as { runtime: { v1: { RuntimeService: new (address: string, creds: grpc.ChannelCredentials) => RuntimeServiceClient } } };
    this.client = new loaded.runtime.v1.RuntimeService(`unix://${socket}`, grpc.credentials.createInsecure());
  }

  version() {
    return call<{ runtime_name: string; runtime_version: string }>((cb) => this.client.Version({ version: 'v1' }, cb));
  }

  /** The runtime's conditions, such as NetworkReady (false until a CNI config loads). */
  async conditions(): Promise<Record<string, boolean>> {
    const res = await call<{ status: { conditions: Array<{ type: string; status: boolean }> } }>((cb) => this.client.Status({ verbose: false }, cb));
    return Object.fromEntries(res.status.conditions.map((c) => [c.type, c.status]));
  }

  /** Starts a pod sandbox (the pause container, its network namespace, the CNI ADD); its id. */
  async runPodSandbox(name: string, cgroupParent: string, timeoutMs = 30_000): Promise<string> {
    const config = {
      metadata: { name, uid: `uid-${name}`, namespace: 'default', attempt: 0 },
      hostname: name,
      log_directory: '',
      labels: { 'cni-chainer-test': 'true' },
      linux: { cgroup_parent: cgroupParent, security_context: { namespace_options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
    };
    const res = await call<{ pod_sandbox_id: string }>((cb) => this.client.RunPodSandbox({ config }, { deadline: Date.now() + timeoutMs }, cb));
    return res.pod_sandbox_id;
  }

  /** Stops and removes a sandbox (its CNI DEL runs here). */
  async removePodSandbox(id: string): Promise<void> {
    await call((cb) => this.client.StopPodSandbox({ pod_sandbox_id: id }, { deadline: Date.now() + 30_000 }, cb));
    await call((cb) => this.client.RemovePodSandbox({ pod_sandbox_id: id }, { deadline: Date.now() + 30_000 }, cb));
  }

  close(): void {
    this.client.close();
  }
}
