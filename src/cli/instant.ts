import { CliError } from './output.js';

/** An ISO 8601 instant with a zone, normalised so instants compare as strings; `name` names the option. */
export function instant(command: string, name: string, raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2}))?$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms)) throw new CliError(`${command}: ${name} must be an ISO 8601 instant, got ${raw}`);
  return new Date(ms).toISOString();
}
