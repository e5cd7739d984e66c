/**
 * Output of the CLI: one-line errors, JSON or human text, and a progress bar on terminals only.
 *
 * - Bad input and store failures become a {@link CliError} (or a `DurableError`): `main.ts` prints
 *   `agent-ledger: <message>` on stderr and exits non-zero, never with a stack trace.
 * - `--json` prints exactly one JSON document on stdout (`tail -f` prints one per line).
 * - {@link CliOutput.progress} draws a cli-progress bar on stderr when stderr is a terminal and
 *   `--json` is off; otherwise it does nothing at all, so piped output carries no extra bytes.
 * - Every command writes through one {@link CliOutput} per run, over a {@link CliIo}: the process's
 *   streams and environment for the bin, buffers for a caller that runs the CLI in its own process
 *   (the tests do, for every command that needs no signal or terminal).
 */
import { Writable } from 'node:stream';
import cliProgress from 'cli-progress';

/** An expected failure: printed as one line, exit code {@link EXIT_FAILURE}. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number = EXIT_FAILURE) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/** Exit code of a failed command (bad input, unreachable store, refused operation). */
export const EXIT_FAILURE = 1;
/** Exit code of `verify` when it found a defect, and of `inspect` when the log does not project. */
export const EXIT_DEFECT = 2;

/** A progress reporter: a bar on a terminal, nothing otherwise. */
export interface Progress {
  start(total: number, label: string): void;
  update(done: number, total?: number): void;
  stop(): void;
}

const SILENT: Progress = { start: () => undefined, update: () => undefined, stop: () => undefined };

/** A stream the CLI writes text to. */
export interface CliStream {
  write(text: string): unknown;
  /** True on a terminal: only then is a progress bar drawn (on stderr). */
  readonly isTTY?: boolean | undefined;
}

/** Where one CLI run writes and what environment it reads (bearer and page tokens). */
export interface CliIo {
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** The process's own streams and environment: what the bin uses. */
export function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}

/** Output of one CLI run, and the exit code its command chose (a defect found: {@link EXIT_DEFECT}). */
export class CliOutput {
  readonly io: CliIo;
  exitCode = 0;
  constructor(io: CliIo) {
    this.io = io;
  }

  /** Writes one line to stdout. */
  println(text = ''): void {
    this.io.stdout.write(`${text}\n`);
  }

  /** Writes a JSON document to stdout (one line when `compact`). */
  printJson(value: unknown, compact = false): void {
    this.io.stdout.write(`${compact ? JSON.stringify(value) : JSON.stringify(value, null, 2)}\n`);
  }

  /** Writes `agent-ledger: <text>` to stderr. */
  warn(text: string): void {
    this.io.stderr.write(`agent-ledger: ${text}\n`);
  }

  /** A progress bar on stderr when it is a terminal and `json` is off; a no-op otherwise. */
  progress(json: boolean): Progress {
    const stream = this.io.stderr;
    if (json || stream.isTTY !== true || !(stream instanceof Writable)) return SILENT;
    return progressBar(stream);
  }
}

function progressBar(stream: Writable): Progress {
  const bar = new cliProgress.SingleBar(
    { format: '{label} [{bar}] {value}/{total} ({percentage}%)', stream, hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    start(total, label) {
      bar.start(Math.max(total, 1), 0, { label });
      started = true;
    },
    update(done, total) {
      if (!started) return;
      if (total !== undefined) bar.setTotal(Math.max(total, 1));
      bar.update(done);
    },
    stop() {
      if (started) bar.stop();
      started = false;
    },
  };
}

/** Pads or truncates `text` to `width` characters. */
export function cell(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, Math.max(0, width - 1))}…` : text.padEnd(width);
}

/** A short one-line rendering of a JSON value. */
export function brief(value: unknown, width = 80): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > width ? `${text.slice(0, width - 1)}…` : text;
}
