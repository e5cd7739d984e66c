/**
 * Output of the CLI: one-line errors, JSON or human text, and a progress bar on terminals only.
 *
 * - Bad input and store failures become a {@link CliError} (or a `DurableError`): `main.ts` prints
 *   `agent-ledger: <message>` on stderr and exits non-zero, never with a stack trace.
 * - `--json` prints exactly one JSON document on stdout (`tail -f` prints one per line).
 * - {@link createProgress} draws a cli-progress bar on stderr when stderr is a terminal and
 *   `--json` is off; otherwise it does nothing at all, so piped output carries no extra bytes.
 */
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

/** Writes one line to stdout. */
export function println(text = ''): void {
  process.stdout.write(`${text}\n`);
}

/** Writes a JSON document to stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** A progress reporter: a bar on a terminal, nothing otherwise. */
export interface Progress {
  start(total: number, label: string): void;
  update(done: number, total?: number): void;
  stop(): void;
}

const SILENT: Progress = { start: () => undefined, update: () => undefined, stop: () => undefined };

/** A progress bar on stderr when it is a TTY and `json` is off; a no-op otherwise. */
export function createProgress(json: boolean): Progress {
  if (json || process.stderr.isTTY !== true) return SILENT;
  const bar = new cliProgress.SingleBar(
    { format: '{label} [{bar}] {value}/{total} ({percentage}%)', stream: process.stderr, hideCursor: true, clearOnComplete: true },
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
