import type { Decider } from '../decider.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import type { SiteEvent } from './events.js';

const SITE_NAME_MAX_LENGTH = 200;

export interface CreateSite {
  readonly type: 'CreateSite';
  readonly siteId: string;
  readonly projectId: string;
  /** Read by the caller from the project's stream; projects are never deleted, so it cannot go stale. */
  readonly projectExists: boolean;
  readonly name: string;
  readonly timezone: string;
}

export type SiteCommand = CreateSite;

export interface SiteState {
  readonly created: boolean;
}

/**
 * Which timezone names exist is a fact about the platform's tz database, not about sites: the adapter
 * supplies it (a Set works), so the rule "a site's timezone must be known" stays here and pure.
 */
export interface TimezoneDirectory {
  has(timezone: string): boolean;
}

export const siteStreamName = (siteId: string) => `site-${siteId}`;

export function siteDecider(timezones: TimezoneDirectory): Decider<SiteCommand, SiteEvent, SiteState> {
  return {
    initialState: () => ({ created: false }),
    decide(command, state) {
      if (state.created) throw new Conflict('site_exists', { siteId: command.siteId });
      if (!command.projectExists) throw new NotFound('project');
      const name = command.name.trim();
      if (name.length === 0) throw new InvalidInput('empty', 'name');
      if (name.length > SITE_NAME_MAX_LENGTH) throw new InvalidInput('too_long', 'name');
      if (!timezones.has(command.timezone)) throw new InvalidInput('unknown_timezone', 'timezone');
      return [
        {
          type: 'SiteCreated',
          data: {
            siteId: command.siteId,
            projectId: command.projectId,
            name,
            timezone: command.timezone,
          },
        },
      ];
    },
    evolve(state, event) {
      return event.type === 'SiteCreated' ? { created: true } : state;
    },
  };
}
