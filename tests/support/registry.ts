import { deviceDecider, deviceStreamName, type RegisterDevice } from '../../src/domain/devices/index.js';
import { handleCommand } from '../../src/eventstore/handle-command.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { newDevicePublicId } from '../../src/registry/ids.js';
import { createSite } from '../../src/registry/sites.js';
import type { TestApi } from './api-harness.js';
import { authHeader } from './tenants.js';

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: unknown;
}

/** One real HTTP request; `token` becomes the bearer header, an object body is sent as JSON. */
export async function call(
  api: TestApi,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) Object.assign(headers, authHeader(options.token));
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const response = await fetch(api.baseUrl + path, {
    method,
    headers,
    body,
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

// Headers that differ between any two requests whatever they asked for.
const PER_REQUEST = new Set(['date', 'x-request-id']);

/** Status, body bytes and every header but the per-request ones: what "indistinguishable" compares. */
export function fingerprint(answer: Answer) {
  const headers = [...answer.headers.entries()].filter(([name]) => !PER_REQUEST.has(name));
  return { status: answer.status, text: answer.text, headers };
}

export async function siteOf(
  api: { readonly store: EventStore },
  projectId: string,
  name = 'Plant',
  timezone = 'Europe/Paris',
) {
  return (await createSite(api.store, { projectId, name, timezone })).siteId;
}

/**
 * Registers a device under a fresh public id through the device decider, without a hub adopting it: the
 * service registers hubs (agent registration) and devices (adoption) itself; tests and benchmarks that need a
 * device and no pairing take this way.
 */
export async function registerDevice(
  store: EventStore,
  input: Omit<RegisterDevice, 'type' | 'deviceId'>,
  metadata: Record<string, unknown> = {},
): Promise<{ deviceId: string; position: string | undefined }> {
  const deviceId = newDevicePublicId();
  const result = await handleCommand(
    store,
    deviceStreamName(deviceId),
    deviceDecider,
    { type: 'RegisterDevice', deviceId, ...input },
    { metadata },
  );
  return { deviceId, position: result.appended?.position };
}

/** A smart plug (one binary switch) behind a hub, registered in the store only (see registerDevice). */
export async function smartPlug(
  store: EventStore,
  at: { projectId: string; siteId: string; parentHubId: string },
): Promise<string> {
  const { deviceId } = await registerDevice(store, {
    ...at,
    kind: 'device',
    manufacturer: 'IKEA of Sweden',
    productModel: 'INSPELNING Smart plug',
    capabilities: ['binary.switch'],
    profile: 'draft',
  });
  return deviceId;
}

/** A registered device (see registerDevice), with a temperature and humidity sensor's defaults. */
export async function deviceOf(
  api: { readonly store: EventStore },
  projectId: string,
  siteId: string,
  overrides: Partial<Omit<RegisterDevice, 'type' | 'deviceId' | 'projectId' | 'siteId'>> = {},
): Promise<string> {
  const { deviceId } = await registerDevice(api.store, {
    projectId,
    siteId,
    parentHubId: null,
    kind: 'device',
    manufacturer: 'Acme',
    productModel: 'TH-1',
    capabilities: ['environment.temperature', 'environment.humidity'],
    profile: 'draft',
    ...overrides,
  });
  return deviceId;
}

export async function setStatus(
  api: TestApi,
  deviceId: string,
  status: 'quarantined' | 'suspended' | 'retired',
) {
  await handleCommand(api.store, deviceStreamName(deviceId), deviceDecider, {
    type: 'ChangeDeviceLifecycle',
    deviceId,
    status,
  });
}
