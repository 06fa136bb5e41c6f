// A monotonic clock in milliseconds, for timers of the fight rule and the health server's stall
// check. Not performance.now(): the global `performance` is Node's perf_hooks, and its first use
// loads nine internal modules (perf_hooks, histogram, event-loop utilisation and more: ~0.2 MiB of
// heap for the life of the process, measured with process.moduleLoadList and RssAnon) for a clock.
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
