// Fixtures for HA proxy-server tests with real processes: proxy-server replicas and a proxy-agent
// run as `tether` children (SupervisedProcess, so a replica can be killed and started again with
// the same command line), a round-robin TCP load balancer on loopback, and readers for what the
// processes report (their metrics, and the tunnels a replica accepted according to its log).
import { readFileSync } from 'node:fs';
import { type AddressInfo, createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { request } from 'undici';
import { freePort, localChildEnv, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';

/** PEM files the processes read: hub CA, serving pair, agent pair, hub-service client pair. */
export interface HaFiles {
  dir: string;
  ca: string;
  serverCert: string;
  serverKey: string;
  agentCert: string;
  agentKey: string;
  clientCa: string;
  clientCert: string;
  clientKey: string;
}

export interface Replica {
  id: string;
  count: number;
  /** the running process; restartReplica replaces it */
  proc: SupervisedProcess;
  agentPort: number;
  connectPort: number;
  opsPort: number;
}

const childEnv = (): NodeJS.ProcessEnv => localChildEnv({ ...process.env, TETHER_LOG_LEVEL: 'info' });

function spawnReplica(files: HaFiles, r: Omit<Replica, 'proc'>): SupervisedProcess {
  return new SupervisedProcess({
    name: `proxy-server ${r.id}`,
    command: process.execPath,
    args: [
      tetherBin,
      'proxy-server',
      '--bind-address=127.0.0.1',
      `--agent-port=${r.agentPort}`,
      `--connect-port=${r.connectPort}`,
      `--ops-port=${r.opsPort}`,
      `--server-id=${r.id}`,
      `--server-count=${r.count}`,
      `--tls-cert-file=${files.serverCert}`,
      `--tls-key-file=${files.serverKey}`,
      `--agent-ca-file=${files.ca}`,
      `--proxy-client-ca-file=${files.clientCa}`,
      // No hub in these tests: agents are taken on their certificate alone.
      '--insecure-skip-hub-checks',
    ],
    // Appended to across restarts, so acceptedTunnels sees every run.
    logFile: join(files.dir, `proxy-server-${r.id}.log`),
    env: childEnv(),
  });
}

/** Starts `tether proxy-server` replica `id` of `count`; resolves once it is ready. */
export async function startReplica(files: HaFiles, id: string, count: number): Promise<Replica> {
  const r = {
    id,
    count,
    agentPort: await freePort(),
    connectPort: await freePort(),
    opsPort: await freePort(),
  };
  const replica = { ...r, proc: spawnReplica(files, r) };
  await waitReady(replica.proc, r.opsPort, 20_000);
  return replica;
}

/** Starts a stopped replica again with the same id, ports and log; resolves once it is ready. */
export async function restartReplica(files: HaFiles, replica: Replica): Promise<void> {
  if (replica.proc.running) throw new Error(`${replica.proc.name} still runs`);
  replica.proc = spawnReplica(files, replica);
  await waitReady(replica.proc, replica.opsPort, 20_000);
}

/** Starts `tether proxy-agent` for cluster1 dialling `servers`; resolves once it holds a tunnel. */
export async function startAgentProcess(
  files: HaFiles,
  servers: string[],
  targetPort: number,
): Promise<{ proc: SupervisedProcess; opsPort: number }> {
  const opsPort = await freePort();
  const proc = new SupervisedProcess({
    name: 'proxy-agent',
    command: process.execPath,
    args: [
      tetherBin,
      'proxy-agent',
      '--cluster-name=cluster1',
      '--agent-id=agent-a',
      ...servers.map((s) => `--proxy-server=${s}`),
      `--cert-file=${files.agentCert}`,
      `--key-file=${files.agentKey}`,
      `--hub-ca-file=${files.ca}`,
      `--kube-apiserver=127.0.0.1:${targetPort}`,
      `--ops-port=${opsPort}`,
    ],
    logFile: join(files.dir, 'proxy-agent.log'),
    env: childEnv(),
  });
  await waitReady(proc, opsPort, 20_000);
  return { proc, opsPort };
}

/**
 * Tunnel connections the replica took to the hello (across restarts) whose log line is stamped at
 * or after `sinceMs`: each ends in "agent connected", or "agent hello failed" when the agent dropped
 * it at once (the old agent's duplicates). Counted by the line's own `time`, not by its position in
 * the file: a line reaches the file through the child's and this process's asynchronous writes, so
 * under load the line of a tunnel accepted before a snapshot can land in the file after it.
 */
export function acceptedTunnels(replica: Replica, sinceMs = 0): string[] {
  const log = readFileSync(replica.proc.logFile, 'utf8');
  return log
    .split('\n')
    .filter((l) => l.includes('"msg":"agent connected"') || l.includes('"msg":"agent hello failed"'))
    .filter((l) => {
      const time = lineTime(l);
      // a line still being written has no time yet: it is counted once complete
      return time !== undefined && time >= sinceMs;
    });
}

function lineTime(line: string): number | undefined {
  try {
    const time = (JSON.parse(line) as { time?: unknown }).time;
    return typeof time === 'number' ? time : undefined;
  } catch {
    return undefined;
  }
}

/** One sample value from a Prometheus text page (first series whose name+labels start with `series`). */
export async function scrape(opsPort: number, series: string): Promise<number | undefined> {
  const res = await request(`http://127.0.0.1:${opsPort}/metrics`);
  const text = await res.body.text();
  const line = text.split('\n').find((l) => l.startsWith(series));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** `CONNECT cluster1:443` on a replica's frontend as a hub service; resolves with the status line. */
export function connectFrontend(
  files: HaFiles,
  port: number,
): Promise<{ status: number; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({
      host: '127.0.0.1',
      port,
      ca: readFileSync(files.ca),
      cert: readFileSync(files.clientCert),
      key: readFileSync(files.clientKey),
    });
    s.once('error', reject);
    s.once('secureConnect', () => s.write('CONNECT cluster1:443 HTTP/1.1\r\n\r\n'));
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n\r\n')) {
        s.off('data', onData);
        resolve({ status: Number(buf.slice(9, 12)), socket: s });
      }
    };
    s.on('data', onData);
  });
}

/** Writes `text` and resolves with what comes back (an echo target), keeping the socket open. */
export function echoOnce(socket: Duplex, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const onData = (d: Buffer): void => {
      got += d.toString();
      if (got.length >= text.length) {
        socket.off('data', onData);
        socket.off('error', reject);
        resolve(got);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(text);
  });
}

/**
 * A TCP load balancer on loopback that hands each new connection to the next backend in turn,
 * like a Service or an L4 cloud balancer without health checks: a connection to a dead backend
 * is closed.
 */
export async function roundRobinBalancer(
  backends: number[],
): Promise<{ port: number; close: () => Promise<void> }> {
  let next = 0;
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.on('error', () => {});
    s.once('close', () => sockets.delete(s));
  };
  const server: Server = createServer((client) => {
    track(client);
    const port = backends[next++ % backends.length] as number;
    const upstream = netConnect({ host: '127.0.0.1', port });
    track(upstream);
    upstream.once('error', () => client.destroy());
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
