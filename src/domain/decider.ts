/**
 * A decider is an aggregate's behaviour as three pure functions: where it starts, what a command decides
 * given the current state (events to record, or a DomainError thrown), and how an event moves the state.
 */
export interface Decider<Command, Event, State> {
  initialState(): State;
  decide(command: Command, state: State): readonly Event[];
  evolve(state: State, event: Event): State;
}

export function fold<Event, State>(
  decider: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>,
  events: readonly Event[],
): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState());
}
