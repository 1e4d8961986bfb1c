// The page tools of scenarios 4 and 6: a prepared session's tool channel on an engine (set up with
// tests/e2e/lib, outside any measured window), and build-bench/clients/toolcall, the lean C client that
// is timed (bench/clients/toolcall.c: the MCP client, the page, a page pinging its channel, or the
// TCP floor's client).

import path from 'node:path';
import { mcpSession, registerPage } from '../../tests/e2e/lib/page.mjs';
import { sessionApi } from '../../tests/e2e/lib/sessions.mjs';
import { CLIENTS } from './env.mjs';
import { runPinned } from './proc.mjs';

export const TOOLCALL = path.join(CLIENTS, 'toolcall');

/** The calls (and warm-up calls) of one measurement. */
export const counts = (quick) => (quick ? { n: 3000, warmup: 300 } : { n: 20000, warmup: 1000 });

/**
 * On an engine started with connected sites (startLoadEngine({sites: 1})): prepare a session (not
 * approved: no AI runs), register its page, and return what the client needs to be that page:
 * {origin, channel (path with ?token=), token (the channel token: the MCP bearer)}.
 */
export async function pageChannel(eng) {
  const site = eng.sites[0];
  const prep = await sessionApi(eng, site).prepare({});
  if (prep.status !== 201) throw new Error(`prepare: ${prep.status} ${prep.body}`);
  const { reply } = await registerPage(eng, prep.json.registrationToken, { origin: site.origin });
  if (reply.type !== 'registerSuccess') throw new Error(`register: ${JSON.stringify(reply)}`);
  return { origin: site.origin, channel: `${reply.channel}?token=${encodeURIComponent(reply.token)}`, token: reply.token };
}

/** An MCP session (initialize + notifications/initialized) on `target`: the client's header options. */
export async function mcpArgs(target, bearer) {
  const s = await mcpSession(target, bearer);
  return ['--bearer', bearer, ...(s.sessionId ? ['--session', s.sessionId] : []), '--version', s.version];
}

async function runJson(cmd, args, cpu) {
  const r = await runPinned(cmd, args, { cpu });
  if (r.code !== 0) throw new Error(`${path.basename(cmd)} ${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1));
}

/** build-bench/clients/toolcall MODE PORT args -n -w, pinned to `cpu`; its JSON line. */
export function toolcall(mode, port, args, { n, warmup }, cpu) {
  return runJson(TOOLCALL, [mode, String(port), ...args, '-n', String(n), '-w', String(warmup)], cpu);
}

/**
 * The TCP floor's round trips against an echo at `port` (floors/tcp-pingpong serve), timed by this
 * client's `echo` mode (the same blocking loop as tcp-pingpong's own client, with the whole percentile
 * grid, so the floor's distribution is drawn on the same points as the others'); its JSON line.
 */
export function pingpong(port, size, cnt, cpu) {
  return toolcall('echo', port, ['-s', String(size)], cnt, cpu);
}
