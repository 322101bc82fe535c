// nsclaim's GitHub Action, post step (runs even when the job failed or was cancelled): release the claim
// that main saved, and delete the kubeconfigs it wrote. A claim that is gone already is not an error.
'use strict';
const fs = require('fs');
const lib = require('./lib');

async function main() {
  const name = lib.getState('claim');
  const bin = lib.getState('bin');
  const kubeconfig = lib.getState('kubeconfig');
  let code = 0;
  if (name && bin && lib.getState('release') !== 'false') {
    const args = ['--kubeconfig', kubeconfig];
    if (lib.getState('namespace')) args.push('--namespace', lib.getState('namespace'));
    const res = await lib.plugin(bin, [...args, 'release', '--', name]);
    if (res.code === 0) {
      lib.summary(`nsclaim: released claim \`${name}\`; its namespace is being deleted.`);
    } else {
      lib.error(`releasing claim ${name} failed (its TTL still ends it): ${res.stderr.trim()}`);
      code = res.code;
    }
  }
  for (const f of [lib.getState('nsKubeconfig'), kubeconfig]) {
    if (f) fs.rmSync(f, { force: true });
  }
  return code;
}

main().then((code) => { process.exitCode = code; }, (err) => { lib.error(err.message); process.exitCode = 1; });
