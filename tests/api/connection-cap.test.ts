import { connect, type Socket } from 'node:net';
import type { Server } from 'node:http';
import { expect } from 'chai';
import { createHttpServer, listen } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';

/** One keep-alive request on `socket`; resolves with the response's status line, or null if it closed. */
function ask(socket: Socket): Promise<string | null> {
  return new Promise((resolve) => {
    let answer = '';
    const onData = (chunk: Buffer) => {
      answer += chunk.toString();
      if (answer.includes('\r\n\r\n')) finish(answer.split('\r\n')[0]!);
    };
    const onClose = () => finish(null);
    const finish = (value: string | null) => {
      socket.off('data', onData).off('close', onClose);
      resolve(value);
    };
    socket.on('data', onData).once('close', onClose);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
  });
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

describe('the API server holds at most HTTP_MAX_CONNECTIONS sockets', () => {
  let server: Server;
  const sockets: Socket[] = [];
  let dropped = 0;
  beforeEach(async () => {
    const config = loadConfig({ HTTP_MAX_CONNECTIONS: '2', LOG_LEVEL: 'silent' });
    server = await listen(
      createHttpServer((_req, res) => res.end('ok'), config),
      0,
      '127.0.0.1',
    );
    server.on('drop', () => dropped++);
  });
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('drops a connection past the cap without an answer, and takes one again once a socket closes', async () => {
    const port = (server.address() as { port: number }).port;
    for (let i = 0; i < 2; i++) {
      const socket = await open(port);
      sockets.push(socket);
      expect(await ask(socket)).to.equal('HTTP/1.1 200 OK');
    }
    // Both sockets stay open (keep-alive): a third is over the cap.
    const third = await open(port);
    sockets.push(third);
    expect(await ask(third), 'the third socket is closed unanswered').to.equal(null);
    expect(dropped).to.equal(1);

    sockets[0]!.destroy();
    const deadline = Date.now() + 5_000;
    while ((await new Promise<number>((r) => server.getConnections((_e, n) => r(n)))) > 1) {
      if (Date.now() > deadline) throw new Error('the closed socket was never released');
      await new Promise((r) => setTimeout(r, 10));
    }
    const fourth = await open(port);
    sockets.push(fourth);
    expect(await ask(fourth)).to.equal('HTTP/1.1 200 OK');
  });
});
