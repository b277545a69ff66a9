import { isIPv6 } from 'node:net';
import type { RequestHandler } from 'express';
import { HttpProblem } from './http-errors.js';

/**
 * The address a request is limited by. req.ip follows express's `trust proxy` (TRUST_PROXY_HOPS), so an
 * X-Forwarded-For header is only believed as far as configured. An IPv6 client usually holds a whole /64,
 * so IPv6 addresses are limited per /64.
 */
export function clientKey(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const address = ip.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`;
}

function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.split('::');
  const split = (part: string) =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const left = split(head);
  const right = tail === undefined ? [] : split(tail);
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}

/** Takes one request's token for a key: 0 when allowed, else the whole seconds until one is due. */
export interface RequestBuckets {
  take(key: string): number | Promise<number>;
}

/** 429 `rate_limited` with Retry-After in seconds once a client address has spent its bucket. */
export function rateLimit(buckets: RequestBuckets): RequestHandler {
  return async (req, _res, next) => {
    const wait = await buckets.take(clientKey(req.ip));
    if (wait === 0) return next();
    next(new HttpProblem(429, 'rate_limited', {}, { 'Retry-After': String(wait) }));
  };
}
