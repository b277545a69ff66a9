import { z } from 'zod';

/**
 * The one check for strings that come from outside (MQTT payloads, HTTP paths and bodies) before they are
 * stored. PostgreSQL text and jsonb cannot hold U+0000, and a lone UTF-16 surrogate (broken unicode that
 * JSON can still carry as `\ud800`) has no UTF-8 form: either makes the database refuse the whole write
 * with a data error. Such strings are refused here, as invalid input, before they get that far.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const NUL = '\u0000';

export const isStorableText = (text: string): boolean => !text.includes(NUL) && !LONE_SURROGATE.test(text);

/** Without the NUL padding of fixed-size string attributes (Zigbee); the rest is kept exactly. */
export function withoutTrailingNul(text: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === NUL) end -= 1;
  return text.slice(0, end);
}

/** A string the database can store, else the zod issue `invalid_text`. */
export const storableText = () => z.string().refine(isStorableText, { error: 'invalid_text' });

/**
 * Public ids (devices, hubs, sites, sessions, commands) in paths and topics: URL- and topic-safe, short,
 * nothing to escape. A path id outside it cannot name anything, so it is not found.
 */
export const PUBLIC_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const isPublicId = (value: string): boolean => PUBLIC_ID_PATTERN.test(value);
