import { writeFile } from 'node:fs/promises';
import { renderOpenApi } from './document.js';

// `npm run openapi`: regenerates docs/openapi.json from the code; tests/api/openapi.test.ts fails on drift.
const file = new URL('../../../docs/openapi.json', import.meta.url);
await writeFile(file, renderOpenApi());
process.stdout.write(`wrote ${file.pathname}\n`);
