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

/**
 * Characters that change how text shows rather than being shown: C0 controls (newline and tab included),
 * DEL, C1 controls (U+0080 to U+009F, among them the one-character CSI) and the bidirectional embeddings,
 * overrides and isolates (U+202A to U+202E, U+2066 to U+2069). On a terminal they move the cursor, erase
 * lines or reorder what follows, so text holding them could forge or hide rows of an operator's table.
 */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
export const CONTROL_CHARACTER = /[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/u;

/**
 * The one check for text agents and operators supply that people will read (an ack's detail, a device's
 * reported names, an operator's reason): one line, shown exactly as written.
 */
export const isDisplaySafeText = (text: string): boolean => !CONTROL_CHARACTER.test(text);

/** Text that is storable and safe to show, else the zod issue `invalid_text`. */
export const displaySafeText = () => storableText().refine(isDisplaySafeText, { error: 'invalid_text' });
