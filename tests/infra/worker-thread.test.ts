import { once } from 'node:events';
import { expect } from 'chai';
import { workerThread } from '../../src/infra/worker-thread.js';

/**
 * workerThread runs the module beside its caller: the TypeScript one when the caller is a source file (it
 * registers tsx in the worker), the JavaScript one when the caller is compiled (the image has no tsx).
 */
describe('workerThread', () => {
  const fixtures = new URL('../fixtures/worker-thread/', import.meta.url);

  for (const [caller, from] of [
    ['caller.ts', 'ts'],
    ['caller.js', 'js'],
  ] as const) {
    it(`from a ${caller}, runs the ${from} module beside it with its data`, async () => {
      const worker = workerThread(new URL(caller, fixtures).href, './echo', { text: 'hello' });
      const [message] = (await once(worker, 'message')) as [{ echoed: string; from: string }];
      expect(message).to.deep.equal({ echoed: 'hello', from });
      await worker.terminate();
    });
  }
});
