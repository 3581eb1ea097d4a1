// docs/security.md shows each hub credential's rights exactly as test/e2e/fixtures/hub-rights.ts lists them.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderHubRights, securityDoc, withSection } from './hub-rights-table.ts';

describe('docs/security.md', () => {
  it('lists each hub credential’s rights as the list the e2e test checks (else run node test/docs/hub-rights-table.ts)', () => {
    const doc = readFileSync(securityDoc, 'utf8');
    expect(doc).toBe(withSection(doc, renderHubRights()));
  });
});
