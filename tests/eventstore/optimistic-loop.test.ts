import { expect } from 'chai';
import { toHttp } from '../../src/api/http-errors.js';
import { decideOnStream } from '../../src/eventstore/handle-command.js';
import {
  StreamContendedError,
  WrongExpectedRevisionError,
  type EventStore,
} from '../../src/eventstore/port.js';

/** A store whose stream always moves between the read and the append: an injected, endless race. */
function alwaysRacedStore(): { store: EventStore; appends: () => number } {
  let appends = 0;
  const store = {
    readStream: () => Promise.resolve([]),
    appendMany: () => {
      appends++;
      return Promise.reject(new WrongExpectedRevisionError('s-1', 'no_stream', 0n));
    },
  } as unknown as EventStore;
  return { store, appends: () => appends };
}

const folding = { initialState: () => 0, evolve: (n: number) => n + 1 };
const decideOne = () => ({ events: [{ type: 'Happened', data: {} }], result: 'done' });

describe('the optimistic decide-and-append loop', () => {
  it('an exhausted retry is StreamContendedError after maxAttempts decisions, answered 503 with Retry-After', async () => {
    const { store, appends } = alwaysRacedStore();
    let thrown: unknown;
    try {
      await decideOnStream(store, 's-1', folding, decideOne, { maxAttempts: 4 });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.be.instanceOf(StreamContendedError);
    expect(appends()).to.equal(4);
    const answer = toHttp(thrown);
    expect(answer.status).to.equal(503);
    expect(answer.body).to.deep.equal({ error: 'contention' });
    expect(answer.headers['Retry-After']).to.equal('1');
  });

  it('a conflict on an alongside stream is thrown as it is, for the caller to read', async () => {
    const store = {
      readStream: () => Promise.resolve([]),
      appendMany: () => Promise.reject(new WrongExpectedRevisionError('other', 'no_stream', 0n)),
    } as unknown as EventStore;
    let thrown: unknown;
    try {
      await decideOnStream(store, 's-1', folding, decideOne);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.be.instanceOf(WrongExpectedRevisionError);
    expect((thrown as WrongExpectedRevisionError).streamName).to.equal('other');
  });
});
