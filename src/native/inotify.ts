// The addon's inotify watcher (native/inotify_watcher.h): a live watch when its constructor returns,
// events handed over in columns; and the inotify masks.
export { IN, InotifyColumns, type EventColumns, type InotifyColumnsWatcher, type InotifyWatcherHandle } from './addon.js';
