import net from 'node:net';

/**
 * A loopback L4 TCP balancer, as HAProxy in `mode tcp` stands in front of the broker nodes: bytes are passed
 * through untouched, so TLS (and the agent's client certificate) still ends in the broker. Each front is
 * one port with a preferred backend; a connection goes to the preferred backend, or to the next one that
 * accepts when it is down. For the multi-process test and benchmark only: one front per simulated agent
 * makes "this agent is on that node" something a test can steer.
 */
export class TcpBalancer {
  readonly #fronts = new Set<BalancerFront>();

  constructor(private readonly backends: readonly number[]) {}

  async front(preferred: number): Promise<BalancerFront> {
    const front = new BalancerFront(this.backends, preferred);
    await front.listen();
    this.#fronts.add(front);
    return front;
  }

  close(): void {
    for (const front of this.#fronts) front.close();
    this.#fronts.clear();
  }
}

interface Pair {
  readonly client: net.Socket;
  readonly upstream: net.Socket;
  readonly backend: number;
}

export class BalancerFront {
  readonly #server = net.createServer((client) => this.#accept(client));
  readonly #pairs = new Set<Pair>();
  readonly #staleSockets = new Set<net.Socket>();
  #blocked = false;
  /** Upstream connections left open when the agent was moved: the node they lead to should close them. */
  readonly stale: { readonly backend: number; closedAtMs: number | undefined }[] = [];
  port = 0;

  constructor(
    private readonly backends: readonly number[],
    public preferred: number,
  ) {}

  async listen(): Promise<void> {
    this.#server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      this.#server.once('listening', resolve);
      this.#server.once('error', reject);
    });
    this.port = (this.#server.address() as net.AddressInfo).port;
  }

  /** The backend index of each connection open through this front. */
  get connectedTo(): number[] {
    return [...this.#pairs].map((p) => p.backend);
  }

  /**
   * Sends the agent to another backend the way a rebalanced load balancer does to a long-lived connection
   * it drops: the agent's side is cut (it reconnects, now to `to`) while the old node's side is left open,
   * silent, as a half-open connection would be. The old node must close it when the agent shows up on `to`.
   */
  move(to: number): void {
    this.preferred = to;
    for (const pair of this.#pairs) {
      this.#pairs.delete(pair);
      pair.client.unpipe(pair.upstream);
      pair.upstream.unpipe(pair.client);
      const stale = { backend: pair.backend, closedAtMs: undefined as number | undefined };
      this.stale.push(stale);
      this.#staleSockets.add(pair.upstream);
      pair.upstream.once('close', () => {
        stale.closedAtMs = Date.now();
        this.#staleSockets.delete(pair.upstream);
      });
      // Whatever the old node still sends is dropped. A paused socket would hold its FIN behind unread
      // bytes, and the node's close would never be seen.
      pair.upstream.resume();
      pair.client.destroy();
    }
  }

  /** Refuses every new connection: an agent whose network is gone for good. Open ones are left alone. */
  block(): void {
    this.#blocked = true;
  }

  close(): void {
    this.#server.close();
    for (const pair of this.#pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.#pairs.clear();
    for (const socket of this.#staleSockets) socket.destroy();
    this.#staleSockets.clear();
  }

  #accept(client: net.Socket): void {
    if (this.#blocked) return void client.destroy();
    client.pause();
    client.on('error', () => undefined);
    const order = this.backends.map((_, i) => (this.preferred + i) % this.backends.length);
    const attempt = (n: number) => {
      if (n >= order.length || client.destroyed) return void client.destroy();
      const backend = order[n]!;
      const upstream = net.connect(this.backends[backend]!, '127.0.0.1');
      let connected = false;
      upstream.on('error', () => {
        if (!connected) attempt(n + 1); // that node is down: the next one
      });
      upstream.once('connect', () => {
        connected = true;
        const pair = { client, upstream, backend };
        this.#pairs.add(pair);
        const end = () => {
          if (!this.#pairs.delete(pair)) return;
          client.destroy();
          upstream.destroy();
        };
        client.once('close', end);
        upstream.once('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
      });
    };
    attempt(0);
  }
}
