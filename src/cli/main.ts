/**
 * The `cudagraph` command (bin/cudagraph.js calls `run`). Commands: `demo`.
 *
 * Conventions: `--help` on every command; results on stdout, errors on stderr; a user's mistake
 * (unknown command or option, a path that cannot be written) is one line without a stack trace
 * and exit status 1.
 */
import { Command, CommanderError } from 'commander';
import { CudagraphError } from '../errors/base.js';
import { demo, type Output } from './demo.js';
import { UsageError } from './usage-error.js';

const processOutput: Output = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

function program(io: Output): Command {
  const cli = new Command('cudagraph')
    .description('CUDA graphs for Node.js: record GPU work once, replay it with one launch.')
    .exitOverride()
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      // One style for every error line: `cudagraph: …`.
      outputError: (text, write) => write(`cudagraph: ${text.replace(/^error: /, '')}`),
    })
    .showHelpAfterError('(run cudagraph --help for usage)')
    .allowExcessArguments(false);
  cli
    .command('demo')
    .description('record a small multi-stream workload (an MLP forward pass) and report its graph: nodes, streams, levels, critical path; writes demo.dot and demo.json')
    .option('-o, --out <dir>', 'folder for demo.dot and demo.json', 'cudagraph-out')
    .option('--json', 'print the summary as JSON', false)
    .allowExcessArguments(false)
    .action((opts: { out: string; json: boolean }) => demo(opts, io));
  return cli;
}

/**
 * Runs the command line `argv` (the arguments after the program name) and returns the exit
 * status: 0 on success, 1 on any error. Output goes to `io` (default: stdout and stderr).
 */
export async function run(argv: string[], io: Output = processOutput): Promise<number> {
  try {
    if (argv.length === 0) {
      io.err(program(io).helpInformation());
      return 1;
    }
    await program(io).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    // Commander has already printed its message (or the help, or the version).
    if (e instanceof CommanderError) return e.exitCode;
    if (e instanceof UsageError || e instanceof CudagraphError) {
      io.err(`cudagraph: ${e.message}\n`);
      return 1;
    }
    // Anything else is a bug in cudagraph: keep the stack so it can be reported.
    io.err(`cudagraph: internal error (please report it): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    return 1;
  }
}
