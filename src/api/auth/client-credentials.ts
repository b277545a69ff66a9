import type { Request } from 'express';
import { HttpProblem } from '../http-errors.js';

/** Every failed client authentication answers exactly this: the body and headers say nothing of why. */
export const invalidClient = () =>
  new HttpProblem(
    401,
    'invalid_client',
    {},
    { 'WWW-Authenticate': 'Basic realm="device-cloud", charset="UTF-8"' },
  );

export const invalidRequest = (description: string) =>
  new HttpProblem(400, 'invalid_request', { error_description: description });

export interface ClientCredentials {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly method: 'basic' | 'post';
}

/** A form field that appears at most once (RFC 6749 §3.2: parameters MUST NOT repeat). */
export function formField(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  if (Array.isArray(value)) throw invalidRequest(`${name} is repeated`);
  return typeof value === 'string' ? value : undefined;
}

/**
 * The client's credentials from HTTP Basic (RFC 6749 §2.3.1: id and secret are form-urlencoded, then
 * joined by ':' and base64-encoded) or from the form body. Using both at once is refused, as the RFC
 * requires; no credentials at all is a failed client authentication.
 */
export function clientCredentials(req: Request, body: Record<string, unknown>): ClientCredentials {
  const formId = formField(body, 'client_id');
  const formSecret = formField(body, 'client_secret');
  const header = req.get('authorization');
  if (header !== undefined) {
    const basic = parseBasic(header);
    if (!basic) throw invalidClient();
    if (formSecret !== undefined) throw invalidRequest('more than one client authentication method');
    if (formId !== undefined && formId !== basic.clientId) {
      throw invalidRequest('client_id differs from the Basic credentials');
    }
    return { ...basic, method: 'basic' };
  }
  if (formId === undefined && formSecret === undefined) throw invalidClient();
  if (formId === undefined || formId === '') throw invalidRequest('client_id is missing');
  if (formSecret === undefined || formSecret === '') throw invalidRequest('client_secret is missing');
  return { clientId: formId, clientSecret: formSecret, method: 'post' };
}

function parseBasic(header: string): { clientId: string; clientSecret: string } | undefined {
  const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  const clientId = formDecode(decoded.slice(0, colon));
  const clientSecret = formDecode(decoded.slice(colon + 1));
  if (!clientId || !clientSecret) return undefined;
  return { clientId, clientSecret };
}

/** application/x-www-form-urlencoded decoding: '+' is a space, then percent-decoding; malformed is nothing. */
function formDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}
