import { randomBytes } from 'node:crypto';

/**
 * Every id we hand out: a kind prefix (so an id in a log or a ticket says what it names) and random bits in
 * base64url (128 by default): unguessable, URL-safe, never derived from a database id or a radio address.
 */
export const opaqueId = (prefix: string, bytes = 16) =>
  `${prefix}${randomBytes(bytes).toString('base64url')}`;
