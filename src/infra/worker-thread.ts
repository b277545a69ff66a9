import { Worker } from 'node:worker_threads';

/** tsx's loader: a dev dependency, there only where the sources run (bin/devcloud.js), never in the image. */
const SOURCE_LOADER = 'tsx/esm/api';

/**
 * A worker thread running the module `name` (no extension) beside the caller's module `callerUrl`. Run
 * from the sources, the module is TypeScript and the worker registers tsx's loader first, as
 * bin/devcloud.js does (a worker does not inherit the loader); run compiled, it is the JavaScript beside.
 */
export function workerThread(callerUrl: string, name: string, workerData: unknown): Worker {
  const extension = callerUrl.endsWith('.ts') ? '.ts' : '.js';
  const url = new URL(`${name}${extension}`, callerUrl);
  if (extension === '.js') return new Worker(url, { workerData });
  const loader = JSON.stringify(SOURCE_LOADER);
  const bootstrap = `import(${loader}).then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); })`;
  return new Worker(bootstrap, { eval: true, workerData });
}
