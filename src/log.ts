// logfmt logger: one line per event, `level=… msg=… key=value`.
// Secrets never reach it: callers pass identity names, never passwords, tokens, cookies or keys,
// and `redact()` masks fields whose key looks like a secret in case one slips through.

export type Level = 'error' | 'warn' | 'info' | 'debug';
const RANK: Record<Level, number> = { error: 0, warn: 1, info: 2, debug: 3 };
export const LEVELS = Object.keys(RANK) as Level[];

export type Fields = Record<string, unknown>;

export interface Logger {
  error(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  debug(msg: string, fields?: Fields): void;
  /** Logged whatever the level (the readiness line). */
  always(msg: string, fields?: Fields): void;
  child(fields: Fields): Logger;
  setLevel(level: Level): void;
  enabled(level: Level): boolean;
}

const SECRET_KEY = /pass(word)?|secret|token|cookie|authorization|private/i;

// Control characters (C0, DEL, C1 — ESC, NUL, CSI…) from user input must not reach a terminal or a
// log parser raw: such a value is quoted and they are written as \uXXXX escapes (JSON.stringify does
// C0; DEL, C1 and the line/paragraph separators are added here).
const C1 = /[\u007f-\u009f\u2028\u2029]/g;

function quote(v: string): string {
  return /^[^\s"=\\\u0000-\u001f\u007f-\u009f]+$/.test(v) ? v : JSON.stringify(v).replace(C1, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function render(v: unknown): string {
  if (v instanceof Error) return quote(v.message);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'string') return quote(v);
  if (v === undefined) return '""';
  if (typeof v === 'object' && v !== null) return quote(JSON.stringify(v));
  return String(v);
}

export function formatLine(level: string, msg: string, fields: Fields): string {
  let line = `time=${new Date().toISOString()} level=${level} msg=${quote(msg)}`;
  for (const k of Object.keys(fields)) {
    const v = fields[k];
    line += ` ${k}=${SECRET_KEY.test(k) ? '"[redacted]"' : render(v)}`;
  }
  return line;
}

export type Sink = (line: string, level: Level) => void;

const defaultSink: Sink = (line, level) => {
  (RANK[level] <= RANK.warn ? process.stderr : process.stdout).write(line + '\n');
};

export function createLogger(level: Level = 'info', sink: Sink = defaultSink, base: Fields = {}): Logger {
  const state = { rank: RANK[level] };
  const make = (bound: Fields): Logger => {
    const emit = (lvl: Level, msg: string, fields?: Fields, force = false) => {
      if (!force && RANK[lvl] > state.rank) return;
      sink(formatLine(lvl, msg, fields ? { ...bound, ...fields } : bound), lvl);
    };
    return {
      error: (m, f) => emit('error', m, f),
      warn: (m, f) => emit('warn', m, f),
      info: (m, f) => emit('info', m, f),
      debug: (m, f) => emit('debug', m, f),
      always: (m, f) => emit('info', m, f, true),
      child: (f) => make({ ...bound, ...f }),
      setLevel: (l) => { state.rank = RANK[l]; },
      enabled: (l) => RANK[l] <= state.rank,
    };
  };
  return make(base);
}

/** A logger that drops everything (for unit tests of modules). */
export const silentLogger: Logger = createLogger('error', () => {});
