import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CommandEvent } from '../domain/control/command-events.js';
import { REFUSAL_REASONS, type DeviceControlState } from '../domain/control/index.js';
import { Refusal } from '../domain/errors.js';

/** The process's one metrics registry, served on GET /metrics. */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Counter({
      name: 'devcloud_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'devcloud_http_request_duration_seconds',
      help: 'HTTP request duration',
      labelNames: ['method', 'route'] as const,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    projectedEvents: new Counter({
      name: 'devcloud_projection_events_total',
      help: 'Events applied by each projector',
      labelNames: ['projector'] as const,
      registers: [registry],
    }),
    projectionBatches: new Counter({
      name: 'devcloud_projection_batches_total',
      help: 'Batches committed by each projector',
      labelNames: ['projector'] as const,
      registers: [registry],
    }),
    projectionLagEvents: new Gauge({
      name: 'devcloud_projection_lag_events',
      help: 'Events each projector follows that it has not projected yet (counted up to 100000)',
      labelNames: ['projector'] as const,
      registers: [registry],
    }),
    projectionLagSeconds: new Gauge({
      name: 'devcloud_projection_lag_seconds',
      help: 'Age of the oldest event each projector has not projected yet (0 when none waits)',
      labelNames: ['projector'] as const,
      registers: [registry],
    }),
    mqttRejected: new Counter({
      name: 'devcloud_mqtt_rejected_total',
      help: 'MQTT connections, subscriptions and messages refused, by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    pairingJoinsIgnored: new Counter({
      name: 'devcloud_pairing_joins_ignored_total',
      help: 'Pairing candidates an agent reported that recorded nothing (no open window, already known), by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    readingsStored: new Counter({
      name: 'devcloud_readings_stored_total',
      help: 'Readings appended to the event store',
      registers: [registry],
    }),
    readingsRefused: new Counter({
      name: 'devcloud_readings_refused_total',
      help: 'Readings refused at ingest (the rest of their message is kept), by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    readingsRedelivered: new Counter({
      name: 'devcloud_readings_redelivered_total',
      help: 'Readings messages already stored (a redelivery), acknowledged without writing',
      registers: [registry],
    }),
    readingsOverQuota: new Counter({
      name: 'devcloud_readings_over_quota_total',
      help: 'Readings messages held back by the per-agent readings quota: stored, and acknowledged, later',
      registers: [registry],
    }),
    commandAcksDropped: new Counter({
      name: 'devcloud_command_acks_dropped_total',
      help: 'Command acks an agent sent that recorded nothing and were dropped, by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    commandAcksOverQuota: new Counter({
      name: 'devcloud_command_acks_over_quota_total',
      help: 'Command acks held back by the per-agent ack quota: handled, and acknowledged, later',
      registers: [registry],
    }),
    readingsAppendMessages: new Histogram({
      name: 'devcloud_readings_append_messages',
      help: 'Readings messages grouped into one event-store append',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000],
      registers: [registry],
    }),
    ...operatorMetrics(registry),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/*
 * Live streams (api role), commands (accepted and refused in the api role; sent and acknowledged in the ingress
 * node that records it) and connected agents (ingress role): docs/deployment.md, "Metrics". Every label is a
 * closed list: no device, command, client or agent id is ever a label.
 */

/** A live stream's life as /metrics counts it (src/api/live/stream.ts reports it). */
export interface LiveStreamMetrics {
  opened(): void;
  frameSent(type: string): void;
  resumed(): void;
  /** Called only with the hub's own reason codes (unknown_id, retention). */
  replayGap(reason: string): void;
  /** The stream's end: a server EndReason, or `client_closed` when the client went first. */
  ended(reason: string): void;
}

/** A command's steps as /metrics counts them. */
export interface CommandMetrics {
  /** The API's answer to a command request: an acceptance (not a replay) or each reason of a refusal. */
  decided<T extends { readonly replayed: boolean }>(answer: Promise<T>): Promise<T>;
  /** Sends just recorded on a device's stream; `after`: its control state with them. */
  sent(
    after: DeviceControlState,
    sends: readonly { readonly commandId: string; readonly attempt: number }[],
  ): void;
  /** What an agent's ack just recorded on a device's stream; `after`: its control state with it. */
  acknowledged(after: DeviceControlState, recorded: readonly CommandEvent[]): void;
}

/** A gauge read when scraped, from what the role that owns the figure registers (0 where none does). */
interface SampledGauge {
  measure(source: () => number): void;
}

// From a sub-second send to an agent that was away for most of the longest TTL (86 400 s).
const COMMAND_DELAY_BUCKETS = [
  0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21_600,
];
const REFUSAL_REASON_LABELS: ReadonlySet<string> = new Set(REFUSAL_REASONS);

function operatorMetrics(registry: Registry) {
  const registers = [registry];
  const counter = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers });
  const delays = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Histogram<L>({ name, help, labelNames, buckets: COMMAND_DELAY_BUCKETS, registers });
  const liveStreamsOpen = new Gauge({
    name: 'devcloud_live_streams_open',
    help: 'Live (SSE) streams this API process is serving',
    registers,
  });
  const liveFramesSent = counter(
    'devcloud_live_frames_sent_total',
    'Frames written to live streams (replay and catch-up included), by frame type',
    ['type'],
  );
  const liveResumes = counter(
    'devcloud_live_resumes_total',
    'Live streams opened with a Last-Event-ID (or lastEventId) to resume from',
  );
  const liveReplayGaps = counter(
    'devcloud_live_replay_gaps_total',
    'replay_gap frames sent, by reason (unknown_id, retention)',
    ['reason'],
  );
  const liveStreamEnds = counter(
    'devcloud_live_stream_ends_total',
    'Live streams ended, by reason: the stream_error reason the server sent, or client_closed',
    ['reason'],
  );
  const commandsAccepted = counter(
    'devcloud_commands_accepted_total',
    'Commands accepted (201, replays of an idempotency key not counted)',
  );
  const commandsRefused = counter(
    'devcloud_commands_refused_total',
    "Reasons of the safety gate's refusals (403): a refusal with two reasons counts under both",
    ['reason'],
  );
  const commandsSent = counter(
    'devcloud_commands_sent_total',
    'Commands recorded as sent to their agent, by attempt (first, or repeat for a desired command)',
    ['attempt'],
  );
  const commandSendDelay = delays(
    'devcloud_command_send_delay_seconds',
    "From a command's acceptance to its first send (acceptedAt to sentAt as recorded)",
  );
  const commandsAcknowledged = counter(
    'devcloud_commands_acknowledged_total',
    'Agent acks recorded, by what they did: succeeded, failed, or ignored (after the outcome)',
    ['outcome'],
  );
  const commandAckDelay = delays(
    'devcloud_command_ack_delay_seconds',
    "From a command's last send to the ack that set its outcome (sentAt to the outcome's time)",
    ['outcome'],
  );
  let agentsSource: (() => number) | undefined;
  new Gauge({
    name: 'devcloud_agents_connected',
    help: 'Edge agents with an authenticated MQTT connection to this broker node',
    registers,
    collect() {
      this.set(agentsSource?.() ?? 0);
    },
  });
  const agentsConnected: SampledGauge = { measure: (source) => (agentsSource = source) };

  const live: LiveStreamMetrics = {
    opened: () => liveStreamsOpen.inc(),
    frameSent: (type) => liveFramesSent.inc({ type }),
    resumed: () => liveResumes.inc(),
    replayGap: (reason) => liveReplayGaps.inc({ reason }),
    ended: (reason) => {
      liveStreamsOpen.dec();
      liveStreamEnds.inc({ reason });
    },
  };

  const commands: CommandMetrics = {
    async decided(answer) {
      try {
        const decided = await answer;
        if (!decided.replayed) commandsAccepted.inc();
        return decided;
      } catch (error) {
        if (error instanceof Refusal) {
          for (const reason of error.reasons)
            commandsRefused.inc({ reason: REFUSAL_REASON_LABELS.has(reason) ? reason : 'other' });
        }
        throw error;
      }
    },
    sent(after, sends) {
      for (const { commandId, attempt } of sends) {
        commandsSent.inc({ attempt: attempt === 1 ? 'first' : 'repeat' });
        const command = after.commands.get(commandId);
        if (attempt === 1 && command?.lastAttempt)
          commandSendDelay.observe(secondsBetween(command.acceptedAt, command.lastAttempt.sentAt));
      }
    },
    acknowledged(after, recorded) {
      for (const event of recorded) {
        if (event.type === 'CommandAckIgnored') commandsAcknowledged.inc({ outcome: 'ignored' });
        if (event.type !== 'CommandSucceeded' && event.type !== 'CommandFailed') continue;
        const outcome = event.type === 'CommandSucceeded' ? 'succeeded' : 'failed';
        commandsAcknowledged.inc({ outcome });
        const sentAt = after.commands.get(event.data.commandId)?.lastAttempt?.sentAt;
        if (sentAt !== undefined) commandAckDelay.observe({ outcome }, secondsBetween(sentAt, event.data.at));
      }
    },
  };

  return { live, commands, agentsConnected };
}

/**
 * Seconds between two recorded times. They may come from different hosts (acceptance from an API process,
 * the send from an ingress node): a clock behind the other reads as 0, not as a negative delay.
 */
function secondsBetween(from: string, to: string): number {
  return Math.max(0, (Date.parse(to) - Date.parse(from)) / 1000);
}
