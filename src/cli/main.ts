/**
 * The `cudagraph` command (bin/cudagraph.js calls `run`). Commands: `demo`, `doctor`, `bench`,
 * `render`, `inspect`, `convert`, `serve`.
 *
 * Conventions: `--help` on every command; `--json` where the output is data; results on stdout,
 * errors on stderr; a user's mistake (unknown command or option, a bad path, a malformed graph
 * file, an unknown picture extension, no GPU for `bench`) is one line without a stack trace and
 * exit status 1.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Argument, Command, CommanderError, Option } from 'commander';
import { CudagraphError } from '../index.js';
import { BENCH_DEFAULTS, bench } from './bench.js';
import { demo, type DemoMode } from './demo.js';
import { demoSolver } from './demo-solver.js';
import { doctor } from './doctor.js';
import { ENGINE_KINDS, MODEL_CONFIGS } from './engine-factory.js';
import { inspect } from './inspect.js';
import { convert } from './convert.js';
import { LAYOUT_MAX_NODES } from './layout-limits.js';
import { intOption, numberOption } from './options.js';
import { processOutput, type Output } from './output.js';
import { render } from './render.js';
import { SERVE_DEFAULTS, serve, type ServeArgs } from './serve.js';
import { terminalLines, terminalText } from './terminal-text.js';
import { OptionError, UsageError } from './usage-error.js';

/** What a run of the program found out: its exit status, and the command whose action ran. */
interface RunState {
  code: number;
  command?: string;
}

function program(io: Output, exit: RunState): Command {
  const cli = new Command('cudagraph')
    .description('CUDA graphs for Node.js: record GPU work once, replay it with one launch.')
    .exitOverride()
    .configureOutput({
      writeOut: io.out,
      writeErr: io.err,
      // One style for every error line: `cudagraph: …`.
      // Commander quotes what was typed: escaped, so a typed control character cannot forge lines.
      outputError: (text, write) => write(`cudagraph: ${terminalLines(text.replace(/^error: /, ''))}`),
    })
    .version(packageVersion(), '-V, --version', 'print the version of cudagraph')
    .showHelpAfterError('(run cudagraph --help for usage)')
    .allowExcessArguments(false)
    .addHelpText(
      'after',
      '\nStart with `cudagraph demo` (GPU if present, else the CPU model), or `cudagraph doctor` to see what this machine supports.',
    );

  cli
    .command('demo')
    .summary('the main job: a tiny MLP run eagerly and as one CUDA graph (or recorded in the CPU model); `demo solver`: a solver that loops on the GPU')
    .description(
      'run the main job on a tiny MLP forward pass (34 kernels over 3 streams with fork/join): on a GPU, compile it, run it eagerly, capture it into a CUDA graph, replay it, check the results and time both; without one, record it in the CPU model. Writes demo.json, demo.dot and demo.svg.\n\n' +
        '`demo solver`: a conjugate-gradient solver (2-D Poisson, --n × --n grid) whose whole iteration runs in one WHILE node until it converges, checked against a float64 CPU solve and timed against the same kernels driven from the host; without a GPU, the CPU solve and the program recorded in the model. Writes solver.json, solver.dot and solver.svg',
    )
    .addArgument(new Argument('[job]', 'mlp (the default) or solver').choices(['mlp', 'solver']).default('mlp'))
    .option('-o, --out <dir>', 'folder for the JSON, DOT and SVG files', 'cudagraph-out')
    .addOption(new Option('--mode <mode>', 'gpu: require a GPU; cpu: use the CPU model even with one').choices(['auto', 'gpu', 'cpu']).default('auto'))
    .option('--rounds <n>', 'GPU: timing rounds (the variants alternate)', '5')
    .option('--iterations <n>', 'mlp, GPU: forward passes per round, each way', '200')
    .option('--n <n>', 'solver: the grid side (n × n unknowns)', '256')
    .option('--tol <x>', 'solver: stop when ‖r‖/‖b‖ < tol', '1e-8')
    .option('--json', 'print the report as JSON', false)
    .action(async (job: 'mlp' | 'solver', o: { out: string; mode: DemoMode; rounds: string; iterations: string; n: string; tol: string; json: boolean }, command: Command) => {
      // An option of the other job is refused: ignored, `demo --n 1024` would run the MLP as if it had not been given.
      const others = job === 'solver' ? { iterations: 'mlp' } : { n: 'solver', tol: 'solver' };
      for (const [key, owner] of Object.entries(others)) {
        if (command.getOptionValueSource(key) === 'cli') throw new OptionError(`--${key} is an option of demo ${owner}, not of demo ${job}`);
      }
      const rounds = intOption('--rounds', o.rounds, 1, 1000);
      if (job === 'solver') {
        // The float64 CPU reference takes about a minute at 2048 (4 M unknowns, ~4,000 iterations).
        const n = intOption('--n', o.n, 2, 2048);
        const tol = numberOption('--tol', o.tol, (x) => x > 0 && x < 1, 'in (0, 1)');
        exit.code = await demoSolver({ out: o.out, json: o.json, mode: o.mode, n, tol, rounds }, io);
        return;
      }
      const iterations = intOption('--iterations', o.iterations, 1, 1_000_000);
      exit.code = await demo({ out: o.out, json: o.json, mode: o.mode, rounds, iterations }, io);
    });

  cli
    .command('doctor')
    .summary('what this machine supports, and what to do about what fails')
    .description('check what this machine supports: the CUDA driver (where, version), the GPUs, NVRTC, and a real capture and replay; says what to do about each failure (exit status 1 if any check fails)')
    .option('--json', 'print the checks as JSON', false)
    .action((o: { json: boolean }) => {
      exit.code = doctor(o, io);
    });

  cli
    .command('bench')
    .summary("this GPU's launch overhead: eager vs graph at several graph sizes")
    .description(
      `measure this GPU's launch overhead: N empty kernels launched eagerly vs captured into one graph, at several graph sizes (default ${BENCH_DEFAULTS.sizes.join(', ')}); a progress bar on stderr when it is a terminal`,
    )
    .option('--sizes <list>', 'graph sizes, comma-separated', BENCH_DEFAULTS.sizes.join(','))
    .option('--rounds <n>', `rounds (default ${BENCH_DEFAULTS.rounds}; --quick ${BENCH_DEFAULTS.quickRounds})`)
    .option('--reps <n>', `repetitions per round (default ${BENCH_DEFAULTS.reps}; --quick ${BENCH_DEFAULTS.quickReps})`)
    .option('--quick', 'fewer rounds and repetitions', false)
    .option('--json', 'print the table as JSON', false)
    .action((o: { sizes: string; rounds?: string; reps?: string; quick: boolean; json: boolean }) => bench(o, io));

  cli
    .command('render')
    .summary('draw a saved graph as .svg, .png, .dot or .mmd')
    .description('draw a saved graph (JSON from graph.toJSON() or `cudagraph demo`): one lane and colour per stream, a shape per kind, the critical path thick and red; the format follows the extension of -o: .svg, .png, .dot or .mmd (Mermaid)')
    .argument('<graph>', 'the graph file (.json or .cgraph)')
    .requiredOption('-o, --output <file>', 'the picture to write: .svg, .png, .dot or .mmd')
    .option('--title <text>', "the picture's title (default: the file name and counts; '' for none)")
    .option('--no-critical-path', 'do not highlight the critical path')
    .option('--font <file>', 'PNG: a .ttf/.otf font for the text (default: a sans-serif font found on the system, or $CUDAGRAPH_FONT)')
    .option('--scale <n>', 'PNG: pixels per point (default 1.5)')
    .option('--summary', 'draw one node per group of ops (stream segment, or stream and level band) instead of every node; SVG, PNG and DOT', false)
    .option('--full', `SVG, PNG: lay out every node, refusing a graph beyond ${LAYOUT_MAX_NODES.toLocaleString('en-US')} nodes (default: draw a summary of such a graph)`)
    .action((file: string, o: { output: string; title?: string; criticalPath: boolean; font?: string; scale?: string; summary: boolean; full?: boolean }) => render(file, o, io));

  cli
    .command('inspect')
    .summary('describe a saved graph: kinds, streams, depth, width, critical path, joins')
    .description('describe a saved graph: nodes by kind, streams, depth, width, critical path, cross-stream joins; long lists show their first 40 and last 10 items unless --full')
    .argument('<graph>', 'the graph file (.json or .cgraph)')
    .option('--json', 'print the description as JSON', false)
    .option('--full', 'list every source, sink, stream, critical-path node and join in the text', false)
    .action((file: string, o: { json: boolean; full: boolean }) => inspect(file, o, io));

  cli
    .command('convert')
    .summary('write a saved graph as binary (.cgraph) or JSON (.json)')
    .description('read a saved graph (JSON or the binary form, known by its first bytes) and write it in the form the extension of -o names: .cgraph the binary form (a few times smaller, loads many times faster), .json the JSON document')
    .argument('<graph>', 'the graph file (.json or .cgraph)')
    .requiredOption('-o, --output <file>', 'the file to write: .cgraph or .json')
    .action((file: string, o: { output: string }) => convert(file, o, io));

  cli
    .command('serve')
    .summary('an OpenAI-style completions server over a decode engine, with continuous batching')
    .description(
      'serve POST /v1/completions and POST /v1/chat/completions (JSON, or server-sent events with "stream": true), GET /v1/models, GET /health and GET /metrics (Prometheus text) over a decode engine; ' +
        'every running request advances by one token in each engine step (a prompt by a chunk of its tokens), requests join and leave between steps. Stops gracefully on Ctrl-C or SIGTERM ' +
        `(the requests in flight get ${SERVE_DEFAULTS.graceMs / 1000} s to finish; a second signal cancels them). docs/serve.md describes the API, the limits and the metrics`,
    )
    .option('--port <n>', 'the TCP port (0: any free one)', String(SERVE_DEFAULTS.port))
    .option('--host <address>', 'the address to listen on', SERVE_DEFAULTS.host)
    .addOption(
      new Option('--engine <kind>', 'cpu: the CPU reference engine; gpu: one CUDA graph per batch size; gpu-eager: the same kernels launched one by one')
        .choices(ENGINE_KINDS)
        .default(SERVE_DEFAULTS.engine),
    )
    .option('--slots <n>', 'KV-cache slots: the most requests generating at once', String(SERVE_DEFAULTS.slots))
    .option('--max-batch <n>', 'the most entries one engine step takes: one a running request, the room left for prompt chunks (default: --slots on the cpu engine, 32 on the gpu ones)')
    .option('--prefill-chunk <n>', 'the most prompt tokens a request feeds in one step (default: --max-batch; 1: token by token)')
    .option('--queue <n>', 'requests that may wait for a slot; one more is refused with 429', String(SERVE_DEFAULTS.queue))
    .option('--max-tokens <n>', `the most max_tokens a request may ask for (default ${SERVE_DEFAULTS.maxTokens}; requests default to 64)`)
    .option('--headers-timeout <ms>', `milliseconds a client has to send a request's headers; later, 408 (default ${SERVE_DEFAULTS.headersTimeoutMs})`)
    .option('--request-timeout <ms>', `milliseconds a client has to send a whole request, at least --headers-timeout; later, 408 (default ${SERVE_DEFAULTS.requestTimeoutMs}; a response is not timed)`)
    .option('--max-connections <n>', `open connections at most; one more is closed at once (default ${SERVE_DEFAULTS.maxConnections})`)
    .addOption(
      new Option('--config <name>', `the model's shape: small (${MODEL_CONFIGS.small.layers} layers, width ${MODEL_CONFIGS.small.dim}, ${MODEL_CONFIGS.small.maxPositions} positions) or default (${MODEL_CONFIGS.default.layers} layers, width ${MODEL_CONFIGS.default.dim}, ${MODEL_CONFIGS.default.maxPositions} positions)`)
        .choices(Object.keys(MODEL_CONFIGS))
        .default(SERVE_DEFAULTS.config),
    )
    .option('--weights <file>', "a .safetensors file of the shape's weights (default: random weights from --seed)")
    .option('--seed <n>', 'the seed of random weights', String(SERVE_DEFAULTS.seed))
    .action(async (o: ServeArgs) => {
      exit.code = await serve(o, io);
    });

  // The command whose action runs: its option errors point at its help.
  cli.hook('preAction', (_cli, action) => {
    exit.command = action.name();
  });
  for (const c of cli.commands) c.allowExcessArguments(false);
  // Each command's usage errors point at that command's help.
  for (const c of cli.commands) c.showHelpAfterError(`(run cudagraph ${c.name()} --help for usage)`);
  return cli;
}

/** The package's version, from the package.json beside the build (dist/src/cli → the package root). */
function packageVersion(): string {
  try {
    const v = (JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as { version?: unknown }).version;
    return typeof v === 'string' ? v : 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Runs the command line `argv` (the arguments after the program name) and returns the exit
 * status: 0 on success, 1 on any error (or a failed check). Output goes to `io` (default: stdout
 * and stderr).
 */
export async function run(argv: string[], io: Output = processOutput): Promise<number> {
  const exit: RunState = { code: 0 };
  try {
    if (argv.length === 0) {
      io.err(program(io, exit).helpInformation());
      return 1;
    }
    await program(io, exit).parseAsync(argv, { from: 'user' });
    return exit.code;
  } catch (e) {
    // Commander has already printed its message (or the help, or the version).
    if (e instanceof CommanderError) return e.exitCode;
    if (e instanceof UsageError) {
      // One line, whatever paths or names the message quotes; an option's, with commander's pointer at the help.
      const help = e instanceof OptionError && exit.command !== undefined ? `(run cudagraph ${exit.command} --help for usage)\n` : '';
      io.err(`cudagraph: ${terminalText(e.message)}\n${help}`);
      return 1;
    }
    if (e instanceof CudagraphError) {
      // A driver or NVRTC failure: its message already names the operation and what to check.
      io.err(`cudagraph: ${terminalLines(e.message)}\n(run \`cudagraph doctor\` to check this machine)\n`);
      return 1;
    }
    // Anything else is a bug in cudagraph: keep the stack so it can be reported.
    io.err(`cudagraph: internal error (please report it): ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    return 1;
  }
}
