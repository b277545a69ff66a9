import { readFileSync } from 'node:fs';
import { expect } from 'chai';

/** The services of a compose file as text blocks (two-space indented keys under `services:`). */
function services(file: string): Map<string, string> {
  const text = readFileSync(file, 'utf8');
  const body = text.slice(text.indexOf('\nservices:\n'), text.indexOf('\nvolumes:\n'));
  const blocks = new Map<string, string>();
  let name: string | undefined;
  for (const line of body.split('\n')) {
    const header = /^ {2}([a-z0-9_-]+):\s*([&*][a-z]+)?\s*$/.exec(line);
    if (header) name = header[1]!;
    else if (name) blocks.set(name, (blocks.get(name) ?? '') + line + '\n');
  }
  return blocks;
}

for (const file of ['docker-compose.yml', 'docker-compose.scale.yml']) {
  describe(file, () => {
    it('publishes PostgreSQL and KurrentDB on localhost only (or not at all)', () => {
      for (const name of ['postgres', 'kurrentdb']) {
        const block = services(file).get(name);
        expect(block, name).to.be.a('string');
        const published = [...block!.matchAll(/['"]?([\d.:]*\d+:\d+)['"]?/g)].map((m) => m[1]!);
        for (const mapping of published.filter((p) => /^(\d+|[\d.]+:\d+):\d+$/.test(p))) {
          expect(mapping, `${name} publishes ${mapping}`).to.match(/^127\.0\.0\.1:/);
        }
      }
    });

    it('holds no fixed password: secrets come from the environment', () => {
      const text = readFileSync(file, 'utf8');
      for (const [, key, , value] of text.matchAll(/^\s*([A-Z_]*(PASSWORD|SECRET)[A-Z_]*):\s*(.+)$/gm)) {
        expect(value, key).to.match(/^\$\{[A-Z_]+(:\?[^}]*)?\}$/);
      }
      for (const [, url] of text.matchAll(/DATABASE_URL:\s*(.+)$/gm)) {
        expect(url, 'DATABASE_URL').to.contain('${POSTGRES_PASSWORD');
      }
    });
  });
}

describe('docker-compose.scale.yml', () => {
  it('runs 2 ingress, 2 api, 2 projector and 1 scheduler process behind HAProxy, and publishes only HAProxy', () => {
    const all = services('docker-compose.scale.yml');
    for (const name of [
      'ingress-1',
      'ingress-2',
      'api-1',
      'api-2',
      'projector-1',
      'projector-2',
      'scheduler',
    ])
      expect(all.has(name), name).to.equal(true);
    const publishing = [...all].filter(([, block]) => /\bports:/.test(block)).map(([name]) => name);
    expect(publishing).to.deep.equal(['haproxy']);
  });

  it('passes MQTT through HAProxy at layer 4, so TLS and the client certificate end in the broker', () => {
    const config = readFileSync('deploy/haproxy.cfg', 'utf8');
    const mqtt = config.slice(config.indexOf('frontend mqtt'), config.indexOf('frontend api'));
    expect(mqtt).to.match(/^\s+mode tcp$/m);
    expect(mqtt).to.match(/^\s+bind :8883$/m);
    expect(mqtt, 'no TLS termination').to.not.match(/\bssl\b|\bcrt\b/);
  });
});
