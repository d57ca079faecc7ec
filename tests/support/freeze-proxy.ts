import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of PostgreSQL that a test can freeze: while
 * frozen it accepts connections and keeps every socket open but forwards
 * nothing, in either direction, like a database host that stopped answering
 * or a network that dropped every packet. Thawed, it forwards again; a
 * connection whose client went away while frozen is then closed towards the
 * server too (the server rolls back what that client left open).
 */
export class FreezeProxy {
  private server: Server;
  private frozen = false;
  private pairs = new Set<{ client: Socket; upstream: Socket; held: [Socket, Buffer][]; clientGone: boolean }>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    this.server = createServer((client) => this.accept(client));
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  private accept(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    const pair = { client, upstream, held: [] as [Socket, Buffer][], clientGone: false };
    this.pairs.add(pair);
    const forward = (to: Socket) => (data: Buffer) => {
      if (this.frozen) pair.held.push([to, data]);
      else if (!to.destroyed) to.write(data);
    };
    client.on('data', forward(upstream));
    upstream.on('data', forward(client));
    const close = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => {
      pair.clientGone = true;
      if (!this.frozen) close();
    });
    upstream.on('close', () => {
      if (!this.frozen) close();
    });
    client.on('error', () => {});
    upstream.on('error', () => {});
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const pair of [...this.pairs]) {
      if (pair.clientGone || pair.upstream.destroyed) {
        // What a vanished client had sent is lost with it, as on a cut network.
        this.pairs.delete(pair);
        pair.client.destroy();
        pair.upstream.destroy();
        continue;
      }
      for (const [to, data] of pair.held) to.write(data);
      pair.held = [];
    }
  }

  async close(): Promise<void> {
    this.frozen = false;
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    await new Promise((resolve) => this.server.close(resolve));
  }
}
