import { releaseTestServer } from './database.js';
import { creationStacks, lingeringResources, recordCreationStacks } from './open-handles.js';
import { conformanceReport } from './openapi-conformance.js';
import { takeServiceErrors } from './service-log.js';

if (process.env.TEST_HANDLE_STACKS === '1') recordCreationStacks();

// A failure under load is often explained only by what the server logged at that moment.
afterEach(function () {
  const errors = takeServiceErrors();
  if (this.currentTest?.state !== 'failed' || errors.length === 0) return;
  process.stderr.write(
    `errors the services logged during "${this.currentTest.fullTitle()}":\n${errors.join('')}`,
  );
});

after(async function () {
  this.timeout(60_000);
  await releaseTestServer();
});

// Whatever each test checked, every answer the API gave must be one the OpenAPI document describes.
after(function () {
  const { checked, unmatched, mismatches } = conformanceReport();
  if (checked + unmatched === 0) return;
  process.stderr.write(
    `OpenAPI conformance: ${checked} answers checked against the document, ${mismatches.length} mismatches, ` +
      `${unmatched} to requests for no documented operation\n`,
  );
  if (mismatches.length > 0) {
    throw new Error(`answers the OpenAPI document does not describe:\n${mismatches.join('\n')}`);
  }
});

// Last of all: nothing the suite started may outlive it. Mocha no longer exits by force, so a leak would
// hang the run; it fails it instead, naming what is left, and then ends the process.
after(async function () {
  await null;
  // Mocha's own timeout timer for this hook is not the suite's: it must not count, nor hold the process.
  (this.runnable() as unknown as { timer?: NodeJS.Timeout }).timer?.unref();
  const open = await lingeringResources(2000);
  if (open.length === 0) return;
  setTimeout(() => process.exit(1), 1000).unref();
  const stacks = creationStacks(open);
  throw new Error(
    `the suite left ${open.length} handle(s) or request(s) open: ${open.join(', ')}\n` +
      (stacks.length
        ? `created at:\n${stacks.join('\n\n')}`
        : 'run again with TEST_HANDLE_STACKS=1 to see where each was created'),
  );
});
