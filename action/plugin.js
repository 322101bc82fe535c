// findPlugin returns the path of kubectl-nsclaim: the one on the PATH, else the release asset of
// version (or the latest release) for this runner, checked against the release's checksums and put on
// the job's PATH (GITHUB_PATH), where the exec credential plugin of a keyless kubeconfig finds it.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { spawnSync } = require('child_process');

const REPO = 'nsclaim/nsclaim-operator';
const NAME = 'kubectl-nsclaim';

function onPath() {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir, NAME);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch (_) { /* not here */ }
  }
  return '';
}

async function download(url) {
  const res = await fetch(url, { redirect: 'follow' });
  if (!res.ok) throw new Error(`downloading ${url}: HTTP ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

async function findPlugin(dir, version) {
  const found = onPath();
  if (found) return found;
  const os = { linux: 'linux', darwin: 'darwin', win32: 'windows' }[process.platform];
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch];
  if (!os || !arch) throw new Error(`no ${NAME} release for ${process.platform}/${process.arch}`);
  const base = !version || version === 'latest'
    ? `https://github.com/${REPO}/releases/latest/download`
    : `https://github.com/${REPO}/releases/download/${version}`;
  const asset = `${NAME}_${os}_${arch}.tar.gz`;
  const [archive, sums] = await Promise.all([download(`${base}/${asset}`), download(`${base}/${NAME}_checksums.txt`)]);
  const want = sums.toString().split('\n').map((l) => l.trim().split(/\s+/)).find((f) => f[1] === asset);
  const got = crypto.createHash('sha256').update(archive).digest('hex');
  if (!want || want[0] !== got) throw new Error(`${asset}: checksum ${got} is not the release's`);
  const binDir = path.join(dir, 'bin');
  fs.mkdirSync(binDir, { recursive: true });
  fs.writeFileSync(path.join(dir, asset), archive);
  const tar = spawnSync('tar', ['-xzf', path.join(dir, asset), '-C', binDir], { stdio: 'inherit' });
  if (tar.status !== 0) throw new Error(`unpacking ${asset} failed`);
  if (process.env.GITHUB_PATH) fs.appendFileSync(process.env.GITHUB_PATH, binDir + '\n');
  process.env.PATH = binDir + path.delimiter + process.env.PATH;
  return path.join(binDir, NAME);
}

module.exports = { findPlugin };
