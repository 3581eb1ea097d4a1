// The watch-stream line parser the console page feeds a streaming fetch into: lines cut anywhere,
// UTF-8 characters split across chunks, bookmarks and 410 errors, and what it refuses.
import { describe, expect, it } from 'vitest';
import {
  MAX_WATCH_LINE_CHARS,
  parseWatchLine,
  WatchLineParser,
  WatchStreamError,
} from '../../src/console/ui/watch-stream.ts';

const enc = new TextEncoder();
const line = (type: string, object: unknown): string => `${JSON.stringify({ type, object })}\n`;

describe('WatchLineParser', () => {
  it('yields each event once its line is complete, however the stream is cut', () => {
    const text =
      line('ADDED', { metadata: { name: 'cluster1', resourceVersion: '10' } }) +
      line('BOOKMARK', { metadata: { resourceVersion: '12' } }) +
      line('DELETED', { metadata: { name: 'cluster2', resourceVersion: '13' } });
    const bytes = enc.encode(text);
    for (const cut of [1, 7, 50, bytes.length - 1]) {
      const p = new WatchLineParser();
      const events = [...p.push(bytes.subarray(0, cut)), ...p.push(bytes.subarray(cut)), ...p.end()];
      expect(events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK', 'DELETED']);
      expect(events[1]?.object).toEqual({ metadata: { resourceVersion: '12' } });
    }
  });

  it('keeps a UTF-8 character split between chunks intact', () => {
    const bytes = enc.encode(
      line('MODIFIED', { metadata: { name: 'c', annotations: { note: 'Zürich ✓' } } }),
    );
    const at = bytes.indexOf(0xc3) + 1; // inside the two bytes of ü
    const p = new WatchLineParser();
    expect(p.push(bytes.subarray(0, at))).toEqual([]);
    const [event] = p.push(bytes.subarray(at));
    expect(event?.object.metadata).toMatchObject({ annotations: { note: 'Zürich ✓' } });
  });

  it('passes an ERROR event with its Status (410 Gone: list again)', () => {
    const p = new WatchLineParser();
    const [event] = p.push(enc.encode(line('ERROR', { kind: 'Status', code: 410, reason: 'Expired' })));
    expect(event).toEqual({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } });
  });

  it('skips blank lines and takes a last line without a newline at the end', () => {
    const p = new WatchLineParser();
    expect(p.push(enc.encode('\n\n'))).toEqual([]);
    expect(p.push(enc.encode(line('ADDED', { metadata: { name: 'a' } }).trimEnd()))).toEqual([]);
    expect(p.end().map((e) => e.type)).toEqual(['ADDED']);
  });

  it('refuses a line that never ends', () => {
    const p = new WatchLineParser();
    const chunk = enc.encode('x'.repeat(1024 * 1024));
    expect(() => {
      for (let sent = 0; sent <= MAX_WATCH_LINE_CHARS; sent += chunk.length) p.push(chunk);
    }).toThrow(WatchStreamError);
  });
});

describe('parseWatchLine', () => {
  it('refuses what is not a watch event', () => {
    for (const bad of [
      'not json',
      '42',
      'null',
      '{"type":"ADDED"}',
      '{"type":"SYNC","object":{}}',
      '{"object":{}}',
    ]) {
      expect(() => parseWatchLine(bad), bad).toThrow(WatchStreamError);
    }
  });
});
