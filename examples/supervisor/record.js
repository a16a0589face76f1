#!/usr/bin/env node
// Recording supervised drives for rovertrain (Node built-ins only): the part of a teleop server
// that writes the command log while a policy drives under a person's supervision.
//
//   const { DriveRecorder } = require('./record.js');
//   const recorder = new DriveRecorder(root, sessionId, { roverId, roles, video, drivenBy });
//   recorder.send(t, 'drive', { speed: 0.6, turn: 0.1 }, 'policy'); // what the rover's policy sent
//   recorder.send(t, 'stop', null);                                 // a person: a take-over
//   recorder.close();                                               // session.json, atomically
//
// Every command line carries `by: "policy"` when the policy sent it and nothing when a person
// did (docs/recording-format.md); session.json names the model that drove (`drivenBy`). The
// recording folder is written under a hidden name and renamed complete, so a job never reads
// half a recording. As a command-line tool it turns an NDJSON stream of
// {"t", "type", "values", "by"} lines on stdin into a recording (used by the tests):
//
//   node record.js ROOT SESSION_ID VIDEO_FILE MODEL_ID < commands.ndjson
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const SENDERS = new Set(['human', 'policy']);

class DriveRecorder {
  constructor(root, sessionId, { roverId, roles, video, videoOffsetMs = 0, drivenBy = null, controlProfile = null }) {
    this.final = path.join(root, 'recordings', sessionId);
    if (fs.existsSync(this.final)) throw new Error(`${this.final} exists: recordings are never overwritten`);
    this.staging = path.join(root, 'recordings', `.${sessionId}.partial`);
    fs.rmSync(this.staging, { recursive: true, force: true });
    fs.mkdirSync(this.staging, { recursive: true });
    this.meta = {
      format: 'rovertrain-recording/1',
      sessionId,
      roverId,
      controlProfile,
      startedAt: new Date().toISOString(),
      video: { file: path.basename(video), offsetMs: videoOffsetMs },
      commands: { file: 'commands.ndjson' },
      commandRoles: roles,
    };
    if (drivenBy) this.meta.drivenBy = { model: drivenBy };
    this.video = video;
    this.log = fs.openSync(path.join(this.staging, 'commands.ndjson'), 'w');
  }

  // One command the rover was sent: `by` 'human' (a person, the default) or 'policy'.
  send(t, type, values = null, by = 'human') {
    if (!SENDERS.has(by)) throw new Error(`by must be human or policy, got ${by}`);
    const line = { t, type };
    if (values) line.values = values;
    if (by === 'policy') line.by = 'policy';
    fs.writeSync(this.log, `${JSON.stringify(line)}\n`);
  }

  close() {
    fs.fsyncSync(this.log);
    fs.closeSync(this.log);
    fs.copyFileSync(this.video, path.join(this.staging, path.basename(this.video)));
    fs.writeFileSync(path.join(this.staging, 'session.json'), `${JSON.stringify(this.meta, null, 2)}\n`);
    fs.renameSync(this.staging, this.final);
    return this.final;
  }
}

async function main() {
  const [root, sessionId, video, model] = process.argv.slice(2);
  if (!model) {
    process.stderr.write('usage: record.js ROOT SESSION_ID VIDEO_FILE MODEL_ID < commands.ndjson\n');
    process.exit(2);
  }
  const recorder = new DriveRecorder(root, sessionId, {
    roverId: 'rover-node', roles: { stop: 'stop', drive: 'movement' }, video, drivenBy: model,
  });
  let count = 0;
  for await (const text of readline.createInterface({ input: process.stdin })) {
    if (!text.trim()) continue;
    const command = JSON.parse(text);
    recorder.send(command.t, command.type, command.values || null, command.by || 'human');
    count += 1;
  }
  process.stdout.write(`${JSON.stringify({ recorded: recorder.close(), commands: count })}\n`);
}

if (require.main === module) main();

module.exports = { DriveRecorder };
