import { CONTROL_CHARACTER } from '../domain/text.js';

const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER.source, 'gu');

/**
 * A cell as a terminal can show it without being steered by it: each control character (domain/text.ts)
 * written out as `\xNN` (C0, DEL, C1) or `\u{NNNN}` (bidi controls), so text an agent or operator wrote,
 * even text stored before such characters were refused, prints as one cell of one row.
 */
function escapeForTerminal(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (c) => {
    const code = c.codePointAt(0)!;
    const hex = code.toString(16).padStart(2, '0');
    return code <= 0xff ? `\\x${hex}` : `\\u{${hex}}`;
  });
}

/** A plain-text table for a terminal: a header row, then one line per row, columns padded to fit. */
export function formatTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  const shown = rows.map((r) => r.map(escapeForTerminal));
  const widths = columns.map((c, i) => Math.max(c.length, ...shown.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...shown.map(line)].join('\n');
}
