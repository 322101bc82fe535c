// Loaded with node -r before main.js or post.js: makes the runner look like NSCLAIM_TEST_PLATFORM and
// NSCLAIM_TEST_ARCH, and serves release downloads from the files of NSCLAIM_TEST_RELEASE (404 for
// any other), recording each URL asked for in NSCLAIM_TEST_FETCHED. Tests only.
'use strict';
const fs = require('fs');
const path = require('path');

if (process.env.NSCLAIM_TEST_PLATFORM) Object.defineProperty(process, 'platform', { value: process.env.NSCLAIM_TEST_PLATFORM });
if (process.env.NSCLAIM_TEST_ARCH) Object.defineProperty(process, 'arch', { value: process.env.NSCLAIM_TEST_ARCH });
globalThis.fetch = async (url) => {
  if (process.env.NSCLAIM_TEST_FETCHED) fs.appendFileSync(process.env.NSCLAIM_TEST_FETCHED, url + '\n');
  const file = path.join(process.env.NSCLAIM_TEST_RELEASE || '/nonexistent', path.basename(new URL(url).pathname));
  if (!fs.existsSync(file)) return new Response('Not Found', { status: 404 });
  return new Response(fs.readFileSync(file), { status: 200 });
};
