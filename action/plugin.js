// findPlugin returns the path of kubectl-nsclaim: the one on the PATH, else the release asset of the
// version this Action pins (action/plugin-version, the Action's own release; the version input
// overrides it) for this runner's OS and architecture (Linux, macOS, Windows; amd64, arm64), checked
// against the release's checksums and put on the job's PATH (GITHUB_PATH), where the exec credential
// plugin of a keyless kubeconfig finds it. A release that is not there fails with the URL and what to
// do. The runner's platform, fetch and environment can be given (tests run it Windows- and
// macOS-shaped on any machine).
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { spawnSync } = require('child_process');

const REPO = 'nsclaim/nsclaim-operator';
const NAME = 'kubectl-nsclaim';

// pinnedVersion is the plugin release this Action ships with (its own).
function pinnedVersion() {
  return fs.readFileSync(path.join(__dirname, 'plugin-version'), 'utf8').trim();
}

// binName is the plugin's file name on the platform.
const binName = (platform) => (platform === 'win32' ? `${NAME}.exe` : NAME);

// onPath finds the plugin on the PATH, with the platform's path rules.
function onPath(platform, env) {
  const p = platform === 'win32' ? path.win32 : path.posix;
  for (const dir of (env.PATH || env.Path || '').split(p.delimiter)) {
    if (!dir) continue;
    const file = p.join(dir, binName(platform));
    try {
      fs.accessSync(file, platform === 'win32' ? fs.constants.F_OK : fs.constants.X_OK);
      return file;
    } catch (_) { /* not here */ }
  }
  return '';
}

// missingRelease is the message of a download that is not there.
function missingRelease(url, status, version) {
  return `downloading ${url}: HTTP ${status}: kubectl-nsclaim ${version} has no such release asset. ` +
    `Set the Action's version input to a release that exists (https://github.com/${REPO}/releases), ` +
    `or put ${NAME} on the PATH before this step (then nothing is downloaded).`;
}

async function download(fetchFn, url, version) {
  let res;
  try {
    res = await fetchFn(url, { redirect: 'follow' });
  } catch (err) {
    throw new Error(`downloading ${url}: ${err.message}: check the runner's network access to github.com, or put ${NAME} on the PATH before this step`);
  }
  if (res.status === 404) throw new Error(missingRelease(url, res.status, version));
  if (!res.ok) throw new Error(`downloading ${url}: HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

// releaseAsset names the platform's archive, or throws for a platform without one.
function releaseAsset(platform, arch) {
  const os = { linux: 'linux', darwin: 'darwin', win32: 'windows' }[platform];
  const a = { x64: 'amd64', arm64: 'arm64' }[arch];
  if (!os || !a) throw new Error(`no ${NAME} release for ${platform}/${arch}: the releases cover linux, darwin and windows on amd64 and arm64`);
  return `${NAME}_${os}_${a}.tar.gz`;
}

async function findPlugin(dir, version, opts = {}) {
  const platform = opts.platform || process.platform;
  const arch = opts.arch || process.arch;
  const env = opts.env || process.env;
  const fetchFn = opts.fetch || fetch;
  const found = onPath(platform, env);
  if (found) return found;
  const v = version || pinnedVersion();
  const asset = releaseAsset(platform, arch);
  // opts.base (the download-base input) replaces the GitHub release's download URL: a mirror, or the
  // release directory served elsewhere (make test-release-rehearsal serves it on loopback).
  const base = opts.base ? opts.base.replace(/\/+$/, '') : v === 'latest'
    ? `https://github.com/${REPO}/releases/latest/download`
    : `https://github.com/${REPO}/releases/download/${v}`;
  const [archive, sums] = await Promise.all([download(fetchFn, `${base}/${asset}`, v), download(fetchFn, `${base}/${NAME}_checksums.txt`, v)]);
  const want = sums.toString().split('\n').map((l) => l.trim().split(/\s+/)).find((f) => f[1] === asset);
  const got = crypto.createHash('sha256').update(archive).digest('hex');
  if (!want || want[0] !== got) throw new Error(`${asset}: checksum ${got} is not the release's`);
  const binDir = path.join(dir, 'bin');
  fs.mkdirSync(binDir, { recursive: true });
  fs.writeFileSync(path.join(dir, asset), archive);
  const tar = spawnSync('tar', ['-xzf', asset, '-C', 'bin'], { cwd: dir, stdio: 'inherit' });
  if (tar.status !== 0) throw new Error(`unpacking ${asset} failed`);
  const bin = path.join(binDir, binName(platform));
  if (!fs.existsSync(bin)) throw new Error(`${asset} holds no ${binName(platform)}`);
  if (env.GITHUB_PATH) fs.appendFileSync(env.GITHUB_PATH, binDir + '\n');
  env.PATH = binDir + (platform === 'win32' ? ';' : ':') + (env.PATH || '');
  return bin;
}

module.exports = { findPlugin, pinnedVersion, missingRelease, releaseAsset, binName };
