import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { pino } from 'pino';
import type { AgentDirectory, AgentRecord } from '../../../src/ingress/broker/agent-directory.js';
import { startBroker, type BrokerOptions, type RunningBroker } from '../../../src/ingress/broker/broker.js';
import type { RejectionReason } from '../../../src/ingress/broker/rejections.js';
import { parseUplinkPayload, type UplinkTopic } from '../../../src/ingress/broker/topics.js';
import {
  loadOrCreateAuthority,
  type Authority,
  type IssuedCertificate,
} from '../../../src/ingress/pki/authority.js';
import { tempDirectory } from '../../support/run-directory.js';

/** Every wait in these tests is bounded by this or less, so a broken broker fails fast, never hangs. */
export const WAIT_MS = 4000;

export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until `condition` holds, failing after `ms`. */
export async function eventually(condition: () => boolean, what: string, ms = WAIT_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

/** In-memory AgentDirectory: a fake of the port, mutable by the test. */
class FakeDirectory implements AgentDirectory {
  readonly agents = new Map<string, AgentRecord>();
  failing = false;

  add(agentId: string, hubId: string, deviceIds: string[] = []): AgentRecord {
    const record = {
      agentId,
      projectId: 'project-1',
      hubId,
      revoked: false,
      deviceIds: new Set([hubId, ...deviceIds]),
    };
    this.agents.set(agentId, record);
    return record;
  }

  revoke(agentId: string): void {
    const record = this.agents.get(agentId);
    if (record) this.agents.set(agentId, { ...record, revoked: true });
  }

  adopt(agentId: string, deviceId: string): void {
    const record = this.agents.get(agentId);
    if (record) this.agents.set(agentId, { ...record, deviceIds: new Set([...record.deviceIds, deviceId]) });
  }

  async getAgent(agentId: string): Promise<AgentRecord | undefined> {
    if (this.failing) throw new Error('directory down');
    return this.agents.get(agentId);
  }
}

interface RecordedUplink {
  readonly agentId: string;
  readonly topic: UplinkTopic;
  readonly payload: string;
  /** The connection it came over (a will: the connection that stored it). */
  readonly connectionId: string | undefined;
  /** False for a will published after its connection's node was gone. */
  readonly live: boolean;
}

export interface BrokerFixture {
  readonly broker: RunningBroker;
  readonly authority: Authority;
  readonly directory: FakeDirectory;
  readonly uplinks: RecordedUplink[];
  readonly offline: string[];
  /** The connection each offline was reported for, in the same order. */
  readonly offlineConnections: string[];
  /** Uplinks and offlines in the order the handlers finished them: `<kind> <agentId>`, `offline <agentId>`. */
  readonly events: string[];
  readonly rejections: Array<{ reason: RejectionReason; agentId: string | undefined }>;
  /**
   * Replaceable behaviour of the uplink handler; recording happens after it resolves. By default it
   * validates the payload like the real ingress does, so a bad payload throws RejectedMessage.
   */
  uplinkBehaviour: (agentId: string, topic: UplinkTopic, payload: Buffer) => Promise<void>;
  offlineBehaviour: (agentId: string) => Promise<void>;
  connect(options: AgentConnectOptions): MqttClient;
  certificateFor(agentId: string): Promise<IssuedCertificate>;
  close(): Promise<void>;
}

interface AgentConnectOptions {
  readonly clientId: string;
  /** Omit for a connection without a client certificate. */
  readonly certificate?: IssuedCertificate;
  readonly will?: IClientOptions['will'] | null;
  readonly reconnect?: boolean;
  /** 4 (MQTT 3.1.1, what the broker speaks) unless a test offers another. */
  readonly protocolVersion?: 4 | 5;
}

export const MAX_PACKET_BYTES = 4096;

let shared: { dir: string; authority: Authority; serverTls: IssuedCertificate } | undefined;

/** One CA for the whole run: creating it is the slow part, and tests never modify it. */
export async function sharedAuthority(): Promise<{
  dir: string;
  authority: Authority;
  serverTls: IssuedCertificate;
}> {
  if (!shared) {
    const dir = await tempDirectory('broker');
    const authority = await loadOrCreateAuthority(path.join(dir, 'pki'));
    shared = { dir, authority, serverTls: await authority.issueServerCertificate() };
  }
  return shared;
}

export async function removeSharedAuthority(): Promise<void> {
  if (shared) await rm(shared.dir, { recursive: true, force: true });
  shared = undefined;
}

export async function startBrokerFixture(overrides: Partial<BrokerOptions> = {}): Promise<BrokerFixture> {
  const { authority, serverTls } = await sharedAuthority();
  const directory = new FakeDirectory();
  const uplinks: RecordedUplink[] = [];
  const offline: string[] = [];
  const offlineConnections: string[] = [];
  const events: string[] = [];
  const rejections: BrokerFixture['rejections'] = [];
  const clients: MqttClient[] = [];
  const certificates = new Map<string, IssuedCertificate>();

  const fixture: BrokerFixture = {
    broker: undefined as unknown as RunningBroker,
    authority,
    directory,
    uplinks,
    offline,
    offlineConnections,
    events,
    rejections,
    uplinkBehaviour: async (_agentId, topic, payload) => {
      parseUplinkPayload(topic, payload);
    },
    offlineBehaviour: async () => undefined,
    connect(options) {
      const will =
        options.will === null
          ? undefined
          : (options.will ?? {
              topic: `dc/v1/agents/${options.clientId}/status`,
              payload: Buffer.from(JSON.stringify({ state: 'offline' })),
              qos: 1 as const,
              retain: false,
            });
      const client = mqtt.connect(`mqtts://127.0.0.1:${fixture.broker.port}`, {
        protocolVersion: options.protocolVersion ?? 4,
        clientId: options.clientId,
        clean: true,
        ca: authority.certificatePem,
        ...(options.certificate
          ? { key: options.certificate.keyPem, cert: options.certificate.certPem }
          : {}),
        ...(will ? { will } : {}),
        reconnectPeriod: options.reconnect ? 100 : 0,
        connectTimeout: WAIT_MS,
        keepalive: 30,
      });
      client.on('error', () => undefined);
      clients.push(client);
      return client;
    },
    async certificateFor(agentId) {
      let certificate = certificates.get(agentId);
      if (!certificate) {
        certificate = await authority.issueAgentCertificate({ agentId, validityDays: 1 });
        certificates.set(agentId, certificate);
      }
      return certificate;
    },
    async close() {
      await Promise.all(
        clients.map((client) => within(client.endAsync(true), WAIT_MS, 'client end').catch(() => {})),
      );
      await within(fixture.broker.close(), WAIT_MS, 'broker close');
    },
  };

  (fixture as { broker: RunningBroker }).broker = await startBroker({
    port: 0,
    host: '127.0.0.1',
    tls: { key: serverTls.keyPem, cert: serverTls.certPem, ca: authority.certificatePem },
    maxPacketBytes: MAX_PACKET_BYTES,
    directory,
    logger: pino({ level: 'silent' }),
    connectTimeoutMs: WAIT_MS,
    onUplink: async (agent, topic, payload, connection) => {
      await fixture.uplinkBehaviour(agent.agentId, topic, payload);
      uplinks.push({
        agentId: agent.agentId,
        topic,
        payload: payload.toString('utf8'),
        connectionId: connection.id,
        live: connection.ended !== undefined,
      });
      events.push(`${topic.kind} ${agent.agentId}`);
    },
    onAgentOffline: async (agentId, connectionId) => {
      await fixture.offlineBehaviour(agentId);
      offline.push(agentId);
      offlineConnections.push(connectionId);
      events.push(`offline ${agentId}`);
    },
    onRejected: (reason, agentId) => rejections.push({ reason, agentId }),
    ...overrides,
  });
  return fixture;
}

/** Resolves once the client has its CONNACK; rejects if it is refused or closed first. */
export function connected(client: MqttClient, ms = WAIT_MS): Promise<void> {
  return within(
    new Promise<void>((resolve, reject) => {
      if (client.connected) return resolve();
      client.once('connect', () => resolve());
      client.once('error', (error) => reject(error));
      client.once('close', () => reject(new Error('closed before CONNACK')));
    }),
    ms,
    'CONNACK',
  );
}

/** Resolves with how the connection ended if it ends without ever being accepted; rejects if accepted. */
export function refused(client: MqttClient, ms = WAIT_MS): Promise<string> {
  return within(
    new Promise<string>((resolve, reject) => {
      client.once('connect', () => reject(new Error('connection was accepted')));
      client.once('error', (error) => resolve(error.message));
      client.once('close', () => resolve('closed'));
    }),
    ms,
    'refusal',
  );
}

/** Resolves when the connection closes. */
export function closed(client: MqttClient, ms = WAIT_MS): Promise<void> {
  return within(
    new Promise<void>((resolve) => {
      if (client.disconnected) return resolve();
      client.once('close', () => resolve());
    }),
    ms,
    'connection close',
  );
}

/** Resolves with the next message on `topic`. */
export function nextMessage(client: MqttClient, topic: string, ms = WAIT_MS): Promise<string> {
  return within(
    new Promise<string>((resolve) => {
      const onMessage = (received: string, payload: Buffer) => {
        if (received !== topic) return;
        client.off('message', onMessage);
        resolve(payload.toString('utf8'));
      };
      client.on('message', onMessage);
    }),
    ms,
    `a message on ${topic}`,
  );
}

export function readings(value: number): string {
  return JSON.stringify({ readings: [{ capability: 'environment.temperature', value }] });
}

/**
 * A real MQTT client connected, with its own certificate, as an agent registered on a running service
 * (registerAgent); resolves at its CONNACK. The caller ends it.
 */
export async function connectAsAgent(
  port: number,
  caPem: string,
  agent: { agentId: string; certificate: IssuedCertificate },
  options: { reconnect?: boolean } = {},
): Promise<MqttClient> {
  const client = mqtt.connect(`mqtts://127.0.0.1:${port}`, {
    protocolVersion: 4,
    clientId: agent.agentId,
    clean: true,
    ca: caPem,
    cert: agent.certificate.certPem,
    key: agent.certificate.keyPem,
    reconnectPeriod: options.reconnect ? 100 : 0,
    connectTimeout: 5000,
  });
  client.on('error', () => undefined);
  await connected(client);
  return client;
}

/** A sample from GET /metrics of a service whose METRICS_TOKEN is `token`; 0 when the series is unwritten. */
export async function metricSample(baseUrl: string, token: string, series: string): Promise<number> {
  const response = await fetch(`${baseUrl}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
  const line = (await response.text()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
