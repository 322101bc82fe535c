// Helpers of nsclaim's GitHub Action: inputs, outputs, state and the step summary through the files and
// variables a GitHub runner sets, and runs of kubectl-nsclaim. No dependencies: Node's standard library.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

// input reads an action input as the runner passes it: INPUT_<NAME, upper case, spaces as _>.
function input(name) {
  return (process.env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] || '').trim();
}

// appendFile appends "key=value" (or a multi-line value with a delimiter) to a runner file.
function appendKV(file, key, value) {
  if (!file) return;
  const v = String(value);
  if (v.includes('\n')) {
    const delim = `nsclaim_${Date.now()}`;
    fs.appendFileSync(file, `${key}<<${delim}\n${v}\n${delim}\n`);
  } else {
    fs.appendFileSync(file, `${key}=${v}\n`);
  }
}

const setOutput = (k, v) => appendKV(process.env.GITHUB_OUTPUT, k, v);
const saveState = (k, v) => appendKV(process.env.GITHUB_STATE, k, v);
const exportVariable = (k, v) => appendKV(process.env.GITHUB_ENV, k, v);
// getState reads what main saved: the runner hands it to post as STATE_<key>.
const getState = (k) => process.env[`STATE_${k}`] || '';

function summary(markdown) {
  if (process.env.GITHUB_STEP_SUMMARY) fs.appendFileSync(process.env.GITHUB_STEP_SUMMARY, markdown + '\n');
}

// escapeData escapes a workflow command's message.
function escapeData(s) {
  return String(s).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function error(msg) {
  process.stdout.write(`::error title=nsclaim::${escapeData(msg)}\n`);
}

// addMask tells the runner to mask a secret in the logs.
function addMask(secret) {
  if (secret) process.stdout.write(`::add-mask::${escapeData(secret)}\n`);
}

// workDir is the action's private directory under RUNNER_TEMP.
function workDir() {
  const dir = path.join(process.env.RUNNER_TEMP || os.tmpdir(), 'nsclaim');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

// plugin runs kubectl-nsclaim with args (env added to the step's); its stderr goes to the log as it
// comes (the progress lines of a wait: the log is never silent), stdout is returned.
function plugin(bin, args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; process.stderr.write(d); });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code === null ? 1 : code, stdout, stderr }));
  });
}

// checkInputs refuses an input that would be read as a flag (it starts with "-") or holds a line
// break: the plugin gets every input as one argument, never as code or as another option.
function checkInputs(names) {
  for (const n of names) {
    const v = input(n);
    if (v.startsWith('-')) throw new Error(`input ${n} must not start with "-" (got ${JSON.stringify(v.slice(0, 70))}): it would be read as a flag`);
    if (/[\r\n\0]/.test(v)) throw new Error(`input ${n} must be one line`);
  }
}

module.exports = { input, setOutput, saveState, getState, exportVariable, summary, error, addMask, workDir, plugin, checkInputs };
