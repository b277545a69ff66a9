import { DAY_MS } from '../../domain/time.js';
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';
import { agentUri, isAgentId } from './agent-identity.js';
import { installAuthorityFiles, readAuthorityFiles } from './authority-files.js';

x509.cryptoProvider.set(webcrypto);

const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;
const CA_NAME = 'CN=Device Cloud edge CA, O=Device Cloud';
const CA_VALIDITY_DAYS = 3650;
const SERVER_VALIDITY_DAYS = 365;
// A device clock a few minutes behind must not see a fresh certificate as not yet valid.
const BACKDATE_MS = 5 * 60_000;

export interface IssuedCertificate {
  readonly certPem: string;
  /** PKCS#8 PEM. Handed to the caller once; the authority keeps no copy. */
  readonly keyPem: string;
  readonly serialNumber: string;
  readonly notAfter: Date;
}

interface ServerCertificateRequest {
  /** Extra DNS names; `localhost` is always included. */
  readonly hostnames?: readonly string[];
  /** Extra IP addresses; 127.0.0.1 and ::1 are always included. */
  readonly ipAddresses?: readonly string[];
}

interface AgentCertificateRequest {
  readonly agentId: string;
  readonly validityDays: number;
  /** Explicit validity window. Only tests use it, to issue certificates that are already expired. */
  readonly validity?: { readonly notBefore: Date; readonly notAfter: Date };
}

/** The one edge CA of a deployment. Its private key never leaves this object. */
export interface Authority {
  readonly certificatePem: string;
  issueServerCertificate(request?: ServerCertificateRequest): Promise<IssuedCertificate>;
  issueAgentCertificate(request: AgentCertificateRequest): Promise<IssuedCertificate>;
}

/**
 * Loads the edge CA from `pkiDir` (ca.key, ca.pem), creating it on first use. Concurrent first uses,
 * in one process or several, end with every caller holding the same CA.
 */
export async function loadOrCreateAuthority(pkiDir: string): Promise<Authority> {
  const files = await installAuthorityFiles(pkiDir, {
    create: createAuthorityFiles,
    certificateFor: certificateForKey,
    belongTogether: async (keyPem, certPem) => {
      try {
        await EdgeAuthority.fromPem(keyPem, certPem);
        return true;
      } catch {
        return false;
      }
    },
  });
  return EdgeAuthority.fromPem(files.keyPem, files.certPem);
}

/** Loads an existing CA without ever creating one (for read-only callers and checks). */
export async function loadAuthority(pkiDir: string): Promise<Authority> {
  const files = await readAuthorityFiles(pkiDir);
  return EdgeAuthority.fromPem(files.keyPem, files.certPem);
}

class EdgeAuthority implements Authority {
  readonly #signingKey: webcrypto.CryptoKey;
  readonly #certificate: x509.X509Certificate;
  readonly #keyIdentifier: string;
  readonly certificatePem: string;

  private constructor(signingKey: webcrypto.CryptoKey, certificate: x509.X509Certificate) {
    this.#signingKey = signingKey;
    this.#certificate = certificate;
    this.certificatePem = certificate.toString('pem');
    const ski = certificate.getExtension(x509.SubjectKeyIdentifierExtension);
    if (!ski) throw new Error('edge CA certificate has no subject key identifier');
    this.#keyIdentifier = ski.keyId;
  }

  static async fromPem(keyPem: string, certPem: string): Promise<EdgeAuthority> {
    // Not extractable: once loaded, nothing in the process can read the CA key back out.
    const signingKey = await webcrypto.subtle.importKey('pkcs8', pemBody(keyPem), KEY_ALGORITHM, false, [
      'sign',
    ]);
    const certificate = new x509.X509Certificate(certPem);
    await assertKeyMatchesCertificate(signingKey, certificate);
    return new EdgeAuthority(signingKey, certificate);
  }

  async issueServerCertificate(request: ServerCertificateRequest = {}): Promise<IssuedCertificate> {
    const hostnames = unique(['localhost', ...(request.hostnames ?? [])]);
    const ipAddresses = unique(['127.0.0.1', '::1', ...(request.ipAddresses ?? [])]);
    for (const ip of ipAddresses) {
      if (isIP(ip) === 0) throw new RangeError(`not an IP address: ${ip}`);
    }
    const now = Date.now();
    return this.#issue({
      subject: `CN=${hostnames[0]}`,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + SERVER_VALIDITY_DAYS * DAY_MS),
      extendedKeyUsage: x509.ExtendedKeyUsage.serverAuth,
      alternativeNames: [
        ...hostnames.map((value) => ({ type: 'dns' as const, value })),
        ...ipAddresses.map((value) => ({ type: 'ip' as const, value })),
      ],
    });
  }

  async issueAgentCertificate(request: AgentCertificateRequest): Promise<IssuedCertificate> {
    if (!isAgentId(request.agentId)) throw new RangeError('agent id must match [A-Za-z0-9_-]{1,64}');
    let notBefore: Date;
    let notAfter: Date;
    if (request.validity) {
      ({ notBefore, notAfter } = request.validity);
    } else {
      if (!Number.isInteger(request.validityDays) || request.validityDays < 1) {
        throw new RangeError('validityDays must be a positive integer');
      }
      const now = Date.now();
      notBefore = new Date(now - BACKDATE_MS);
      notAfter = new Date(now + request.validityDays * DAY_MS);
    }
    if (notAfter.getTime() > this.#certificate.notAfter.getTime()) {
      throw new RangeError('an agent certificate cannot outlive the edge CA');
    }
    return this.#issue({
      subject: `CN=${request.agentId}`,
      notBefore,
      notAfter,
      extendedKeyUsage: x509.ExtendedKeyUsage.clientAuth,
      alternativeNames: [{ type: 'url', value: agentUri(request.agentId) }],
    });
  }

  async #issue(spec: {
    subject: string;
    notBefore: Date;
    notAfter: Date;
    extendedKeyUsage: x509.ExtendedKeyUsage;
    alternativeNames: x509.JsonGeneralNames;
  }): Promise<IssuedCertificate> {
    const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: newSerialNumber(),
      subject: spec.subject,
      issuer: this.#certificate.subject,
      notBefore: spec.notBefore,
      notAfter: spec.notAfter,
      publicKey: keys.publicKey,
      signingKey: this.#signingKey,
      signingAlgorithm: SIGNING_ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([spec.extendedKeyUsage]),
        new x509.SubjectAlternativeNameExtension(spec.alternativeNames),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
        new x509.AuthorityKeyIdentifierExtension(this.#keyIdentifier),
      ],
    });
    const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
    return {
      certPem: certificate.toString('pem'),
      keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'),
      serialNumber: certificate.serialNumber,
      notAfter: certificate.notAfter,
    };
  }

  // The CA key must never surface in logs, even when someone logs the authority object itself.
  toJSON(): { certificatePem: string } {
    return { certificatePem: this.certificatePem };
  }
}

async function createAuthorityFiles(): Promise<{ keyPem: string; certPem: string }> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  const keyPem = x509.PemConverter.encode(pkcs8, 'PRIVATE KEY');
  return { keyPem, certPem: await selfSignedCertificate(keys) };
}

/**
 * Rebuilds the CA certificate from its key, for a first use that crashed between installing ca.key and
 * ca.pem. Certificates already issued stay valid: chain building needs the same name and key, not the
 * same CA certificate.
 */
async function certificateForKey(keyPem: string): Promise<string> {
  const privateKey = await webcrypto.subtle.importKey('pkcs8', pemBody(keyPem), KEY_ALGORITHM, true, [
    'sign',
  ]);
  const { d: _d, key_ops: _ops, ...publicJwk } = await webcrypto.subtle.exportKey('jwk', privateKey);
  const publicKey = await webcrypto.subtle.importKey('jwk', publicJwk, KEY_ALGORITHM, true, ['verify']);
  return selfSignedCertificate({ privateKey, publicKey });
}

async function selfSignedCertificate(keys: webcrypto.CryptoKeyPair): Promise<string> {
  const now = Date.now();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: newSerialNumber(),
    name: CA_NAME,
    keys,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_VALIDITY_DAYS * DAY_MS),
    signingAlgorithm: SIGNING_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return certificate.toString('pem');
}

async function assertKeyMatchesCertificate(
  signingKey: webcrypto.CryptoKey,
  certificate: x509.X509Certificate,
) {
  const probe = randomBytes(32);
  const signature = await webcrypto.subtle.sign(SIGNING_ALGORITHM, signingKey, probe);
  const publicKey = await certificate.publicKey.export(KEY_ALGORITHM, ['verify']);
  const matches = await webcrypto.subtle.verify(
    SIGNING_ALGORITHM,
    publicKey as webcrypto.CryptoKey,
    signature,
    probe,
  );
  if (!matches) throw new Error('edge CA: ca.key does not belong to ca.pem');
}

function pemBody(pem: string): ArrayBuffer {
  const [body] = x509.PemConverter.decode(pem);
  if (!body) throw new Error('edge CA: no PEM block found');
  return body;
}

/** 128 random bits, high bit clear so the DER integer stays positive (RFC 5280 §4.1.2.2). */
function newSerialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}
