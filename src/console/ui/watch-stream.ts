// Splits a Kubernetes watch response (newline-delimited JSON, arriving in chunks that cut lines
// and UTF-8 characters anywhere) into watch events. Pure: no DOM, no fetch, so unit tests run it
// in Node; watch.ts feeds it the bytes of a streaming fetch.

/** One event of a watch: ADDED / MODIFIED / DELETED carry the object, BOOKMARK a resourceVersion
 * only, ERROR a Status (410 Gone when the resourceVersion is too old). */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: Record<string, unknown>;
}

/** A line longer than this is refused: the stream is broken or hostile (the apiserver's own limit
 * on an object is about 1.5 MiB of JSON; 16 MiB leaves room for an escaped one). */
export const MAX_WATCH_LINE_CHARS = 16 * 1024 * 1024;

const EVENT_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

/** A line that is not a watch event. */
export class WatchStreamError extends Error {
  override name = 'WatchStreamError';
}

/**
 * Incremental parser: `push` each chunk, get back the complete events it finished; `end` when the
 * stream ends (a partial last line is an error: the stream was cut).
 */
export class WatchLineParser {
  #decoder = new TextDecoder();
  #pending = '';

  push(chunk: Uint8Array): WatchEvent[] {
    this.#pending += this.#decoder.decode(chunk, { stream: true });
    const events: WatchEvent[] = [];
    let nl = this.#pending.indexOf('\n');
    while (nl >= 0) {
      const line = this.#pending.slice(0, nl);
      this.#pending = this.#pending.slice(nl + 1);
      if (line.trim() !== '') events.push(parseWatchLine(line));
      nl = this.#pending.indexOf('\n');
    }
    if (this.#pending.length > MAX_WATCH_LINE_CHARS) {
      throw new WatchStreamError(`watch line longer than ${MAX_WATCH_LINE_CHARS} characters`);
    }
    return events;
  }

  /** The event of a last line without a newline, if any (the apiserver ends every line with one). */
  end(): WatchEvent[] {
    this.#pending += this.#decoder.decode();
    const rest = this.#pending.trim();
    this.#pending = '';
    return rest === '' ? [] : [parseWatchLine(rest)];
  }
}

/** One line of a watch stream as an event; throws WatchStreamError for anything else. */
export function parseWatchLine(line: string): WatchEvent {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new WatchStreamError(`watch line is not JSON: ${line.slice(0, 80)}`);
  }
  if (typeof value !== 'object' || value === null) throw new WatchStreamError('watch line is not an object');
  const { type, object } = value as { type?: unknown; object?: unknown };
  if (typeof type !== 'string' || !EVENT_TYPES.has(type)) {
    throw new WatchStreamError(`watch event has unknown type ${JSON.stringify(type)}`);
  }
  if (typeof object !== 'object' || object === null) throw new WatchStreamError('watch event has no object');
  return { type: type as WatchEvent['type'], object: object as Record<string, unknown> };
}
