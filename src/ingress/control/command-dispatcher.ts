import type { Logger } from 'pino';
import type { CommandEvent } from '../../domain/control/command-events.js';
import type { EventStore, RecordedEvent } from '../../eventstore/port.js';
import { followStoreFromHead } from '../follow-store.js';
import type { CommandDelivery } from './command-delivery.js';

const COMMAND_DISPATCH_EVENT_TYPES = [
  'CommandAccepted',
  'CommandCancelled',
  'CommandSuperseded',
  'CommandExpired',
] as const;

const OUTCOMES = {
  CommandCancelled: 'cancelled',
  CommandSuperseded: 'superseded',
  CommandExpired: 'expired',
} as const;

/**
 * Follows the event store for what agents must hear about commands, whoever appended it (an API process,
 * the scheduler, another ingress): an accepted command is sent, an ended one is told as a `cancel`. Each
 * ingress runs one; only the node holding the agent's connection acts (CommandDelivery). What a node misses
 * while its agent is away is sent when the agent reports online again.
 */
export function runCommandDispatcher(options: {
  readonly store: EventStore;
  readonly delivery: CommandDelivery;
  readonly logger: Logger;
  readonly signal: AbortSignal;
}): Promise<void> {
  const logger = options.logger.child({ component: 'command-dispatcher' });
  const dispatch = async (recorded: RecordedEvent) => {
    const event = { type: recorded.type, data: recorded.data } as CommandEvent;
    switch (event.type) {
      case 'CommandAccepted':
        return options.delivery.accepted(event.data.deviceId, event.data.commandId, recorded.position);
      case 'CommandCancelled':
      case 'CommandSuperseded':
      case 'CommandExpired':
        return options.delivery.ended(event.data.deviceId, event.data.commandId, OUTCOMES[event.type]);
    }
  };
  return followStoreFromHead({
    store: options.store,
    eventTypes: COMMAND_DISPATCH_EVENT_TYPES,
    signal: options.signal,
    logger,
    async onBatch(events) {
      // Devices in parallel; one device's events in order (CommandDelivery queues them per device).
      await Promise.all(
        events.map((event) =>
          dispatch(event).catch((error: unknown) =>
            logger.error(
              { err: error, eventType: event.type, position: event.position },
              'command dispatch failed',
            ),
          ),
        ),
      );
    },
  });
}
