#!/usr/bin/env node
// Example supervisor for rovertrain (Node built-ins only).
//
//   node supervise.js [--rovertrain CMD] [--pause-after S --resume-after S] [--stop-after S] JOB.json
//
// Spawns `rovertrain run --job JOB.json`, parses the NDJSON stream line by line, shows progress,
// can pause (SIGTSTP) / resume (SIGCONT) / stop (SIGTERM) the job, and classifies the outcome:
// completed (a `complete` event), failed (an `error` event) or crashed (no terminal event).
// Prints one final JSON line {"outcome": ..., "exitCode": ..., "events": N} on stdout.
'use strict';
const { spawn } = require('node:child_process');
const readline = require('node:readline');

function parseArgs(argv) {
  const options = { rovertrain: 'rovertrain', job: null };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--rovertrain') options.rovertrain = argv[++i];
    else if (arg === '--pause-after') options.pauseAfter = Number(argv[++i]);
    else if (arg === '--resume-after') options.resumeAfter = Number(argv[++i]);
    else if (arg === '--stop-after') options.stopAfter = Number(argv[++i]);
    else options.job = arg;
  }
  if (!options.job) {
    process.stderr.write('usage: supervise.js [options] JOB.json\n');
    process.exit(2);
  }
  return options;
}

function classify(terminal) {
  if (!terminal) return 'crashed';
  return terminal.kind === 'complete' ? 'completed' : 'failed';
}

function main() {
  const options = parseArgs(process.argv.slice(2));
  const [command, ...prefix] = options.rovertrain.split(' ');
  const child = spawn(command, [...prefix, 'run', '--job', options.job], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let terminal = null;
  let count = 0;
  let expectedSeq = 0;
  const timers = [];
  const lines = readline.createInterface({ input: child.stdout });
  lines.on('line', (line) => {
    let event;
    try {
      event = JSON.parse(line);
    } catch (error) {
      process.stderr.write(`supervisor: unparseable line: ${line.slice(0, 120)}\n`);
      return;
    }
    count += 1;
    if (event.seq !== expectedSeq) process.stderr.write(`supervisor: seq gap at ${event.seq}\n`);
    expectedSeq = event.seq + 1;
    if (event.kind === 'progress') {
      process.stderr.write(`supervisor: step ${event.steps} loss ${event.loss.toFixed(4)}\n`);
    } else if (event.kind === 'paused' || event.kind === 'resumed' || event.kind === 'phase') {
      process.stderr.write(`supervisor: ${event.kind} ${event.phase}\n`);
    } else if (event.kind === 'complete' || event.kind === 'error') {
      terminal = event;
    }
  });
  const after = (seconds, action) => {
    if (Number.isFinite(seconds)) timers.push(setTimeout(action, seconds * 1000));
  };
  after(options.pauseAfter, () => child.kill('SIGTSTP'));
  after(options.resumeAfter, () => child.kill('SIGCONT'));
  after(options.stopAfter, () => child.kill('SIGTERM'));
  child.on('close', (code, signal) => {
    timers.forEach(clearTimeout);
    const outcome = classify(terminal);
    const summary = { outcome, exitCode: code, signal, events: count };
    if (terminal && terminal.kind === 'error') summary.error = terminal.code;
    if (terminal && terminal.kind === 'complete') summary.promote = terminal.promote ?? null;
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    process.exitCode = outcome === 'completed' ? 0 : 1;
  });
}

main();
