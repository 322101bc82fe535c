// Unit tests of nsclaim's GitHub Action (node --test action/test): the plugin's download for each
// platform of a runner, and the main and post steps run as a runner runs them, Windows- and
// macOS-shaped (process.platform and process.arch replaced by test/shim.js), with a stand-in plugin
// that records its arguments. cmd/kubectl-nsclaim's TestGitHubActionUnit runs them under go test.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { spawnSync } = require('child_process');
const { findPlugin, pinnedVersion, missingRelease } = require('../plugin');

const ACTION = path.join(__dirname, '..');

// release makes a directory holding a release's archive for platform/arch, with the stand-in plugin
// as its binary, and the checksums file.
function release(osName, arch) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-release-'));
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-stage-'));
  const bin = osName === 'windows' ? 'kubectl-nsclaim.exe' : 'kubectl-nsclaim';
  fs.copyFileSync(path.join(__dirname, 'fake-plugin.sh'), path.join(stage, bin));
  fs.chmodSync(path.join(stage, bin), 0o755);
  const asset = `kubectl-nsclaim_${osName}_${arch}.tar.gz`;
  const tar = spawnSync('tar', ['-czf', path.join(dir, asset), '-C', stage, bin]);
  assert.strictEqual(tar.status, 0, String(tar.stderr));
  const sum = crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, asset))).digest('hex');
  fs.writeFileSync(path.join(dir, 'kubectl-nsclaim_checksums.txt'), `${sum}  ${asset}\n`);
  return dir;
}

function fakeFetch(dir, fetched) {
  return async (url) => {
    fetched.push(url);
    const file = path.join(dir, path.basename(new URL(url).pathname));
    if (!fs.existsSync(file)) return new Response('Not Found', { status: 404 });
    return new Response(fs.readFileSync(file), { status: 200 });
  };
}

for (const [platform, arch, osName, goArch, bin] of [
  ['win32', 'x64', 'windows', 'amd64', 'kubectl-nsclaim.exe'],
  ['win32', 'arm64', 'windows', 'arm64', 'kubectl-nsclaim.exe'],
  ['darwin', 'arm64', 'darwin', 'arm64', 'kubectl-nsclaim'],
  ['darwin', 'x64', 'darwin', 'amd64', 'kubectl-nsclaim'],
  ['linux', 'arm64', 'linux', 'arm64', 'kubectl-nsclaim'],
]) {
  test(`findPlugin downloads the Action's own release for ${platform}/${arch}`, async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-work-'));
    const ghPath = path.join(work, 'github-path');
    const fetched = [];
    const env = { PATH: platform === 'win32' ? 'C:\\Windows\\system32;C:\\tools' : '/nonexistent/bin', GITHUB_PATH: ghPath };
    const got = await findPlugin(work, '', { platform, arch, env, fetch: fakeFetch(release(osName, goArch), fetched) });
    assert.strictEqual(path.basename(got), bin);
    assert.ok(fs.existsSync(got));
    const base = `https://github.com/nsclaim/nsclaim-operator/releases/download/${pinnedVersion()}/`;
    assert.deepStrictEqual(fetched.sort(), [base + `kubectl-nsclaim_${osName}_${goArch}.tar.gz`, base + 'kubectl-nsclaim_checksums.txt'].sort());
    assert.strictEqual(fs.readFileSync(ghPath, 'utf8'), path.dirname(got) + '\n');
    assert.ok(env.PATH.startsWith(path.dirname(got) + (platform === 'win32' ? ';' : ':')));
  });
}

test('findPlugin downloads from the download base when one is set, checksums verified', async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-work-'));
  const dir = release('linux', 'amd64');
  const fetched = [];
  const env = { PATH: '/nonexistent/bin' };
  const got = await findPlugin(work, '', { platform: 'linux', arch: 'x64', env, base: 'http://127.0.0.1:8080/release/', fetch: fakeFetch(dir, fetched) });
  assert.ok(fs.existsSync(got));
  assert.deepStrictEqual(fetched.sort(), ['http://127.0.0.1:8080/release/kubectl-nsclaim_checksums.txt', 'http://127.0.0.1:8080/release/kubectl-nsclaim_linux_amd64.tar.gz']);
  // A mirror serving another archive than its checksums name is refused.
  fs.writeFileSync(path.join(dir, 'kubectl-nsclaim_checksums.txt'), `${'0'.repeat(64)}  kubectl-nsclaim_linux_amd64.tar.gz\n`);
  const work2 = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-work-'));
  await assert.rejects(findPlugin(work2, '', { platform: 'linux', arch: 'x64', env: { PATH: '/nonexistent/bin' }, base: 'http://127.0.0.1:8080/release', fetch: fakeFetch(dir, []) }), /checksum/);
});

test('the pinned version is the release of this checkout (Makefile VERSION)', () => {
  const mk = fs.readFileSync(path.join(ACTION, '..', 'Makefile'), 'utf8').match(/^VERSION \?= (.+)$/m);
  assert.ok(mk, 'Makefile has no VERSION');
  assert.strictEqual(pinnedVersion(), 'v' + mk[1].trim());
});

test('a missing release says which URL and what to do', async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-work-'));
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-empty-'));
  const url = 'https://github.com/nsclaim/nsclaim-operator/releases/download/v9.9.9/kubectl-nsclaim_windows_amd64.tar.gz';
  await assert.rejects(findPlugin(work, 'v9.9.9', { platform: 'win32', arch: 'x64', env: { PATH: '' }, fetch: fakeFetch(empty, []) }),
    (err) => err.message === missingRelease(url, 404, 'v9.9.9') || err.message === missingRelease(url.replace(/kubectl-nsclaim_windows_amd64.tar.gz$/, 'kubectl-nsclaim_checksums.txt'), 404, 'v9.9.9'));
  assert.match(missingRelease(url, 404, 'v9.9.9'), /HTTP 404: kubectl-nsclaim v9\.9\.9 has no such release asset\. Set the Action's version input to a release that exists/);
});

test('a platform without a release is named', async () => {
  await assert.rejects(findPlugin(os.tmpdir(), '', { platform: 'aix', arch: 'ppc64', env: { PATH: '' }, fetch: fakeFetch(os.tmpdir(), []) }),
    /no kubectl-nsclaim release for aix\/ppc64/);
});

// runner is a job's runner files and environment, shaped as platform/arch.
function runner(platform, arch, osName, goArch, inputs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsclaim-runner-'));
  for (const f of ['output', 'env', 'state', 'summary', 'path']) fs.writeFileSync(path.join(dir, f), '');
  fs.mkdirSync(path.join(dir, 'temp'));
  const env = {
    PATH: process.env.PATH, GITHUB_ACTIONS: 'true', RUNNER_TEMP: path.join(dir, 'temp'),
    GITHUB_OUTPUT: path.join(dir, 'output'), GITHUB_ENV: path.join(dir, 'env'), GITHUB_STATE: path.join(dir, 'state'),
    GITHUB_STEP_SUMMARY: path.join(dir, 'summary'), GITHUB_PATH: path.join(dir, 'path'),
    GITHUB_RUN_ID: '42', GITHUB_RUN_ATTEMPT: '1', GITHUB_JOB: 'deploy',
    NSCLAIM_TEST_PLATFORM: platform, NSCLAIM_TEST_ARCH: arch, NSCLAIM_TEST_RELEASE: release(osName, goArch),
    NSCLAIM_TEST_FETCHED: path.join(dir, 'fetched'), FAKE_LOG: path.join(dir, 'plugin.log'),
  };
  for (const [k, v] of Object.entries(inputs)) env[`INPUT_${k.toUpperCase()}`] = v;
  return { dir, env };
}

function step(r, script, extraEnv = {}) {
  return spawnSync(process.execPath, ['-r', path.join(__dirname, 'shim.js'), path.join(ACTION, script)],
    { env: { ...r.env, ...extraEnv }, encoding: 'utf8' });
}

function kv(file) {
  const out = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const i = line.indexOf('=');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

for (const [platform, arch, osName, goArch, bin] of [
  ['win32', 'x64', 'windows', 'amd64', 'kubectl-nsclaim.exe'],
  ['darwin', 'arm64', 'darwin', 'arm64', 'kubectl-nsclaim'],
]) {
  test(`main and post run ${platform}/${arch}-shaped`, () => {
    const r = runner(platform, arch, osName, goArch, { kubeconfig: 'apiVersion: v1\nkind: Config', class: 'ci', ttl: '30m', 'job-index': '2' });
    const main = step(r, 'main.js');
    assert.strictEqual(main.status, 0, main.stdout + main.stderr);
    const state = kv(path.join(r.env.GITHUB_STATE));
    assert.strictEqual(path.basename(state.bin), bin);
    assert.ok(state.bin.startsWith(r.env.RUNNER_TEMP), state.bin);
    const outputs = kv(r.env.GITHUB_OUTPUT);
    assert.strictEqual(outputs.claim, 'gh-42-1-deploy-2');
    assert.strictEqual(outputs.namespace, 'ns-gh-42-1-deploy-2');
    assert.strictEqual(outputs.kubeconfig, path.join(r.env.RUNNER_TEMP, 'nsclaim', 'gh-42-1-deploy-2.kubeconfig'));
    assert.strictEqual(outputs['pipeline-kubeconfig'], path.join(r.env.RUNNER_TEMP, 'nsclaim', 'pipeline.kubeconfig'));
    assert.ok(fs.existsSync(outputs.kubeconfig) && fs.existsSync(outputs['pipeline-kubeconfig']));
    assert.strictEqual(kv(r.env.GITHUB_ENV).KUBECONFIG, outputs.kubeconfig);
    assert.strictEqual(fs.readFileSync(r.env.GITHUB_PATH, 'utf8'), path.dirname(state.bin) + '\n');
    const calls = fs.readFileSync(r.env.FAKE_LOG, 'utf8').trim().split('\n');
    assert.match(calls[0], /^2 --kubeconfig \S+ claim --class ci --ttl 30m --timeout 3m --wait=false -o json$/);
    assert.match(calls[1], /^2 --kubeconfig \S+ claim --if-exists use --timeout 3m -o json --write-kubeconfig \S+ -- gh-42-1-deploy-2$/);

    const stateEnv = {};
    for (const [k, v] of Object.entries(state)) stateEnv[`STATE_${k}`] = v;
    const post = step(r, 'post.js', stateEnv);
    assert.strictEqual(post.status, 0, post.stdout + post.stderr);
    assert.match(fs.readFileSync(r.env.FAKE_LOG, 'utf8').trim().split('\n')[2], /--kubeconfig \S+ release -- gh-42-1-deploy-2$/);
    assert.ok(!fs.existsSync(outputs.kubeconfig) && !fs.existsSync(outputs['pipeline-kubeconfig']), 'post deletes the kubeconfigs');
  });
}

for (const [input, value] of [
  ['name', '--server=http://127.0.0.1:1'], ['class', '-n'], ['ttl', '--kubeconfig=/etc/passwd'], ['timeout', '-o'],
  ['namespace', '--token=x'], ['if-exists', '--as=admin'], ['name', 'ok\n--server=x'],
]) {
  test(`input ${input}=${JSON.stringify(value)} is refused before the plugin runs`, () => {
    const r = runner('linux', 'x64', 'linux', 'amd64', { kubeconfig: 'apiVersion: v1', [input]: value });
    const main = step(r, 'main.js');
    assert.strictEqual(main.status, 1, main.stdout + main.stderr);
    assert.match(main.stdout, new RegExp(`::error title=nsclaim::input ${input} must`));
    assert.ok(!fs.existsSync(r.env.FAKE_LOG), 'the plugin never ran');
    assert.ok(!fs.existsSync(r.env.NSCLAIM_TEST_FETCHED), 'nothing was downloaded');
  });
}

test('keyless without a namespace input is refused with the reason', () => {
  const r = runner('linux', 'x64', 'linux', 'amd64', { audience: 'https://k', server: 'https://k:6443', 'certificate-authority': 'PEM' });
  const main = step(r, 'main.js');
  assert.strictEqual(main.status, 1, main.stdout + main.stderr);
  assert.match(main.stdout, /keyless mode needs the namespace input/);
  assert.ok(!fs.existsSync(r.env.FAKE_LOG), 'the plugin never ran');
});
