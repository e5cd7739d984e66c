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
import { CliError, EXIT_FAILURE } from './output.js';
import { registerCommands } from './commands.js';

/** Builds the commander program (exported for tests that want the help text in-process). */
function buildProgram(): Command {
  const program = new Command();
  program
    .name('agent-ledger')
    .description('Operate agent-ledger sessions: inspect, page, tail, verify, copy, fork, and serve the inspector page.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .addOption(new Option('--json', 'print JSON instead of text').default(false))
    .addOption(new Option('--token-env <name>', 'environment variable holding the bearer token of an http(s) store').default('AGENT_LEDGER_TOKEN'));
  registerCommands(program);
  program.exitOverride();
  return program;
}

function describe(error: unknown): string {
  if (error instanceof CliError) return error.message;
  if (isDurableError(error)) return `${error.message} (${error.code})`;
  if (error instanceof Error && error.name === 'AbortError') return 'aborted';
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Runs the CLI with `argv` (without the node and script entries); resolves to the exit code. */
export async function run(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander already printed its one-line message (or the help / version text).
      return error.exitCode === 0 ? 0 : EXIT_FAILURE;
    }
    process.stderr.write(`agent-ledger: ${describe(error)}\n`);
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
