#!/usr/bin/env node
// The `devcloud` command. A checkout installed with `npm ci` has the TypeScript sources and tsx (a dev
// dependency): it runs the sources, so `npm start` needs no build step and never runs stale JavaScript.
// Where either is missing (the production image installs no dev dependencies and ships no sources) it runs
// the compiled JavaScript of `npm run build` in dist/.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const sources = new URL('../src/cli/main.ts', import.meta.url);
const compiled = new URL('../dist/cli/main.js', import.meta.url);

/** Whether a package is installed; resolving loads nothing, so a broken install still fails loudly below. */
function installed(specifier) {
  try {
    import.meta.resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

if (existsSync(sources) && installed('tsx/esm/api')) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(sources.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write(
    'devcloud: nothing to run: install the dev dependencies (`npm ci`) to run the sources, ' +
      'or compile them (`npm run build`) into dist/\n',
  );
  process.exitCode = 1;
}
