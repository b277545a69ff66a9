import { createServer } from 'node:net';

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/** A TCP port free on the loopback interface right now: `preferred` if nothing holds it, else one the OS picks. */
export async function freePort(preferred?: number): Promise<number> {
  const port = (preferred ? await tryListen(preferred) : undefined) ?? (await tryListen(0));
  if (port === undefined) throw new Error('no free TCP port on 127.0.0.1');
  return port;
}
