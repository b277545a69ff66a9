import type pg from 'pg';
import { arrayLiteral } from './array-literal.js';

/**
 * A statement the service runs per message or per batch, prepared under its name on each connection the
 * first time it runs there. PostgreSQL plans an unnamed statement on every execution, and planning the
 * projectors' multi-table statements took a large share of their time (docs/performance.md, "Planning and
 * array parameters"). A named one is parsed once per connection, and planned once as soon as PostgreSQL
 * finds its generic plan no worse than the custom ones. PostgreSQL re-plans it by itself when a table it
 * names is altered, dropped or swapped, or the search path changes.
 *
 * Only statements of fixed text belong here: every connection keeps each one for as long as it lives.
 */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

const texts = new Map<string, string>();

export function prepared(name: string, text: string): PreparedStatement {
  // pg refuses a name prepared for another text only when both reach the same connection: refuse at once.
  const known = texts.get(name);
  if (known !== undefined && known !== text) {
    throw new Error(`prepared statement ${name} is already defined with another text`);
  }
  texts.set(name, text);
  return { name, text };
}

/**
 * The statement with its values, as pg's query() takes it; arrays go as their text form (array-literal.ts),
 * a Buffer as binary: the batch statements' arrays are written so (binary-array.ts).
 */
export function bind(statement: PreparedStatement, values: readonly unknown[]): pg.QueryConfig {
  return {
    name: statement.name,
    text: statement.text,
    values: values.map((value) => (Array.isArray(value) ? (arrayLiteral(value) ?? value) : value)),
  };
}
