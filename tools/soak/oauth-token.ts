import type { ClientAuthMethod } from '../../src/domain/identity/index.js';

/** Form-encodes one credential for HTTP Basic as RFC 6749 §2.3.1 asks (then base64 of "id:secret"). */
export function basicAuthorization(clientId: string, clientSecret: string): string {
  const encode = (s: string) => new URLSearchParams({ s }).toString().slice(2);
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

/**
 * An access token from POST /v1/oauth/token (client_credentials), with the credentials sent the way the
 * client must send them. The soak's clients use it, and so do the tests and benchmarks.
 */
export async function requestToken(
  baseUrl: string,
  credentials: { clientId: string; clientSecret: string },
  method: ClientAuthMethod,
  scopes: string[] | undefined,
): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scopes) form.set('scope', scopes.join(' '));
  const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded' };
  if (method === 'basic') {
    headers.Authorization = basicAuthorization(credentials.clientId, credentials.clientSecret);
  } else {
    form.set('client_id', credentials.clientId);
    form.set('client_secret', credentials.clientSecret);
  }
  const response = await fetch(`${baseUrl}/v1/oauth/token`, {
    method: 'POST',
    headers,
    body: form,
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { access_token?: string; error?: string };
  if (response.status !== 200 || !body.access_token) {
    throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.access_token;
}
