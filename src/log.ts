// Structured logs on stdout, one line per state change (pino): JSON by default, or plain text lines
// (LOG_FORMAT=text) for operators who grep, as they do linkerd's installer's output.
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

export type LogFormat = 'json' | 'text';

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** One JSON log line as `time LEVEL message key=value ...`. */
export function textLine(json: string): string {
  const { time, level, msg, pid: _pid, ...rest } = JSON.parse(json) as Record<string, unknown>;
  const fields = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' && !/[\s"=]/.test(v) ? v : JSON.stringify(v)}`);
  return `${String(time)} ${LEVEL_NAMES[level as number] ?? String(level)} ${String(msg ?? '')}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}\n`;
}

export function createLogger(level: string, format: LogFormat = 'json'): Logger {
  // Synchronous writes: a line logged just before process.exit() must not be lost.
  const destination = pino.destination({ dest: 1, sync: true });
  const stream: DestinationStream = format === 'json' ? destination : { write: (line: string) => void destination.write(textLine(line)) };
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, stream);
}
