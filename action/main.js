// nsclaim's GitHub Action, main step: find (or download the Action's own release of) kubectl-nsclaim,
// write the pipeline identity's kubeconfig (token mode: the kubeconfig input; keyless: the server, its
// CA and an exec credential plugin that fetches the job's OIDC ID token at every use), create the claim
// (its name is saved at once, so the post step releases it whatever happens next), wait for it with a
// progress line per change, and output the namespace, the path of its kubeconfig and the path of the
// pipeline's own kubeconfig. A refusal fails the step with the plugin's message and exit code. Every
// input reaches the plugin as one argument after the flags it belongs to, positionals after "--";
// an input that starts with "-" is refused.
'use strict';
const fs = require('fs');
const path = require('path');
const lib = require('./lib');
const { findPlugin } = require('./plugin');

// Inputs passed to the plugin: none may start with "-".
const PLUGIN_INPUTS = ['name', 'class', 'ttl', 'namespace', 'audience', 'timeout', 'if-exists', 'job-index', 'version'];

function pipelineKubeconfig(dir) {
  const file = path.join(dir, 'pipeline.kubeconfig');
  const kubeconfig = lib.input('kubeconfig');
  const audience = lib.input('audience');
  if (kubeconfig) {
    fs.writeFileSync(file, kubeconfig + '\n', { mode: 0o600 });
    return file;
  }
  if (!audience) throw new Error('set the kubeconfig input (token mode) or audience, server and certificate-authority (keyless)');
  const server = lib.input('server');
  const ca = lib.input('certificate-authority');
  if (!server || !ca) throw new Error('keyless mode needs the server and certificate-authority inputs');
  if (!lib.input('namespace')) throw new Error('keyless mode needs the namespace input: the requester namespace where the job\'s identity may claim (a keyless kubeconfig names none, and "default" is not one)');
  const doc = {
    apiVersion: 'v1', kind: 'Config', 'current-context': 'pipeline',
    clusters: [{ name: 'cluster', cluster: { server, 'certificate-authority-data': Buffer.from(ca + '\n').toString('base64') } }],
    users: [{ name: 'pipeline', user: { exec: {
      apiVersion: 'client.authentication.k8s.io/v1', command: 'kubectl-nsclaim',
      args: ['token', '--github-audience', audience], interactiveMode: 'Never' } } }],
    contexts: [{ name: 'pipeline', context: { cluster: 'cluster', user: 'pipeline' } }],
  };
  fs.writeFileSync(file, JSON.stringify(doc, null, 2), { mode: 0o600 });
  return file;
}

async function main() {
  lib.checkInputs(PLUGIN_INPUTS);
  const dir = lib.workDir();
  const bin = await findPlugin(dir, lib.input('version'), { base: lib.input('download-base') });
  const kubeconfig = pipelineKubeconfig(dir);
  const common = ['--kubeconfig', kubeconfig];
  if (lib.input('namespace')) common.push('--namespace', lib.input('namespace'));
  // Matrix legs share run, attempt and job: the job index tells their claims apart.
  const env = lib.input('job-index') ? { NSCLAIM_JOB_INSTANCE: lib.input('job-index') } : {};
  lib.saveState('bin', bin);
  lib.saveState('kubeconfig', kubeconfig);
  lib.saveState('namespace', lib.input('namespace'));
  lib.saveState('release', lib.input('release') || 'true');
  lib.setOutput('pipeline-kubeconfig', kubeconfig);

  const flags = [];
  if (lib.input('class')) flags.push('--class', lib.input('class'));
  if (lib.input('ttl')) flags.push('--ttl', lib.input('ttl'));
  if (lib.input('if-exists')) flags.push('--if-exists', lib.input('if-exists'));
  flags.push('--timeout', lib.input('timeout') || '3m');
  const positional = lib.input('name') ? ['--', lib.input('name')] : [];

  // 1. Create (or reuse the job's own) claim without waiting, and save its name for the post step.
  let res = await lib.plugin(bin, [...common, 'claim', ...flags, '--wait=false', '-o', 'json', ...positional], env);
  if (res.code !== 0) return fail(res, '');
  const name = JSON.parse(res.stdout).metadata.name;
  lib.saveState('claim', name);
  lib.setOutput('claim', name);

  // 2. Wait for it (the claim exists now and is this job's: --if-exists=use) and write its kubeconfig.
  const nsKubeconfig = path.join(dir, `${name}.kubeconfig`);
  const waitArgs = ['claim', '--if-exists', 'use', '--timeout', lib.input('timeout') || '3m', '-o', 'json', '--write-kubeconfig', nsKubeconfig];
  if (lib.input('audience')) waitArgs.push('--exec-github-audience', lib.input('audience'));
  res = await lib.plugin(bin, [...common, ...waitArgs, '--', name], env);
  if (res.code !== 0) return fail(res, name);
  const claim = JSON.parse(res.stdout);
  const ns = claim.status.namespace;
  lib.setOutput('namespace', ns);
  lib.setOutput('kubeconfig', nsKubeconfig);
  lib.saveState('nsKubeconfig', nsKubeconfig);
  if ((lib.input('export-kubeconfig') || 'true') === 'true') lib.exportVariable('KUBECONFIG', nsKubeconfig);
  lib.summary([
    '### nsclaim: namespace ready', '',
    '| claim | namespace | class | expires | credentials |', '|---|---|---|---|---|',
    `| \`${name}\` | \`${ns}\` | ${claim.status.className || ''} | ${claim.status.expiresAt || ''} | ${claim.status.boundUser ? 'keyless (' + claim.status.boundUser + ')' : 'token'} |`,
  ].join('\n'));
  return 0;
}

// fail reports a failed plugin run: its message as an error annotation and in the step summary, and
// the plugin's exit code as the step's.
function fail(res, name) {
  const msg = res.stderr.split('\n').filter((l) => l && !/^namespaceclaim \S+( created|: | exists| is being deleted)/.test(l)).join('\n') || `kubectl-nsclaim exited with ${res.code}`;
  lib.error(msg);
  lib.summary(['### nsclaim: no namespace' + (name ? ` for claim \`${name}\`` : ''), '', '```', msg, '```'].join('\n'));
  return res.code || 1;
}

main().then((code) => { process.exitCode = code; }, (err) => { lib.error(err.message); process.exitCode = 1; });
