// The helloworld add-on's agent runs from the tether image (`node /app/examples/helloworld-addon/
// helloworld.ts agent …`): the example is among the files the image build copies into /app.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { listAppFiles } from '../../src/image/app-files.ts';

const projectDir = fileURLToPath(new URL('../..', import.meta.url));

describe('tether image', () => {
  it('carries the helloworld add-on example next to src/', async () => {
    const { files } = await listAppFiles(projectDir);
    expect(files).toContain('examples/helloworld-addon/helloworld.ts');
    expect(files).toContain('src/addon/sdk/agent.ts');
  }, 60_000);
});
