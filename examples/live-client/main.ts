import { LiveClient, type ClientAuth } from './client.js';

/**
 * `DEVCLOUD_URL=… DEVCLOUD_CLIENT_ID=… DEVCLOUD_CLIENT_SECRET=… node --import tsx examples/live-client/main.ts`
 * prints every frame as a JSON line on stdout, and notices on stderr, until Ctrl-C. DEVCLOUD_CLIENT_AUTH
 * (basic or post, default basic) picks the token request's client authentication; LIVE_TYPES,
 * LIVE_DEVICE_IDS and LIVE_CAPABILITIES narrow the stream; LIVE_LAST_EVENT_ID resumes after a frame.
 * README.md next to this file walks through it.
 */
const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const list = (name: string) => process.env[name]?.split(',').filter(Boolean);
const clientAuth = (process.env.DEVCLOUD_CLIENT_AUTH || 'basic') as ClientAuth;
if (clientAuth !== 'basic' && clientAuth !== 'post') {
  throw new Error('DEVCLOUD_CLIENT_AUTH must be basic or post');
}

const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());
const client = new LiveClient({
  baseUrl: env('DEVCLOUD_URL'),
  clientId: env('DEVCLOUD_CLIENT_ID'),
  clientSecret: env('DEVCLOUD_CLIENT_SECRET'),
  clientAuth,
  types: list('LIVE_TYPES'),
  deviceIds: list('LIVE_DEVICE_IDS'),
  capabilities: list('LIVE_CAPABILITIES'),
  lastEventId: process.env.LIVE_LAST_EVENT_ID || undefined,
  onFrame: (frame) => void process.stdout.write(JSON.stringify(frame) + '\n'),
  onBackfill: (deviceId, telemetry) =>
    void process.stdout.write(JSON.stringify({ backfill: deviceId, telemetry }) + '\n'),
  onNotice: (notice) => void process.stderr.write(notice + '\n'),
});
try {
  await client.run(stop.signal);
} catch (error) {
  // A final refusal (credentials, scope, filters): one line saying why, and a failing exit code.
  process.stderr.write(`${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  // Where to resume next time (LIVE_LAST_EVENT_ID): the id of the last frame printed.
  if (client.lastEventId) process.stderr.write(`last event id: ${client.lastEventId}\n`);
}
