import { EventEmitter } from 'node:events';
import { fullJitter } from '../infra/backoff.js';
import mqtt, { type MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import type { AgentFiles } from '../agents/agent-files.js';
import { HUB_CAPABILITIES } from '../agents/register.js';
import {
  commandsDownPayload,
  devicesDownPayload,
  downlinkSubscription,
  downlinkTopic,
  pairingDownPayload,
  parseUplinkTopic,
  uplinkTopic,
} from '../ingress/broker/topics.js';
import { SimCommands, type CommandBehaviour } from './commands.js';
import { buildFleet, type SimulatedDevice } from './fleet.js';
import { Outbox, type OutboxStats } from './outbox.js';
import { derivedRandom, type Random } from './random.js';
import { createSignal, type Signal, type SimValue } from './signals.js';

export interface EdgeSimOptions {
  readonly files: AgentFiles;
  /** Simulated devices behind the hub, none adopted at start. */
  readonly devices: number;
  /** Readings per second per device (the hub included once it publishes). */
  readonly rate: number;
  readonly seed: number;
  /** Dial this instead of the connection file's broker URL (tests). */
  readonly brokerUrl?: string;
  /** The hub publishes its own diagnostics too. Default true; benchmarks turn it off for uniform messages. */
  readonly hubReadings?: boolean;
  /** Default 3, the size ThingsBoard's published figures use. */
  readonly readingsPerMessage?: number;
  /** Chance that one reading is missing from a message. Default 0.02. */
  readonly dropRate?: number;
  /** Readings messages kept while the broker is away. Default 10,000. */
  readonly queueLimit?: number;
  /** Unacknowledged publishes handed to the MQTT client at a time. Default 256. */
  readonly maxInflight?: number;
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
  readonly tickMs?: number;
  /** Failures and delays for commands (default: every command applied and acknowledged at once). */
  readonly commands?: CommandBehaviour;
  readonly logger?: Logger;
  readonly now?: () => number;
}

export interface SimStats extends OutboxStats {
  readonly connected: boolean;
  readonly reconnects: number;
  readonly messages: number;
  readonly readings: number;
  readonly readingsAcked: number;
  readonly skippedReadings: number;
  readonly candidatesSent: number;
  readonly adopted: number;
  readonly rejected: number;
  readonly commandsApplied: number;
  readonly commandsFailed: number;
}

export interface AckedMessage {
  readonly deviceId: string;
  readonly seq: number;
  readonly readings: number;
  /** When the message was put together (epoch ms), for latency figures. */
  readonly createdAtMs: number;
}

/** A readings message as it went onto the wire: once per transmission, redeliveries after a reconnect too. */
export interface SentMessage {
  readonly deviceId: string;
  readonly seq: number;
  readonly readings: readonly { capability: string; value: SimValue; deviceTime: string }[];
  readonly atMs: number;
}

interface DeviceRuntime {
  readonly sim: SimulatedDevice | undefined;
  readonly capabilities: readonly string[];
  readonly signals: ReadonlyMap<string, Signal>;
  readonly drops: Random;
  publicId: string | undefined;
  rejected: boolean;
  joinedSession: string | undefined;
  seq: number;
  rotation: number;
  credit: number;
}

/**
 * A reference edge agent: one hub and its simulated devices, over the dc/v1 MQTT contract (docs/mqtt.md,
 * docs/edge-agent.md). Events: connected, disconnected, permit, stop, candidate, adopted, rejected,
 * acked (AckedMessage), and for commands: command (every `apply` received), applied, failed, repeated (an
 * imperative command received again, only acknowledged again), cancel (every `cancel` received), dropped
 * (cancelled before it was applied), sent (SentMessage, only decoded while someone listens: crash tests,
 * soak).
 */
export class EdgeSim extends EventEmitter {
  readonly #options: EdgeSimOptions;
  readonly #agentId: string;
  readonly #hubId: string;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  readonly #outbox: Outbox;
  readonly #hub: DeviceRuntime;
  readonly #devices: DeviceRuntime[];
  readonly #commands: SimCommands;
  #client: MqttClient | undefined;
  #ticker: NodeJS.Timeout | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #failures = 0;
  #lastTick = 0;
  #stopping = false;
  #counts = {
    reconnects: 0,
    messages: 0,
    readings: 0,
    readingsAcked: 0,
    skippedReadings: 0,
    candidatesSent: 0,
  };

  constructor(options: EdgeSimOptions) {
    super();
    this.#options = options;
    this.#agentId = options.files.connection.agentId;
    this.#hubId = options.files.connection.hubId;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger?.child({ agentId: this.#agentId });
    // Sequence numbers start from the clock so a restarted agent never reuses one; within a run they
    // count up per device, so a redelivered message carries the same seq and is stored once.
    const seqBase = this.#now() * 1000;
    const context = { timezone: options.files.connection.timezone, startMs: this.#now() };
    const runtime = (sim: SimulatedDevice | undefined, capabilities: readonly string[], key: string) => {
      const random = derivedRandom(options.seed, key);
      return {
        sim,
        capabilities,
        signals: new Map(
          capabilities.map((c) => [c, createSignal(c, derivedRandom(options.seed, key, c), context)]),
        ),
        drops: random,
        publicId: undefined,
        rejected: false,
        joinedSession: undefined,
        seq: seqBase,
        rotation: 0,
        credit: random(),
      } satisfies DeviceRuntime;
    };
    this.#hub = { ...runtime(undefined, HUB_CAPABILITIES, 'hub'), publicId: this.#hubId };
    this.#devices = buildFleet(options.seed, options.devices).map((sim) =>
      runtime(sim, sim.profile.capabilities, `device/${sim.index}`),
    );
    this.#commands = new SimCommands(
      {
        apply: (deviceId, capability, value) => {
          const signal = this.#device(deviceId)?.signals.get(capability);
          signal?.set(value);
          return signal !== undefined;
        },
        report: (deviceId, capability, value) => this.#report(deviceId, capability, value),
        ack: (commandId, deviceId, ack) =>
          this.#control(uplinkTopic.commandAck(this.#agentId, commandId), { deviceId, ...ack }),
        emit: (event, detail) => {
          this.#logger?.info({ event, command: detail }, 'command');
          this.emit(event, detail);
        },
      },
      derivedRandom(options.seed, 'commands'),
      options.commands,
    );
    this.#outbox = new Outbox({
      readingsLimit: options.queueLimit ?? 10_000,
      maxInflight: options.maxInflight ?? 256,
      publish: (message, done) => {
        if (!this.#client) return done(new Error('not connected'));
        this.#client.publish(message.topic, message.payload, { qos: 1 }, (error) => done(error ?? undefined));
      },
    });
  }

  /** The simulated devices: address, kind, and what the cloud has decided about each. */
  fleet(): {
    ieeeAddr: string;
    manufacturer: string;
    model: string;
    capabilities: readonly string[];
    publicId: string | undefined;
    rejected: boolean;
  }[] {
    return this.#devices.map((d) => ({
      ieeeAddr: d.sim!.ieeeAddr,
      manufacturer: d.sim!.profile.manufacturer,
      model: d.sim!.profile.model,
      capabilities: d.capabilities,
      publicId: d.publicId,
      rejected: d.rejected,
    }));
  }

  stats(): SimStats {
    return {
      ...this.#outbox.stats(),
      ...this.#counts,
      commandsApplied: this.#commands.applied,
      commandsFailed: this.#commands.failed,
      connected: this.#client?.connected ?? false,
      adopted: this.#devices.filter((d) => d.publicId !== undefined).length,
      rejected: this.#devices.filter((d) => d.rejected).length,
    };
  }

  /** How commands are treated from now on (failures, delays); see CommandBehaviour. */
  get commandBehaviour(): CommandBehaviour {
    return this.#commands.behaviour;
  }

  set commandBehaviour(behaviour: CommandBehaviour) {
    this.#commands.behaviour = behaviour;
  }

  start(): void {
    const { files } = this.#options;
    const will = {
      topic: uplinkTopic.agentStatus(this.#agentId),
      payload: json({ state: 'offline' }),
      qos: 1 as const,
      retain: false,
    };
    this.#client = mqtt.connect(this.#options.brokerUrl ?? files.connection.brokerUrl, {
      protocolVersion: 4,
      clientId: this.#agentId,
      clean: true,
      ca: files.caPem,
      cert: files.certPem,
      key: files.keyPem,
      will,
      keepalive: 30,
      connectTimeout: 10_000,
      // Reconnects are ours, with backoff, and keep the client's store of unacknowledged messages.
      reconnectPeriod: 0,
    });
    this.#client.on('connect', () => this.#onConnect());
    this.#client.on('close', () => this.#onClose());
    this.#client.on('error', (error) => this.#logger?.debug({ err: error }, 'mqtt error'));
    this.#client.on('message', (topic, payload) => this.#onMessage(topic, payload));
    this.#client.on('packetsend', (packet) => {
      if (packet.cmd === 'publish' && this.listenerCount('sent') > 0)
        this.#onSent(packet.topic, packet.payload);
    });
    this.#lastTick = this.#now();
    this.#ticker = setInterval(() => this.#tick(), this.#options.tickMs ?? 50);
  }

  /** Says goodbye (status offline), waits up to `graceMs` for the queue to drain, and disconnects. */
  async stop(graceMs = 5000): Promise<SimStats> {
    this.#stopping = true;
    clearInterval(this.#ticker);
    clearTimeout(this.#reconnectTimer);
    this.#commands.close();
    if (this.#client?.connected) {
      this.#control(uplinkTopic.agentStatus(this.#agentId), { state: 'offline' });
      await this.#outbox.drained(graceMs);
    }
    await this.#client?.endAsync(true).catch(() => undefined);
    return this.stats();
  }

  #onConnect(): void {
    this.#failures = 0;
    this.#logger?.info('connected');
    const client = this.#client!;
    // Acks and readings are small packets: without this, Nagle's algorithm holds each behind the broker's
    // delayed ACK of the previous one.
    (client.stream as { setNoDelay?: (noDelay: boolean) => void }).setNoDelay?.(true);
    client.subscribe(downlinkSubscription(this.#agentId), { qos: 1 }, (error, granted) => {
      if (error || granted?.some((g) => g.qos === 128)) {
        this.#logger?.warn({ err: error }, 'downlink subscription refused');
        this.#outbox.setOpen(true);
        return;
      }
      // Online only once subscribed: the cloud answers it by sending again what this agent may have missed.
      this.#control(uplinkTopic.agentStatus(this.#agentId), { state: 'online', agentVersion: 'edge-sim/1' });
      for (const device of [this.#hub, ...this.#devices]) {
        if (device.publicId)
          this.#control(uplinkTopic.deviceStatus(this.#agentId, device.publicId), { state: 'online' });
      }
      this.#outbox.setOpen(true);
      this.emit('connected');
    });
  }

  #onClose(): void {
    this.#outbox.setOpen(false);
    if (this.#stopping) return;
    this.emit('disconnected');
    if (this.#reconnectTimer) return;
    const { initialMs, maxMs } = this.#options.backoff ?? { initialMs: 250, maxMs: 10_000 };
    // Full jitter, so a fleet that lost the broker together does not come back together.
    const delay = Math.max(initialMs / 2, fullJitter(this.#failures, { baseMs: initialMs, capMs: maxMs }));
    this.#failures += 1;
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      if (this.#stopping || !this.#client) return;
      this.#counts.reconnects += 1;
      this.#client.reconnect({
        incomingStore: this.#client.incomingStore,
        outgoingStore: this.#client.outgoingStore,
      });
    }, delay);
  }

  // The MQTT client resends unacknowledged publishes itself after a reconnect: only its packets show them.
  #onSent(topic: string, payload: Buffer | string): void {
    const parsed = parseUplinkTopic(topic);
    if (parsed?.kind !== 'readings') return;
    const body = JSON.parse(payload.toString()) as Pick<SentMessage, 'seq' | 'readings'>;
    this.emit('sent', {
      deviceId: parsed.deviceId,
      seq: body.seq,
      readings: body.readings,
      atMs: this.#now(),
    } satisfies SentMessage);
  }

  #onMessage(topic: string, payload: Buffer): void {
    let body: unknown;
    try {
      body = JSON.parse(payload.toString('utf8'));
    } catch {
      return;
    }
    if (topic === downlinkTopic(this.#agentId, 'pairing')) {
      const message = pairingDownPayload.safeParse(body);
      if (message.success && message.data.hubId === this.#hubId) this.#onPairing(message.data);
    } else if (topic === downlinkTopic(this.#agentId, 'devices')) {
      const message = devicesDownPayload.safeParse(body);
      if (message.success) this.#onDecision(message.data);
    } else if (topic === downlinkTopic(this.#agentId, 'commands')) {
      const message = commandsDownPayload.safeParse(body);
      if (!message.success) return;
      if (message.data.action === 'apply') this.emit('command', message.data);
      this.#commands.receive(message.data);
    }
  }

  #onPairing(message: { action: 'permit' | 'stop'; sessionId: string; until?: string }): void {
    if (message.action === 'stop') {
      this.emit('stop', message.sessionId);
      return;
    }
    // Devices join as soon as joining is permitted, so the window's end (`stop`) needs no timer; a permit
    // that arrives after its `until` permits nothing.
    if (Date.parse(message.until!) <= this.#now()) return;
    this.emit('permit', { sessionId: message.sessionId, until: message.until });
    // Every device not yet adopted, and not refused, joins (once per window).
    for (const device of this.#devices) {
      if (device.publicId || device.rejected || device.joinedSession === message.sessionId) continue;
      device.joinedSession = message.sessionId;
      const sim = device.sim!;
      this.#control(uplinkTopic.pairingCandidate(this.#agentId), {
        sessionId: message.sessionId,
        ieeeAddr: sim.ieeeAddr,
        manufacturer: sim.profile.manufacturer,
        model: sim.profile.model,
        capabilities: [...sim.profile.capabilities],
      });
      this.#counts.candidatesSent += 1;
      this.emit('candidate', sim.ieeeAddr);
    }
  }

  #onDecision(message: { decision: 'adopted' | 'rejected'; ieeeAddr: string; publicId?: string }): void {
    const device = this.#devices.find((d) => d.sim!.ieeeAddr === message.ieeeAddr.toLowerCase());
    if (!device) return;
    if (message.decision === 'rejected') {
      if (!device.rejected) this.emit('rejected', message.ieeeAddr);
      device.rejected = true;
      return;
    }
    const first = device.publicId === undefined;
    device.publicId = message.publicId;
    device.rejected = false;
    if (first) {
      this.#control(uplinkTopic.deviceStatus(this.#agentId, device.publicId!), { state: 'online' });
      this.emit('adopted', { ieeeAddr: message.ieeeAddr, publicId: message.publicId });
    }
  }

  #device(publicId: string): DeviceRuntime | undefined {
    return [this.#hub, ...this.#devices].find((d) => d.publicId === publicId);
  }

  /** The value a command set, reported at once as a reading of its own (ahead of the readings queue). */
  #report(deviceId: string, capability: string, value: SimValue): void {
    const device = this.#device(deviceId);
    if (!device) return;
    const now = this.#now();
    const deviceTime = new Date(now + (device.sim?.clockSkewMs ?? 0)).toISOString();
    const seq = ++device.seq;
    this.#counts.messages += 1;
    this.#counts.readings += 1;
    this.#control(uplinkTopic.readings(this.#agentId, deviceId), {
      seq,
      readings: [{ capability, value, deviceTime }],
    });
  }

  #tick(): void {
    const now = this.#now();
    const elapsed = Math.max(0, now - this.#lastTick) / 1000;
    this.#lastTick = now;
    const perMessage = this.#options.readingsPerMessage ?? 3;
    const messagesPerSecond = this.#options.rate / perMessage;
    const publishing = this.#options.hubReadings === false ? this.#devices : [this.#hub, ...this.#devices];
    for (const device of publishing) {
      if (!device.publicId) continue;
      device.credit += messagesPerSecond * elapsed;
      while (device.credit >= 1) {
        device.credit -= 1;
        this.#publishReadings(device, now, perMessage);
      }
    }
  }

  #publishReadings(device: DeviceRuntime, now: number, perMessage: number): void {
    const dropRate = this.#options.dropRate ?? 0.02;
    const deviceTime = new Date(now + (device.sim?.clockSkewMs ?? 0)).toISOString();
    const readings: { capability: string; value: SimValue; deviceTime: string }[] = [];
    for (let i = 0; i < Math.min(perMessage, device.capabilities.length); i++) {
      const capability = device.capabilities[device.rotation % device.capabilities.length]!;
      device.rotation += 1;
      const value = device.signals.get(capability)!.next(now);
      if (device.drops() < dropRate) {
        this.#counts.skippedReadings += 1;
        continue;
      }
      readings.push({ capability, value, deviceTime });
    }
    if (readings.length === 0) return;
    const seq = ++device.seq;
    const deviceId = device.publicId!;
    this.#counts.messages += 1;
    this.#counts.readings += readings.length;
    this.#outbox.enqueue({
      topic: uplinkTopic.readings(this.#agentId, deviceId),
      payload: json({ seq, readings }),
      lane: 'readings',
      onAcked: () => {
        this.#counts.readingsAcked += readings.length;
        this.emit('acked', {
          deviceId,
          seq,
          readings: readings.length,
          createdAtMs: now,
        } satisfies AckedMessage);
      },
    });
  }

  #control(topic: string, payload: unknown): void {
    this.#outbox.enqueue({ topic, payload: json(payload), lane: 'control' });
  }
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value), 'utf8');
}
