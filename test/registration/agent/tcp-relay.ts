// A TCP relay on 127.0.0.1 in front of a real apiserver that a test can cut and restore, to make
// the managed cluster's kube-apiserver unreachable for one agent without touching the shared one.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpRelay {
  /** https://127.0.0.1:<port>: the same TLS server, reached through the relay */
  url: string;
  /** drop every open connection and refuse new ones */
  cut(): void;
  /**
   * a black hole: open connections and new ones stay open but carry no byte, ever again (like a
   * middlebox that lost its state); restore() lets new connections through
   */
  silence(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpRelay(target: string): Promise<TcpRelay> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let cut = false;
  let silent = false;
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    if (cut) {
      client.destroy();
      return;
    }
    if (silent) {
      client.pause();
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      client.on('error', () => client.destroy());
      return;
    }
    const upstream = connect({ host: hostname, port: Number(port) });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.on('close', () => pairs.delete(pair));
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const relayPort = typeof address === 'object' && address ? address.port : 0;
  const dropAll = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    url: `https://127.0.0.1:${relayPort}`,
    cut() {
      cut = true;
      dropAll();
    },
    silence() {
      silent = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
      pairs.clear();
    },
    restore() {
      cut = false;
      silent = false;
    },
    close() {
      dropAll();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
