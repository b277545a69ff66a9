import http from 'node:http';
import type { RequestListener } from 'node:http';
import type { Config } from '../config.js';

/**
 * The API's HTTP server, hardened against slow and idle clients (slowloris): headers must arrive within
 * HTTP_HEADERS_TIMEOUT_MS and a whole request within HTTP_REQUEST_TIMEOUT_MS, checked every second; idle
 * keep-alive sockets close after 65 s (longer than common load balancers' 60 s, so they close first); at most
 * HTTP_MAX_CONNECTIONS sockets. None of these limits a response in progress, so a live stream lasts as long
 * as its token; its heartbeat keeps intermediaries from calling it idle.
 */
export function createHttpServer(app: RequestListener, config: Config): http.Server {
  const server = http.createServer(
    {
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: Math.max(config.HTTP_REQUEST_TIMEOUT_MS, config.HTTP_HEADERS_TIMEOUT_MS),
      connectionsCheckingInterval: Math.min(1000, config.HTTP_HEADERS_TIMEOUT_MS),
      keepAliveTimeout: 65_000,
      noDelay: true,
    },
    app,
  );
  server.maxConnections = config.HTTP_MAX_CONNECTIONS;
  // No socket inactivity timeout: a stream between heartbeats is quiet but alive.
  server.timeout = 0;
  return server;
}

/** Listens and resolves with the server once it is bound. */
export async function listen(server: http.Server, port: number, host: string): Promise<http.Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
