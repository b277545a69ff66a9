import { LiveClient } from './client.js';

/**
 * `DEVCLOUD_URL=… DEVCLOUD_CLIENT_ID=… DEVCLOUD_CLIENT_SECRET=… node --import tsx examples/live-client/main.ts`
 * prints every frame as a JSON line until Ctrl-C. LIVE_TYPES / LIVE_DEVICE_IDS narrow the stream.
 */
const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const list = (name: string) => process.env[name]?.split(',').filter(Boolean);

const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
const client = new LiveClient({
  baseUrl: env('DEVCLOUD_URL'),
  clientId: env('DEVCLOUD_CLIENT_ID'),
  clientSecret: env('DEVCLOUD_CLIENT_SECRET'),
  types: list('LIVE_TYPES'),
  deviceIds: list('LIVE_DEVICE_IDS'),
  onFrame: (frame) => void process.stdout.write(JSON.stringify(frame) + '\n'),
  onBackfill: (deviceId, telemetry) =>
    void process.stdout.write(JSON.stringify({ backfill: deviceId, telemetry }) + '\n'),
  onNotice: (notice) => void process.stderr.write(notice + '\n'),
});
await client.run(stop.signal);
