// An agent inherits nothing from the engine but its three pipes: not the listening socket, not a
// page's connection, not the grants lock, not engine.lock (an agent outliving a killed engine would
// keep its home locked). A wrapper script lists its descriptors before it becomes the scripted ACP agent.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { startEngine, stopAll, makeHome, local, poll, ROOT } from './helpers.mjs';

after(stopAll);

describe('agent process descriptors', { timeout: 30000 }, () => {
  it('only stdin, stdout and stderr cross into the agent', async () => {
    const home = await makeHome();
    const list = path.join(home, 'fds.txt');
    const wrapper = path.join(home, 'agent.sh');
    await fsp.writeFile(wrapper, `#!/bin/bash\nls /proc/$$/fd > '${list}'\nexec '${path.join(ROOT, 'tests/fakes/acp-agent.mjs')}'\n`, { mode: 0o755 });
    await fsp.writeFile(path.join(home, 'config.json'),
      JSON.stringify({ agent: 'wrapped', agents: { wrapped: { name: 'Wrapped', command: wrapper, args: [] } } }));
    const eng = await startEngine({ home });
    const prep = await local(eng, '/session/prepare', { method: 'POST', body: {} });
    assert.equal(prep.status, 201, prep.body);
    assert.equal((await local(eng, `/session/${prep.json.sessionId}/approve`, { method: 'POST' })).status, 200);
    const text = await poll(async () => (await fsp.readFile(list, 'utf8').catch(() => '')) || undefined, { timeoutMs: 5000 });
    // bash keeps its own script open on descriptor 255; anything from 3 up to 254 came from us.
    const fds = text.split(/\s+/).filter(Boolean).map(Number).filter((n) => n < 255);
    assert.deepEqual(fds, [0, 1, 2], `inherited descriptors: ${text}`);
    await local(eng, `/session/${prep.json.sessionId}/close`, { method: 'POST' });
    await eng.stop();
    await fsp.rm(home, { recursive: true, force: true });
  });
});
