import { NativeWatcher } from './native.js';
import { ParcelWatcher } from './parcel.js';
import type { WatchBackendName, WatchErrorListener, Watcher, WatchListener } from './watcher.js';

export function createWatcher(
  backend: WatchBackendName,
  onEvents: WatchListener,
  onError?: WatchErrorListener,
): Watcher {
  return backend === 'native' ? new NativeWatcher(onEvents, onError) : new ParcelWatcher(onEvents, onError);
}
