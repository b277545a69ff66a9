import { readFileSync } from 'node:fs';

/** What the first cell of each row of a table in README.md's section `title` names in backticks. */
export function readmeTableNames(title: string): string[] {
  const section = readFileSync('README.md', 'utf8')
    .split(/^## /m)
    .find((s) => s.startsWith(`${title}\n`));
  if (section === undefined) throw new Error(`README.md has no "## ${title}" section`);
  return section
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}
