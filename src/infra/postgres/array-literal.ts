/**
 * PostgreSQL's text form of a one-dimensional array of strings, finite numbers or booleans (null and
 * undefined are NULL), or undefined for anything else, which pg then serialises itself. pg builds the same
 * text element by element, through a type dispatch, two regular-expression replacements and a string
 * concatenation each, and the batch statements send tens of thousands of elements a second
 * (docs/performance.md, "Planning and array parameters").
 *
 * Here the array is written by JSON.stringify, natively and in one piece: a JSON array of such values is
 * PostgreSQL's array text but for its brackets. JSON and PostgreSQL escape `"` and `\` alike; JSON's other
 * escapes (control characters as \n, \u0001, …) mean something else to PostgreSQL, so an array whose text
 * holds one is written element by element instead.
 */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  let strings = false;
  for (const value of values) {
    const type = typeof value;
    if (type === 'string') strings = true;
    else if (value === null || value === undefined || type === 'boolean') continue;
    else if (type !== 'number' || !Number.isFinite(value)) return undefined;
  }
  const json = JSON.stringify(values);
  // Only a string can hold a character JSON escapes otherwise.
  if (!strings || !JSON_ONLY_ESCAPE.test(json)) return '{' + json.slice(1, -1) + '}';
  return '{' + values.map(element).join(',') + '}';
}

// A backslash that JSON wrote for something other than `"` or `\` (may also match after an escaped `\`,
// which only costs the slower path).
const JSON_ONLY_ESCAPE = /\\[bfnrtu]/;
const QUOTE_OR_BACKSLASH = /["\\]/g;

function element(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value !== 'string') return String(value);
  return '"' + value.replace(QUOTE_OR_BACKSLASH, '\\$&') + '"';
}
