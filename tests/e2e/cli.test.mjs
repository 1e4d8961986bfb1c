// Command line: flags, --version, help, a busy port, where the port comes from, and one engine per LEURIA_HOME.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startEngine, stopAll, runCli, makeHome, busyPort, local, VERSION, BIN, cleanEnv, ADMIN_TOKEN, tryJson } from './helpers.mjs';

const LISTEN_RE = /^Leuria engine listening on http:\/\/127\.0\.0\.1:(\d+)$/;

async function homeWithConfig(config) {
  const home = await makeHome();
  if (config !== undefined) await fsp.writeFile(path.join(home, 'config.json'), typeof config === 'string' ? config : JSON.stringify(config), { mode: 0o600 });
  return home;
}

/** Listens on host:port; resolves { server } or { code } (the listen's error code). */
function listenOn(host, port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (e) => resolve({ code: e.code }));
    server.listen({ host, port, ipv6Only: true }, () => resolve({ server }));
  });
}

function assertBusy(r, port) {
  assert.equal(r.timedOut, false, `the engine should have failed on busy port ${port}, it kept running; stdout: ${r.stdout}`);
  assert.equal(r.code, 1, `exit code; stderr: ${r.stderr}`);
  const lines = r.stderr.split('\n').filter((l) => l.trim());
  assert.equal(lines.length, 1, `one line on stderr, got: ${r.stderr}`);
  assert.match(lines[0], /already in use/);
}

describe('cli', { timeout: 60000 }, () => {
  let busy;
  const homes = [];
  before(async () => {
    busy = await busyPort();
  });
  after(async () => {
    await stopAll();
    await busy.close();
    await Promise.all(homes.map((h) => fsp.rm(h, { recursive: true, force: true })));
  });
  const home = async (config) => {
    const h = await homeWithConfig(config);
    homes.push(h);
    return h;
  };

  describe('flags', () => {
    it('--version prints the version', async () => {
      const r = await runCli(['--version']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), `leuria ${VERSION}`);
    });

    for (const flag of ['-h', '--help']) {
      it(`${flag} prints help with the subcommands`, async () => {
        const r = await runCli([flag]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, /\bstart\b/);
        assert.match(r.stdout, /\bsites\b/);
        assert.match(r.stdout, /--port/);
      });
    }

    it('sites --help mentions revoke', async () => {
      const r = await runCli(['sites', '--help']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /\brevoke\b/);
    });

    for (const args of [['--bogus'], ['--port', '0', '--nope'], ['-z'], ['start', '--bogus']]) {
      it(`a bad flag (${args.join(' ')}) exits 2 with one line pointing at --help`, async () => {
        const r = await runCli(args, { timeoutMs: 5000 });
        assert.equal(r.timedOut, false, 'must not start');
        assert.equal(r.code, 2, `stderr: ${r.stderr}`);
        const lines = r.stderr.split('\n').filter((l) => l.trim());
        assert.equal(lines.length, 1, `one line on stderr, got: ${r.stderr}`);
        assert.match(lines[0], /--help/);
      });
    }

    it('prints the listening line first and binds 127.0.0.1 only', async () => {
      const eng = await startEngine();
      assert.match(eng.lines[0], LISTEN_RE);
      assert.equal(Number(LISTEN_RE.exec(eng.lines[0])[1]), eng.port);
      assert.equal((await local(eng, '/health')).status, 200);
      // not on ::1
      const v6 = await new Promise((resolve) => {
        const s = net.connect({ host: '::1', port: eng.port });
        s.on('connect', () => { s.destroy(); resolve('connected'); });
        s.on('error', () => resolve('refused'));
      });
      assert.equal(v6, 'refused', 'the engine must not listen on ::1');
      // ...but holds it: no other program can listen there and pose as the engine to pages that name it
      // localhost (a browser may try [::1] first).
      const squat = await listenOn('::1', eng.port);
      if (squat.server) await new Promise((resolve) => squat.server.close(resolve));
      if (squat.code !== 'EADDRNOTAVAIL' && squat.code !== 'EAFNOSUPPORT')  // else: no IPv6 loopback here
        assert.equal(squat.code, 'EADDRINUSE', `another program could listen on [::1]:${eng.port}`);
      await eng.stop();
    });

    for (const args of [['start', '--port', '0', '--no-open'], ['-p', '0', '--no-open'], ['--port=0', '--no-open'], ['-v', '--port', '0', '--no-open'], ['--verbose', '--port', '0', '--no-open'], ['start', '-p', '0', '--no-open', '-v']]) {
      it(`starts with ${args.join(' ')}`, async () => {
        const eng = await startEngine({ args });
        assert.match(eng.lines[0], LISTEN_RE);
        assert.equal((await local(eng, '/health')).status, 200);
        await eng.stop();
      });
    }

    it('exits on SIGTERM', async () => {
      const eng = await startEngine();
      const t0 = Date.now();
      const info = await eng.stop();
      assert.ok(Date.now() - t0 < 3000, `took ${Date.now() - t0} ms`);
      assert.notEqual(info.signal, 'SIGKILL', 'had to be killed');
      // Nothing live and no agent process: it stops at once, without the agents' grace.
      const stopping = eng.stderrLines.find((l) => l.includes('event=engine.stopping'));
      assert.match(stopping ?? '', /live_sessions=0 child_processes=false grace_ms=0/, eng.stderrLines.join('\n'));
    });
  });

  describe('busy port', () => {
    it('exits 1 with one line saying the port is already in use', async () => {
      const r = await runCli(['--port', String(busy.port), '--no-open'], { timeoutMs: 5000 });
      assertBusy(r, busy.port);
    });

    it('the same in app mode', async () => {
      const r = await runCli(['--app', '--port', String(busy.port)], { timeoutMs: 5000, env: { LEURIA_ADMIN_TOKEN: 'x'.repeat(40) } });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /already in use/);
    });

    it('exits 1 when another program listens on [::1] on the port, which pages naming localhost could reach', async () => {
      const squat = await listenOn('::1', 0);
      if (squat.code) return;  // no IPv6 loopback here: nobody can take it either
      try {
        const r = await runCli(['--port', String(squat.server.address().port), '--no-open'], { timeoutMs: 5000 });
        assertBusy(r, squat.server.address().port);
        assert.match(r.stderr, /\[::1\]/);
      } finally {
        await new Promise((resolve) => squat.server.close(resolve));
      }
    });
  });

  describe('port precedence: --port > LEURIA_PORT > config.json > 19570', () => {
    it('--port beats LEURIA_PORT and config.json', async () => {
      const h = await home({ port: busy.port });
      const eng = await startEngine({ home: h, args: ['--port', '0', '--no-open'], env: { LEURIA_PORT: String(busy.port) } });
      assert.notEqual(eng.port, busy.port);
      await eng.stop();
    });

    it('--port loses to nothing: a busy --port fails even with LEURIA_PORT=0', async () => {
      const h = await home({ port: 0 });
      const r = await runCli(['--port', String(busy.port), '--no-open'], { home: h, env: { LEURIA_PORT: '0' }, timeoutMs: 5000 });
      assertBusy(r, busy.port);
    });

    it('LEURIA_PORT beats config.json', async () => {
      const h = await home({ port: busy.port });
      const eng = await startEngine({ home: h, args: ['--no-open'], env: { LEURIA_PORT: '0' } });
      assert.notEqual(eng.port, busy.port);
      await eng.stop();
      const h2 = await home({ port: 0 });
      const r = await runCli(['--no-open'], { home: h2, env: { LEURIA_PORT: String(busy.port) }, timeoutMs: 5000 });
      assertBusy(r, busy.port);
    });

    it('config.json is used when there is no flag and no variable', async () => {
      const h = await home({ port: 0 });
      const eng = await startEngine({ home: h, args: ['--no-open'] });
      assert.notEqual(eng.port, 19570);
      await eng.stop();
      const h2 = await home({ port: busy.port });
      const r = await runCli(['--no-open'], { home: h2, timeoutMs: 5000 });
      assertBusy(r, busy.port);
    });

    it('start subcommand takes --port too', async () => {
      const h = await home({ port: busy.port });
      const eng = await startEngine({ home: h, args: ['start', '--port', '0', '--no-open'], env: { LEURIA_PORT: String(busy.port) } });
      assert.notEqual(eng.port, busy.port);
      await eng.stop();
    });
  });

  describe('one engine per LEURIA_HOME', () => {
    const sentence = (h) => `leuria: Another Leuria engine is already running with ${h}; stop it first (or set LEURIA_HOME).`;

    it('a second engine on the same home exits 1 at once with one sentence, and changes nothing', async () => {
      const h = await home({ agent: 'claude-acp' });
      const eng = await startEngine({ home: h });
      const config = await fsp.readFile(path.join(h, 'config.json'), 'utf8');
      // --agent would write config.json: the lock comes first
      const r = await runCli(['--port', '0', '--no-open', '--agent', 'gemini'], { home: h, timeoutMs: 5000 });
      assert.equal(r.timedOut, false, `the second engine kept running; stdout: ${r.stdout}`);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trim(), sentence(h));
      assert.equal(r.stdout, '', 'no listening line');
      assert.ok(r.ms < 2000, `took ${r.ms} ms`);
      assert.equal(await fsp.readFile(path.join(h, 'config.json'), 'utf8'), config);
      const st = await fsp.stat(path.join(h, 'engine.lock'));
      assert.equal(st.mode & 0o777, 0o600);
      // the first engine is untouched, and one-shot commands don't need the lock
      assert.equal((await local(eng, '/health')).status, 200);
      for (const args of [['sites'], ['agents']]) {
        const one = await runCli(args, { home: h, timeoutMs: 5000 });
        assert.equal(one.code, 0, `${args}: ${one.stderr}`);
      }
      await eng.stop();
    });

    it('the same in app mode, with the JSON error line for the desktop app', async () => {
      const h = await home();
      const eng = await startEngine({ home: h, app: true });
      const r = await runCli(['--app', '--port', '0'], { home: h, env: { LEURIA_ADMIN_TOKEN: ADMIN_TOKEN }, timeoutMs: 5000 });
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trim(), sentence(h));
      const lines = r.stdout.split('\n').filter(Boolean).map(tryJson);
      assert.deepEqual(lines, [{ type: 'error', message: sentence(h).slice('leuria: '.length) }]);
      await eng.stop();
    });

    it('a SIGKILLed engine leaves no lock behind: its home is reused at once', async () => {
      const h = await home();
      const killed = spawn(BIN, ['--port', '0', '--no-open'], { env: cleanEnv({ LEURIA_HOME: h }), stdio: ['ignore', 'pipe', 'ignore'] });
      await new Promise((resolve, reject) => {
        killed.stdout.setEncoding('utf8').on('data', (d) => LISTEN_RE.test(d.trim()) && resolve());
        killed.on('exit', () => reject(new Error('the first engine exited early')));
      });
      killed.kill('SIGKILL');
      await new Promise((r) => killed.on('exit', r));
      const eng = await startEngine({ home: h });
      assert.equal((await local(eng, '/health')).status, 200);
      await eng.stop();
      // and a cleanly stopped one's home too
      const again = await startEngine({ home: h });
      await again.stop();
    });
  });
});
