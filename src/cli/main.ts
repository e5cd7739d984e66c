#!/usr/bin/env node
/**
 * `agent-ledger`: the command-line tool for operating sessions.
 *
 * Subcommands: `inspect`, `events`, `tail`, `plan`, `verify`, `copy`, `fork`, `serve` (see
 * `docs/cli.md`). Arguments are parsed by commander; stores are named by one URL-like argument
 * (`stores.ts`); everything heavy — storage backends with native addons, the inspector's Hono app —
 * is imported only by the command that needs it, so `agent-ledger --help` runs without them.
 * Every failure is one line on stderr and a non-zero exit (1, or 2 when `verify` found a defect or
 * `inspect` printed a log that does not project).
 */
import { Command, CommanderError, Option } from 'commander';
import { isDurableError } from '../protocol/errors.js';
import { CliError, CliOutput, EXIT_FAILURE, processIo, type CliIo } from './output.js';
import { registerCommands } from './commands.js';

/** Builds the commander program; its help, errors and commands write through `out`. */
function buildProgram(out: CliOutput): Command {
  const program = new Command();
  program
    .name('agent-ledger')
    .description('Operate agent-ledger sessions: inspect, page, tail, verify, copy, fork, and serve the inspector page.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .addOption(new Option('--json', 'print JSON instead of text').default(false))
    .addOption(new Option('--token-env <name>', 'environment variable holding the bearer token of an http(s) store').default('AGENT_LEDGER_TOKEN'));
  program.configureOutput({ writeOut: (text) => out.io.stdout.write(text), writeErr: (text) => out.io.stderr.write(text) });
  // Before the subcommands exist: each copies these settings when it is created, so a bad option
  // or `--help` of a subcommand throws a CommanderError too instead of calling process.exit.
  program.exitOverride();
  registerCommands(program, out);
  return program;
}

function describe(error: unknown): string {
  if (error instanceof CliError) return error.message;
  if (isDurableError(error)) return `${error.message} (${error.code})`;
  if (error instanceof Error && error.name === 'AbortError') return 'aborted';
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/**
 * Runs the CLI with `argv` (without the node and script entries); resolves to the exit code.
 * `io` defaults to the process's streams and environment; a caller in the same process (the
 * tests) passes its own buffers. `tail -f` and `serve` still listen for the process's SIGINT and
 * SIGTERM.
 */
export async function run(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const out = new CliOutput(io);
  const program = buildProgram(out);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return out.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander already printed its one-line message (or the help / version text).
      return error.exitCode === 0 ? 0 : EXIT_FAILURE;
    }
    out.warn(describe(error));
    return error instanceof CliError ? error.exitCode : EXIT_FAILURE;
  }
}

const isEntry = (() => {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  return /(^|[\\/])(main\.(ts|js|mjs)|agent-ledger)$/.test(entry);
})();

if (isEntry) {
  const code = await run(process.argv.slice(2));
  process.exitCode = code;
  // `serve` and `tail -f` keep running through their own handles; the rest end here.
}
