#!/usr/bin/env node
// Compiles src/ to JavaScript for the production image (`npm run build`), next to the SQL files the code
// reads at run time. `npm start` and the tests need no build: in a checkout, bin/devcloud.js and mocha run
// the TypeScript through tsx (a dev dependency); the image, which has no tsx, runs this output.
import { execFileSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const flag = process.argv.indexOf('--out-dir');
const outDir = path.resolve(root, flag === -1 ? 'dist' : process.argv[flag + 1]);

rmSync(outDir, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [
    path.join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    path.join(root, 'tsconfig.build.json'),
    '--outDir',
    outDir,
  ],
  { stdio: 'inherit' },
);
const src = path.join(root, 'src');
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.sql')) continue;
  const from = path.join(entry.parentPath, entry.name);
  cpSync(from, path.join(outDir, path.relative(src, from)));
}
