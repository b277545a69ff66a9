import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
