// kubectl-style table output: upper-case headers, columns padded with three spaces.

export function formatTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/** "5s", "3m", "2h", "4d" — the AGE column kubectl prints. */
export function age(since: string | Date | undefined, now = Date.now()): string {
  if (!since) return '<unknown>';
  const secs = Math.max(0, Math.floor((now - new Date(since).getTime()) / 1000));
  if (secs < 120) return `${secs}s`;
  if (secs < 7200) return `${Math.floor(secs / 60)}m`;
  if (secs < 48 * 3600) return `${Math.floor(secs / 3600)}h`;
  return `${Math.floor(secs / 86400)}d`;
}
