// HTTP/1.1 request-smuggling payloads and a raw TLS client that sends them as an attacker would
// (bytes on the wire, no HTTP library in between), for the CONNECT frontend and gateway tests.
// Every payload is a first request whose framing is ambiguous or malformed, followed by a second
// request that a server reading the framing leniently (or differently from a proxy in front of it)
// would run. A server that is safe answers 400 and runs neither, or frames it strictly so that the
// second request stays inside the first's body.
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';

/**
 * The attacks: `head` is a request line plus headers, each line ending in CRLF, without the blank
 * line; `smuggled` is a complete second request. Returns the bytes to send.
 */
export const smugglingAttacks = {
  /** CL.TE: a Content-Length that covers the smuggled request, a chunked body that ends before it */
  contentLengthWithChunked: (head: string, smuggled: string) =>
    `${head}Content-Length: ${5 + smuggled.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
  /** two Content-Length headers that disagree */
  twoContentLengths: (head: string, smuggled: string) =>
    `${head}Content-Length: 0\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
  /** chunked not last: the body is not chunked, so its length is unknown */
  chunkedThenIdentity: (head: string, smuggled: string) =>
    `${head}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n${smuggled}`,
  /** a transfer coding that merely contains "chunked" */
  xchunked: (head: string, smuggled: string) =>
    `${head}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n${smuggled}`,
  /** whitespace between the header name and its colon */
  spaceBeforeColon: (head: string, smuggled: string) =>
    `${head}Transfer-Encoding : chunked\r\nContent-Length: ${5 + smuggled.length}\r\n\r\n0\r\n\r\n${smuggled}`,
  /** a vertical tab before the value */
  verticalTabInValue: (head: string, smuggled: string) =>
    `${head}Transfer-Encoding:\x0bchunked\r\nContent-Length: ${5 + smuggled.length}\r\n\r\n0\r\n\r\n${smuggled}`,
  /** obs-fold: Transfer-Encoding's value continued on the next line */
  foldedTransferEncoding: (head: string, smuggled: string) =>
    `${head}Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n${smuggled}`,
  /** obs-fold: an ordinary header continued with a tab */
  foldedHeader: (head: string, smuggled: string) =>
    `${head}X-Folded: a\r\n\tb\r\nContent-Length: 0\r\n\r\n${smuggled}`,
  /** bare LF line endings throughout the first request */
  bareLineFeeds: (head: string, smuggled: string) =>
    `${head.replace(/\r\n/g, '\n')}Content-Length: 0\n\n${smuggled}`,
  /** a chunk size past 64 bits that wraps to 5 in a parser without an overflow check */
  chunkSizeOverflow: (head: string, smuggled: string) =>
    `${head}Transfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n${smuggled}`,
  /** a chunk extension ended by a bare LF */
  chunkExtensionBareLineFeed: (head: string, smuggled: string) =>
    `${head}Transfer-Encoding: chunked\r\n\r\n5;ext=x\nhello\r\n0\r\n\r\n${smuggled}`,
  /**
   * no ambiguity at all: the second request is the first one's body, as Content-Length says (and
   * the connection ends with the answer, so nothing after the body is even read)
   */
  requestInBody: (head: string, smuggled: string) =>
    `${head}Connection: close\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`,
} satisfies Record<string, (head: string, smuggled: string) => string>;

export type SmugglingAttack = keyof typeof smugglingAttacks;

/** What came back on one raw connection: every status line, the raw text, and who closed it. */
export interface RawExchange {
  statuses: number[];
  raw: string;
  /** false when the connection was still open after the wait (then the client closed it) */
  closedByServer: boolean;
}

/**
 * Opens a TLS connection, writes `payload` and collects everything until the server closes, or for
 * at most `waitMs`: a server that refuses closes at once, so the wait runs out only when something
 * was served (a tunnel, a kept-alive connection).
 */
export function sendRaw(tls: ConnectionOptions, payload: string, waitMs = 3000): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ servername: 'localhost', ALPNProtocols: ['http/1.1'], ...tls });
    let raw = '';
    let closedByServer = true;
    const timer = setTimeout(() => {
      closedByServer = false;
      socket.destroy();
    }, waitMs);
    socket.on('error', () => {});
    socket.once('secureConnect', () => socket.write(Buffer.from(payload, 'latin1')));
    socket.on('data', (d: Buffer) => {
      raw += d.toString('latin1');
    });
    socket.once('close', () => {
      clearTimeout(timer);
      const statuses = [...raw.matchAll(/^HTTP\/1\.1 (\d{3}) /gm)].map((m) => Number(m[1]));
      resolve({ statuses, raw, closedByServer });
    });
  });
}
