/** A snake_case column name as the camelCase field name our records use (`close_reason` -> `closeReason`). */
type CamelCase<Name extends string> = Name extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : Name;

/** A row of snake_case columns as a record of the same values under camelCase names. */
type CamelCased<Row> = { readonly [Column in keyof Row & string as CamelCase<Column>]: Row[Column] };

// Read models ask for a few dozen distinct columns; each name is converted once per process.
const fieldNames = new Map<string, string>();

function fieldName(column: string): string {
  let name = fieldNames.get(column);
  if (name === undefined) {
    name = column.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
    fieldNames.set(column, name);
  }
  return name;
}

/**
 * A read-model row as the record the rest of the code uses: every column under its camelCase name, the
 * values as pg returned them. The one mapping from tables to records, so that adding a column to a query
 * and its row type is all a read model needs; a field that is not just a renamed column is written beside
 * the call.
 */
export function camelCased<Row extends object>(row: Row): CamelCased<Row> {
  const record: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) record[fieldName(column)] = value;
  return record as CamelCased<Row>;
}
