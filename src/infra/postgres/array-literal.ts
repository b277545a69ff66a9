/**
 * PostgreSQL's text form of a one-dimensional array of strings, numbers or booleans (null and undefined are
 * NULL), or undefined for anything else, which pg then serialises itself. pg builds the same text, but puts
 * every element through a type dispatch and two regular-expression replacements, and the batch statements
 * send tens of thousands of elements a second (docs/performance.md, "Planning and array parameters"). Here
 * an element is only rewritten when it holds a quote or a backslash.
 */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  let text = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) text += ',';
    const value = values[i];
    if (value === null || value === undefined) text += 'NULL';
    else if (typeof value === 'string') text += quoted(value);
    else if (typeof value === 'number' || typeof value === 'boolean') text += String(value);
    else return undefined;
  }
  return text + '}';
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;

function quoted(element: string): string {
  return '"' + (NEEDS_ESCAPE.test(element) ? element.replace(ESCAPED, '\\$&') : element) + '"';
}
