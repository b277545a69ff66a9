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
    it('publishes PostgreSQL, KurrentDB, Prometheus and Grafana on localhost only (or not at all)', () => {
      for (const name of ['postgres', 'kurrentdb', 'prometheus', 'grafana']) {
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
      const secrets = [...text.matchAll(/^\s*([A-Z_]*(PASSWORD|SECRET|TOKEN)[A-Z_]*):[ \t]*(.*)$/gm)];
      expect(secrets.map(([, key]) => key)).to.include('POSTGRES_PASSWORD');
      for (const [, key, , value] of secrets) {
        // Required (`:?`), empty unless given (`:-` with nothing after it), or passed through as it is (no value).
        expect(value, key).to.match(/^(\$\{[A-Z_]+(:\?[^}]*|:-)?\})?$/);
      }
      for (const [, url] of text.matchAll(/DATABASE_URL:\s*(.+)$/gm)) {
        expect(url, 'DATABASE_URL').to.contain('${POSTGRES_PASSWORD');
      }
    });

    it('runs Prometheus and Grafana only with the monitoring profile: a plain `up` starts what it did', () => {
      const all = services(file);
      for (const name of ['prometheus', 'grafana']) {
        expect(all.get(name), name).to.match(/^ {4}profiles: \[monitoring\]$/m);
      }
      const profiled = [...all].filter(([, block]) => /^ {4}profiles:/m.test(block)).map(([name]) => name);
      expect(profiled, 'no service of the plain stack moved into a profile').to.deep.equal([
        'prometheus',
        'grafana',
      ]);
    });

    it('gives Grafana its admin password and Prometheus the metrics token from the environment only', () => {
      const all = services(file);
      const grafana = all.get('grafana')!;
      expect(grafana).to.match(/^ {6}GF_SECURITY_ADMIN_PASSWORD: \$\{GRAFANA_ADMIN_PASSWORD:-\}$/m);
      expect(grafana, 'no anonymous viewers').to.match(/GF_AUTH_ANONYMOUS_ENABLED: 'false'/);
      expect(grafana, 'refuses to start without a password').to.match(
        /test -n "\$\$GF_SECURITY_ADMIN_PASSWORD"/,
      );
      const prometheus = all.get('prometheus')!;
      expect(prometheus).to.match(/^ {6}METRICS_TOKEN:$/m);
      expect(prometheus, 'refuses to start without the token').to.match(/test -n "\$\$METRICS_TOKEN"/);
      expect(prometheus).to.include('> /tmp/metrics-token');
    });
  });
}

describe('deploy/: Prometheus and Grafana configuration', () => {
  it('Prometheus scrapes /metrics with the bearer token from a file, and the file holds no credential', () => {
    for (const file of ['deploy/prometheus/prometheus.yml', 'deploy/prometheus/prometheus.scale.yml']) {
      const config = readFileSync(file, 'utf8');
      expect(config, file).to.match(/^ {4}metrics_path: \/metrics$/m);
      expect(config, file).to.match(/^ {6}type: Bearer\n {6}credentials_file: \/tmp\/metrics-token$/m);
      expect(config, file).to.not.match(/^\s*(credentials|password|bearer_token):/m);
    }
  });

  it('Grafana provisions the dashboard from where compose mounts it, over the datasource it names', () => {
    const provider = readFileSync('deploy/grafana/provisioning/dashboards/device-cloud.yml', 'utf8');
    const path = /^ {6}path: (\S+)$/m.exec(provider)?.[1];
    expect(readFileSync('docker-compose.yml', 'utf8')).to.include(`./deploy/grafana/dashboards:${path}:ro`);
    const datasource = readFileSync('deploy/grafana/provisioning/datasources/prometheus.yml', 'utf8');
    const uid = /^ {4}uid: (\S+)$/m.exec(datasource)?.[1];
    const dashboard = readFileSync('deploy/grafana/dashboards/device-cloud.json', 'utf8');
    const uids = new Set([...dashboard.matchAll(/"uid": "([^"]+)"/g)].map((m) => m[1]));
    uids.delete('device-cloud'); // the dashboard's own
    expect([...uids]).to.deep.equal([uid]);
  });
});

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
    // The monitoring profile's services publish too, on 127.0.0.1 only (checked above).
    const publishing = [...all]
      .filter(([, block]) => /\bports:/.test(block) && !/^ {4}profiles: \[monitoring\]$/m.test(block))
      .map(([name]) => name);
    expect(publishing).to.deep.equal(['haproxy']);
  });

  it('lets Prometheus scrape every node by itself, each with /metrics behind METRICS_TOKEN', () => {
    // Aliased services (`ingress-2: *ingress`) have no block of their own: they are named by role.
    const nodes = [...services('docker-compose.scale.yml').keys()].filter((name) =>
      /^((ingress|api|projector)-\d+|scheduler)$/.test(name),
    );
    expect(nodes).to.have.length(7);
    expect(readFileSync('docker-compose.scale.yml', 'utf8')).to.match(
      /^x-devcloud:[^]*?^ {4}METRICS_TOKEN:$/m,
    );
    const config = readFileSync('deploy/prometheus/prometheus.scale.yml', 'utf8');
    const targets = [...config.matchAll(/'([a-z0-9-]+):8080'/g)].map((m) => m[1]);
    expect(targets.sort()).to.deep.equal(nodes.sort());
  });

  it('passes MQTT through HAProxy at layer 4, so TLS and the client certificate end in the broker', () => {
    const config = readFileSync('deploy/haproxy.cfg', 'utf8');
    const mqtt = config.slice(config.indexOf('frontend mqtt'), config.indexOf('frontend api'));
    expect(mqtt).to.match(/^\s+mode tcp$/m);
    expect(mqtt).to.match(/^\s+bind :8883$/m);
    expect(mqtt, 'no TLS termination').to.not.match(/\bssl\b|\bcrt\b/);
  });
});
