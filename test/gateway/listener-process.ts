// The gateway's listener alone in a process of its own, for tests that need process-wide Node flags
// (NODE_OPTIONS=--insecure-http-parser): serves HTTP/1.1 and HTTP/2 with the serving certificate
// and client CA in the directory given as argument, answers every request 200, and prints
// `port <n>` once listening and `request <method> <url>` for each request it serves.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGatewayListener } from '../../src/gateway/listener.ts';
import { logger } from '../../src/log.ts';

const dir = process.argv[2] ?? '.';
const listener = createGatewayListener({
  tls: {
    certPem: readFileSync(join(dir, 'tls.crt'), 'utf8'),
    keyPem: readFileSync(join(dir, 'tls.key'), 'utf8'),
  },
  clientCaPem: readFileSync(join(dir, 'ca.crt'), 'utf8'),
  onRequest(req, res) {
    process.stdout.write(`request ${req.method} ${req.url}\n`);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-length': 2 }).end('ok'));
  },
  onUpgrade(_req, socket) {
    socket.destroy();
  },
  log: logger('gateway-listener'),
});
const port = await listener.listen(0, '127.0.0.1');
process.stdout.write(`port ${port}\n`);
process.once('SIGTERM', () => void listener.close().then(() => process.exit(0)));
