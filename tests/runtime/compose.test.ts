import { readFileSync } from 'node:fs';
import { expect } from 'chai';

/** The services of docker-compose.yml as text blocks (two-space indented keys under `services:`). */
function services(): Map<string, string> {
  const text = readFileSync('docker-compose.yml', 'utf8');
  const body = text.slice(text.indexOf('\nservices:\n'), text.indexOf('\nvolumes:\n'));
  const blocks = new Map<string, string>();
  let name: string | undefined;
  for (const line of body.split('\n')) {
    const header = /^ {2}([a-z0-9_-]+):\s*$/.exec(line);
    if (header) name = header[1]!;
    else if (name) blocks.set(name, (blocks.get(name) ?? '') + line + '\n');
  }
  return blocks;
}

describe('docker-compose.yml', () => {
  it('publishes PostgreSQL and KurrentDB on localhost only (or not at all)', () => {
    for (const name of ['postgres', 'kurrentdb']) {
      const block = services().get(name);
      expect(block, name).to.be.a('string');
      const published = [...block!.matchAll(/['"]?([\d.:]*\d+:\d+)['"]?/g)].map((m) => m[1]!);
      for (const mapping of published.filter((p) => /^(\d+|[\d.]+:\d+):\d+$/.test(p))) {
        expect(mapping, `${name} publishes ${mapping}`).to.match(/^127\.0\.0\.1:/);
      }
    }
  });

  it('holds no fixed password: secrets come from the environment', () => {
    const text = readFileSync('docker-compose.yml', 'utf8');
    for (const [, key, , value] of text.matchAll(/^\s*([A-Z_]*(PASSWORD|SECRET)[A-Z_]*):\s*(.+)$/gm)) {
      expect(value, key).to.match(/^\$\{[A-Z_]+(:\?[^}]*)?\}$/);
    }
    for (const [, url] of text.matchAll(/DATABASE_URL:\s*(.+)$/gm)) {
      expect(url, 'DATABASE_URL').to.contain('${POSTGRES_PASSWORD');
    }
  });
});
