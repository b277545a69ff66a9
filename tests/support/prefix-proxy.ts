import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback reverse proxy that publishes an API under a path prefix, as a deployment at
 * https://host/devcloud would: `<prefix>/…` reaches the API as `/…`, and the RFC 8414 metadata path for
 * an issuer with that path, `/.well-known/oauth-authorization-server<prefix>`, is forwarded unchanged.
 * Anything else answers 404 from the proxy itself, so a client that drops the prefix fails visibly.
 * It listens before the API starts, so the API's PUBLIC_BASE_URL can name it; `target` is set afterwards.
 */
export interface PrefixProxy {
  /** `http://127.0.0.1:PORT<prefix>`: the base URL clients are given. */
  readonly baseUrl: string;
  /** Every request path the proxy received, in order. */
  readonly paths: string[];
  /** Each path the API answered and its status, as the answer's headers arrived (a stream's on opening). */
  readonly answers: { readonly path: string; readonly status: number }[];
  /** The API's origin, once it runs. */
  target: string | undefined;
  close(): Promise<void>;
}

export async function startPrefixProxy(prefix: string): Promise<PrefixProxy> {
  const metadataPath = `/.well-known/oauth-authorization-server${prefix}`;
  const paths: string[] = [];
  const answers: PrefixProxy['answers'] = [];
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    paths.push(url);
    const path = url.split('?')[0]!;
    let upstreamUrl: string | undefined;
    if (path === metadataPath) upstreamUrl = url;
    else if (prefix === '' || path === prefix || path.startsWith(`${prefix}/`)) {
      upstreamUrl = url.slice(prefix.length) || '/';
    }
    if (upstreamUrl === undefined || proxy.target === undefined) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not behind this proxy');
      return;
    }
    const upstream = request(
      new URL(upstreamUrl, proxy.target),
      { method: req.method, headers: { ...req.headers, host: new URL(proxy.target).host } },
      (answer) => {
        answers.push({ path: url, status: answer.statusCode ?? 0 });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        // Streams (text/event-stream) pass through as they come.
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  };
  const server = createServer(forward);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const proxy: PrefixProxy = {
    baseUrl: `http://127.0.0.1:${port}${prefix}`,
    paths,
    answers,
    target: undefined,
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
