// Structured JSON logs on stdout, one line per state change (pino).
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  // Synchronous writes: a line logged just before process.exit() must not be lost.
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: true }));
}
