// For "no token, key or bootstrap secret appears in any log line": every credential a running
// environment holds (read from its Secrets and files, as an admin), and a scan of log text for
// those values and for credential shapes (PEM private keys, JWTs).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { kubectl } from './helpers.ts';

/** A credential to look for: the text that must not appear and what it is, for the failure message. */
export interface Credential {
  needle: string;
  what: string;
}

interface SecretList {
  items: Array<{
    type?: string;
    metadata: { namespace?: string; name?: string };
    data?: Record<string, string>;
  }>;
}

/** Shorter strings would match by chance; every real credential is longer. */
const MIN_NEEDLE = 12;

/** Distinctive chunks of a PEM private key: its first body line, and the same bytes as stored base64. */
function keyNeedles(pem: string, what: string): Credential[] {
  const out: Credential[] = [];
  for (const block of pem.matchAll(/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----\s*([\s\S]*?)-----END/g)) {
    const body = (block[1] ?? '').replace(/\s+/g, '');
    // key material in any line wrapping: 40 characters from the body
    out.push({ needle: body.slice(8, 48), what: `${what} (private key material)` });
  }
  if (out.length > 0) {
    const b64 = Buffer.from(pem).toString('base64');
    out.push({ needle: b64.slice(80, 140), what: `${what} (private key, base64)` });
  }
  return out;
}

/** Tokens and keys in a kubeconfig's users. */
function kubeconfigNeedles(yaml: string, what: string): Credential[] {
  const out: Credential[] = [];
  let doc: { users?: Array<{ name?: string; user?: Record<string, unknown> }> };
  try {
    doc = parse(yaml) ?? {};
  } catch {
    return out;
  }
  for (const u of doc.users ?? []) {
    const user = u.user ?? {};
    if (typeof user.token === 'string')
      out.push({ needle: user.token, what: `${what} user ${u.name} token` });
    if (typeof user['client-key-data'] === 'string') {
      const pem = Buffer.from(user['client-key-data'], 'base64').toString();
      out.push(...keyNeedles(pem, `${what} user ${u.name} client key`));
    }
    if (typeof user.password === 'string') out.push({ needle: user.password, what: `${what} password` });
  }
  return out;
}

/** Every token, key and password in every Secret the kubeconfig's cluster holds. */
export async function secretCredentials(kubeconfig: string, cluster: string): Promise<Credential[]> {
  const list = JSON.parse(await kubectl(kubeconfig, ['get', 'secrets', '-A', '-o', 'json'])) as SecretList;
  const out: Credential[] = [];
  for (const s of list.items) {
    const where = `${cluster} Secret ${s.metadata.namespace}/${s.metadata.name}`;
    const data = Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    if (s.type === 'bootstrap.kubernetes.io/token' && data['token-id'] && data['token-secret']) {
      out.push({ needle: `${data['token-id']}.${data['token-secret']}`, what: `${where} bootstrap token` });
      out.push({ needle: data['token-secret'], what: `${where} bootstrap token secret` });
    }
    for (const [key, value] of Object.entries(data)) {
      if (key === 'token' || key === 'password') out.push({ needle: value, what: `${where} ${key}` });
      if (value.includes('PRIVATE KEY')) out.push(...keyNeedles(value, `${where} ${key}`));
      if (/kubeconfig/i.test(key)) out.push(...kubeconfigNeedles(value, `${where} ${key}`));
    }
  }
  return out.filter((c) => c.needle.length >= MIN_NEEDLE);
}

/** Every file under `dir`, recursively. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** Log files a local environment writes: process output (*.log, *.out). */
export function isLogFile(path: string): boolean {
  return /\.(log|out)$/.test(path);
}

/** Tokens and keys in the kubeconfigs and key files of `dir` (admin, gateway, PKI on disk). */
export function fileCredentials(dir: string): Credential[] {
  const out: Credential[] = [];
  for (const path of filesUnder(dir)) {
    if (path.endsWith('kubeconfig')) out.push(...kubeconfigNeedles(readFileSync(path, 'utf8'), path));
    else if (/\.(key|pem)$/.test(path)) out.push(...keyNeedles(readFileSync(path, 'utf8'), path));
  }
  return out.filter((c) => c.needle.length >= MIN_NEEDLE);
}

/** Credential shapes that must never be logged, whoever they belong to. */
const SHAPES: Array<[RegExp, string]> = [
  [/PRIVATE KEY/, 'a PEM private key'],
  [/eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+/, 'a JWT bearer token'],
];

/** Each place a credential or credential shape appears in `text`, as "<source>: <what>". */
export function leaksIn(source: string, text: string, credentials: Credential[]): string[] {
  const found: string[] = [];
  for (const c of credentials) if (text.includes(c.needle)) found.push(`${source}: ${c.what}`);
  for (const [shape, what] of SHAPES) {
    const m = shape.exec(text);
    if (m) {
      const line = text.slice(0, m.index).split('\n').length;
      found.push(`${source}:${line}: ${what}`);
    }
  }
  return found;
}
