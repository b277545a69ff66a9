import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

const SiteCreated = defineEvent(
  'SiteCreated',
  z.object({
    siteId: z.string(),
    projectId: z.string(),
    name: z.string(),
    /** An IANA zone name: daily buckets and the `*_today` counters follow its midnight. */
    timezone: z.string(),
  }),
);

export const siteEvents = [SiteCreated] as const;

export type SiteEvent = DomainEvent<typeof SiteCreated>;
