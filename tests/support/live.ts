import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { parseSse, type SseItem } from '../../examples/live-client/sse.js';
import { LIVE_FRAME_SCHEMAS } from '../../src/api/live/wire.js';
import { authHeader } from './tenants.js';

export interface Frame {
  readonly id: string | undefined;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

/** One open GET /v1/live, read in the background with the reference client's parser. */
export interface OpenLive {
  readonly status: number;
  readonly headers: Headers;
  /** The JSON body of a refused request. */
  readonly body: Record<string, unknown> | undefined;
  readonly items: SseItem[];
  /** Everything the server sent, as text. */
  raw(): string;
  frames(type?: string): Frame[];
  /** Resolves when the server ended the response (or the client closed it). */
  readonly ended: Promise<void>;
  waitFor<T>(what: string, probe: () => T | undefined, ms?: number): Promise<T>;
  close(): void;
}

export async function openLive(
  baseUrl: string,
  options: { token?: string; query?: string; headers?: Record<string, string> } = {},
): Promise<OpenLive> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/live${options.query ? `?${options.query}` : ''}`, {
    headers: { ...(options.token ? authHeader(options.token) : {}), ...options.headers },
    signal: controller.signal,
  });
  const items: SseItem[] = [];
  const chunks: string[] = [];
  const decoder = new TextDecoder();
  let body: Record<string, unknown> | undefined;
  let ended: Promise<void>;
  if (response.status !== 200 || !response.body) {
    body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    ended = Promise.resolve();
  } else {
    const stream = response.body;
    async function* teed() {
      for await (const chunk of stream) {
        chunks.push(decoder.decode(chunk, { stream: true }));
        yield chunk;
      }
    }
    ended = (async () => {
      try {
        for await (const item of parseSse(teed())) items.push(item);
      } catch {
        // aborted by close()
      }
    })();
  }
  const frames = (type?: string) =>
    items
      .filter((i): i is Extract<SseItem, { kind: 'event' }> => i.kind === 'event')
      .filter((i) => type === undefined || i.event === type)
      .map((i) => ({ id: i.id, type: i.event, data: JSON.parse(i.data) as Record<string, unknown> }));
  return {
    status: response.status,
    headers: response.headers,
    body,
    items,
    raw: () => chunks.join(''),
    frames,
    ended,
    async waitFor(what, probe, ms = 10_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const value = probe();
        // A count of 0 is "not yet", like undefined and false: probes often return a length.
        if (value !== undefined && value !== null && value !== false && value !== 0) return value;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await sleep(20);
      }
    },
    close: () => controller.abort(),
  };
}

/** Every frame's data is what the OpenAPI document describes (docs/api.md), and nothing more. */
export function expectDocumented(frames: readonly Frame[]): void {
  for (const frame of frames) {
    const schema = LIVE_FRAME_SCHEMAS[frame.type as keyof typeof LIVE_FRAME_SCHEMAS];
    expect(schema, `a schema for ${frame.type}`).to.not.equal(undefined);
    expect(schema.parse(frame.data)).to.deep.equal(frame.data);
  }
}
