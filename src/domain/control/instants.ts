/**
 * Times in control commands and events are UTC ISO 8601 strings of one fixed shape
 * (`YYYY-MM-DDTHH:mm:ss.sssZ`, what the adapters produce), so comparing them as strings compares instants.
 */
export function isBefore(a: string, b: string): boolean {
  return a < b;
}
