import { expect } from 'chai';
import type { Decider } from '../../src/domain/decider.js';

/**
 * Given/when/then for deciders: `given(decider, past events).when(command)` then either the events decided
 * (`.then([...])`) or the domain error thrown (`.thenFails(ErrorClass, check?)`).
 */
export function given<C, E, S>(decider: Decider<C, E, S>, history: readonly E[]) {
  const state = history.reduce((s, e) => decider.evolve(s, e), decider.initialState());
  return {
    state,
    when(command: C) {
      const decide = () => decider.decide(command, state);
      return {
        then(expected: readonly E[]) {
          expect(decide()).to.deep.equal(expected);
        },
        thenFails<T extends Error>(kind: new (...args: never[]) => T, check: (error: T) => void = () => {}) {
          let thrown: unknown;
          try {
            decide();
          } catch (error) {
            thrown = error;
          }
          expect(thrown, 'expected the decision to fail').to.be.instanceOf(kind);
          check(thrown as T);
        },
      };
    },
  };
}
