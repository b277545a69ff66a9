import { DAY_MS } from '../../src/domain/time.js';
import { execFile } from 'node:child_process';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { chmod, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import tls from 'node:tls';
import { inspect, promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { agentIdFromCertificate } from '../../src/ingress/pki/agent-identity.js';
import { loadAuthority, loadOrCreateAuthority } from '../../src/ingress/pki/authority.js';
import { tempDirectory } from '../support/run-directory.js';

const run = promisify(execFile);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Built from parts so secret scanners do not take this test for a committed key.
const KEY_PEM_HEADER = new RegExp(`^-----BEGIN ${'PRIVATE'} KEY-----`);

describe('edge PKI', function () {
  let dir: string;
  let pkiDir: string;

  beforeEach(async function () {
    dir = await tempDirectory('pki');
    pkiDir = path.join(dir, 'pki');
  });

  afterEach(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  describe('the edge CA', function () {
    it('is created on first use, with a private key only its owner can read', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      expect((await stat(path.join(pkiDir, 'ca.key'))).mode & 0o777).to.equal(0o600);
      expect((await stat(pkiDir)).mode & 0o777).to.equal(0o700);
      expect(await readFile(path.join(pkiDir, 'ca.pem'), 'utf8')).to.equal(authority.certificatePem);
      expect(await readFile(path.join(pkiDir, 'ca.key'), 'utf8')).to.match(KEY_PEM_HEADER);

      const ca = new X509Certificate(authority.certificatePem);
      expect(ca.ca).to.equal(true);
      expect(ca.publicKey.asymmetricKeyDetails?.namedCurve).to.equal('prime256v1');
      expect(ca.checkIssued(ca)).to.equal(true);
    });

    it('is loaded, not recreated, on later uses', async function () {
      const first = await loadOrCreateAuthority(pkiDir);
      const second = await loadOrCreateAuthority(pkiDir);
      const readOnly = await loadAuthority(pkiDir);
      expect(second.certificatePem).to.equal(first.certificatePem);
      expect(readOnly.certificatePem).to.equal(first.certificatePem);
    });

    it('ends up as one CA when many first uses race in one process', async function () {
      const authorities = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateAuthority(pkiDir)));
      expect(new Set(authorities.map((a) => a.certificatePem)).size).to.equal(1);
      expect(await readFile(path.join(pkiDir, 'ca.pem'), 'utf8')).to.equal(authorities[0]!.certificatePem);
    });

    it('ends up as one CA when separate processes race to create it', async function () {
      this.timeout(60_000);
      const script = `
        const { loadOrCreateAuthority } = await import(${JSON.stringify(path.join(repoRoot, 'src/ingress/pki/authority.ts'))});
        const authority = await loadOrCreateAuthority(${JSON.stringify(pkiDir)});
        process.stdout.write(authority.certificatePem);`;
      const outputs = await Promise.all(
        Array.from({ length: 3 }, () =>
          run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
            cwd: repoRoot,
            timeout: 45_000,
          }),
        ),
      );
      const pems = new Set(outputs.map((o) => o.stdout));
      expect(pems.size).to.equal(1);
      expect(await readFile(path.join(pkiDir, 'ca.pem'), 'utf8')).to.equal([...pems][0]);
    });

    it('rebuilds a lost ca.pem from ca.key, and certificates issued before still chain to it', async function () {
      this.timeout(10_000);
      const before = await loadOrCreateAuthority(pkiDir);
      const issued = await before.issueAgentCertificate({ agentId: 'agent-1', validityDays: 30 });
      await unlink(path.join(pkiDir, 'ca.pem'));

      const after = await loadOrCreateAuthority(pkiDir);
      const ca = new X509Certificate(after.certificatePem);
      const agent = new X509Certificate(issued.certPem);
      expect(agent.checkIssued(ca)).to.equal(true);
      expect(agent.verify(ca.publicKey)).to.equal(true);
    });

    it('refuses a CA key that group or others can read', async function () {
      await loadOrCreateAuthority(pkiDir);
      await chmod(path.join(pkiDir, 'ca.key'), 0o644);
      let failure: unknown;
      await loadOrCreateAuthority(pkiDir).catch((error: unknown) => (failure = error));
      expect(String(failure)).to.match(/chmod 600/);
    });

    it('refuses a ca.pem that does not belong to ca.key when loading read-only', async function () {
      await loadOrCreateAuthority(pkiDir);
      const other = await loadOrCreateAuthority(path.join(dir, 'other'));
      await writeFile(path.join(pkiDir, 'ca.pem'), other.certificatePem);
      let failure: unknown;
      await loadAuthority(pkiDir).catch((error: unknown) => (failure = error));
      expect(String(failure)).to.match(/does not belong/);
    });

    it('never shows its private key when logged or inspected', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      const keyPem = await readFile(path.join(pkiDir, 'ca.key'), 'utf8');
      const keyBody = keyPem.split('\n')[1]!;
      for (const rendered of [
        JSON.stringify(authority),
        inspect(authority, { depth: 10, showHidden: true }),
      ]) {
        expect(rendered).not.to.include('PRIVATE KEY');
        expect(rendered).not.to.include(keyBody);
      }
    });
  });

  describe('agent certificates', function () {
    it('name the agent in the CN and a URI SAN, for client authentication only', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      const issued = await authority.issueAgentCertificate({ agentId: 'agent_7-x', validityDays: 90 });
      const ca = new X509Certificate(authority.certificatePem);
      const cert = new X509Certificate(issued.certPem);

      expect(cert.subject).to.equal('CN=agent_7-x');
      expect(cert.subjectAltName).to.equal('URI:urn:devcloud:agent:agent_7-x');
      expect(cert.keyUsage).to.deep.equal(['1.3.6.1.5.5.7.3.2']);
      expect(cert.ca).to.equal(false);
      expect(cert.checkIssued(ca)).to.equal(true);
      expect(cert.verify(ca.publicKey)).to.equal(true);
      expect(cert.checkPrivateKey(createPrivateKey(issued.keyPem))).to.equal(true);
      expect(issued.keyPem).to.match(KEY_PEM_HEADER);
      expect(cert.serialNumber.toLowerCase().replace(/^0+/, '')).to.equal(
        issued.serialNumber.replace(/^0+/, ''),
      );

      const days = (Date.parse(cert.validTo) - Date.now()) / DAY_MS;
      expect(days).to.be.within(89.9, 90.1);
    });

    it('get a fresh key and serial each time', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      const a = await authority.issueAgentCertificate({ agentId: 'agent-1', validityDays: 1 });
      const b = await authority.issueAgentCertificate({ agentId: 'agent-1', validityDays: 1 });
      expect(a.serialNumber).not.to.equal(b.serialNumber);
      expect(a.keyPem).not.to.equal(b.keyPem);
    });

    for (const agentId of ['', 'a/b', 'a+b', '#', 'CN=x,O=y', 'agent 1', 'é', 'a'.repeat(65)]) {
      it(`refuses the agent id ${JSON.stringify(agentId)}`, async function () {
        const authority = await loadOrCreateAuthority(pkiDir);
        let failure: unknown;
        await authority
          .issueAgentCertificate({ agentId, validityDays: 1 })
          .catch((e: unknown) => (failure = e));
        expect(failure).to.be.instanceOf(RangeError);
      });
    }

    it('can be issued already expired, for tests of expiry', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      const notAfter = new Date(Date.now() - DAY_MS);
      const issued = await authority.issueAgentCertificate({
        agentId: 'agent-1',
        validityDays: 1,
        validity: { notBefore: new Date(Date.now() - 2 * DAY_MS), notAfter },
      });
      expect(Date.parse(new X509Certificate(issued.certPem).validTo)).to.be.lessThan(Date.now());
    });

    it('cannot outlive the CA', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      let failure: unknown;
      await authority
        .issueAgentCertificate({ agentId: 'agent-1', validityDays: 365 * 20 })
        .catch((e: unknown) => (failure = e));
      expect(failure).to.be.instanceOf(RangeError);
    });
  });

  describe('server certificates', function () {
    it('cover localhost, loopback and the configured names, for server authentication', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      const issued = await authority.issueServerCertificate({
        hostnames: ['mqtt.example.eu'],
        ipAddresses: ['10.0.0.7'],
      });
      const cert = new X509Certificate(issued.certPem);
      expect(cert.subjectAltName).to.equal(
        'DNS:localhost, DNS:mqtt.example.eu, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.0.0.7',
      );
      expect(cert.keyUsage).to.deep.equal(['1.3.6.1.5.5.7.3.1']);
      expect(cert.checkHost('mqtt.example.eu')).to.equal('mqtt.example.eu');
      expect(cert.checkIP('127.0.0.1')).to.equal('127.0.0.1');
    });

    it('refuses something that is not an IP address as one', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      let failure: unknown;
      await authority
        .issueServerCertificate({ ipAddresses: ['example.com'] })
        .catch((e: unknown) => (failure = e));
      expect(failure).to.be.instanceOf(RangeError);
    });
  });

  describe('agentIdFromCertificate', function () {
    it('reads the agent id from a peer certificate verified by a real TLS handshake', async function () {
      const authority = await loadOrCreateAuthority(pkiDir);
      const server = await authority.issueServerCertificate();
      const agent = await authority.issueAgentCertificate({ agentId: 'agent-42', validityDays: 1 });
      const listener = tls.createServer({
        key: server.keyPem,
        cert: server.certPem,
        ca: authority.certificatePem,
        requestCert: true,
        rejectUnauthorized: true,
      });
      const seen = new Promise<string | undefined>((resolve) => {
        listener.once('secureConnection', (socket) => {
          resolve(agentIdFromCertificate(socket.getPeerCertificate()));
          socket.end();
        });
      });
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      const port = (listener.address() as { port: number }).port;
      const client = tls.connect({
        host: '127.0.0.1',
        port,
        ca: authority.certificatePem,
        key: agent.keyPem,
        cert: agent.certPem,
      });
      client.on('error', () => undefined);
      try {
        expect(await seen).to.equal('agent-42');
      } finally {
        client.destroy();
        await new Promise<void>((resolve) => listener.close(() => resolve()));
      }
    });

    const peer = (cn: unknown, subjectaltname?: string) =>
      ({ subject: { CN: cn }, subjectaltname }) as unknown as tls.PeerCertificate;

    it('refuses a certificate without the agent URI, such as the broker’s own', function () {
      expect(agentIdFromCertificate(peer('localhost', 'DNS:localhost, IP Address:127.0.0.1'))).to.equal(
        undefined,
      );
    });

    it('refuses a URI naming another agent, several CNs, or an invalid id', function () {
      expect(agentIdFromCertificate(peer('agent-1', 'URI:urn:devcloud:agent:agent-2'))).to.equal(undefined);
      expect(agentIdFromCertificate(peer(['agent-1', 'agent-2'], 'URI:urn:devcloud:agent:agent-1'))).to.equal(
        undefined,
      );
      expect(agentIdFromCertificate(peer('agent/1', 'URI:urn:devcloud:agent:agent/1'))).to.equal(undefined);
      expect(
        agentIdFromCertificate(
          peer('agent-1', 'URI:urn:devcloud:agent:agent-1, URI:urn:devcloud:agent:agent-1'),
        ),
      ).to.equal(undefined);
      expect(agentIdFromCertificate(undefined)).to.equal(undefined);
      expect(agentIdFromCertificate(peer('agent-1', 'URI:urn:devcloud:agent:agent-1'))).to.equal('agent-1');
    });
  });
});
