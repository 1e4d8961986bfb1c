// How each contender is started, the same way in every scenario: pinned to the server CPU, with the
// /proc pids its cost is read from. Each start*() resolves a handle {name, port, pids(), stop(), ...}.
//
//   startEngine(opts)            the engine (tests/e2e/lib/engine.mjs startEngine: its stdout lines,
//                                pairing helpers and sessionApi all work on it), pinned after start
//   startLoadEngine(opts)        the same with N connected sites in grants.json (tests/e2e/lib/load.mjs)
//   startNginxHealth(body)       nginx answering /health with the same body
//   startNodeHealth(body)        bench/baselines/node-health.mjs
//   startFloorHttp(body)         build-bench/floors/epoll-http
//   startSseUpstream()           bench/fakes/sse-upstream.mjs on the helper CPU (not measured)
//   startNginxRelay(up)          nginx relaying to an upstream port, proxy_buffering off
//   startNodeRelay(up)           bench/baselines/node-relay.mjs
//   startFloorRelay(up)          build-bench/floors/sse-relay
//   startMcpSdkServer()          bench/baselines/mcp-sdk-server.mjs (the MCP TypeScript SDK, one echo tool)
//   startNodeWsEcho()            bench/baselines/node-ws-echo.mjs (`ws`, answers {"type":"ping"} with pong)
//   startFloorEcho()             build-bench/floors/tcp-pingpong serve (the TCP echo of the ping-pong floor)
//   startFloorAcpRelay(argv, env) build-bench/floors/acp-relay, spawning the agent `argv` (scenario 3)

import path from 'node:path';
import { startEngine as e2eStartEngine } from '../../tests/e2e/lib/engine.mjs';
import { startLoadEngine as e2eStartLoadEngine } from '../../tests/e2e/lib/load.mjs';
import { BUILD, FLOORS, ROOT } from './env.mjs';
import { healthLocation, relay, startNginx } from './nginx.mjs';
import { CPU, freePort, pin, spawnPinned } from './proc.mjs';
import { treePids } from './procfs.mjs';

let nginxCount = 0;

function wrapEngine(eng, name) {
  // Pinned once it listens (startEngine spawns the binary itself); -a covers every thread it has.
  // Agents it starts later inherit CPU 0: scenarios with agents pin those where they want them.
  pin(eng.proc.pid, CPU.server);
  return Object.assign(eng, { name, pid: eng.proc.pid, pids: () => treePids(eng.proc.pid) });
}

// The engine's log (stderr) goes to a file in its home, as nginx's error log goes to a file: through a
// pipe, each log line woke the driver (Node) on CPU 1, where the model servers run, and in scenario 5 the
// approve's line had the driver running there while the model server answered (docs/PERFORMANCE.md,
// findings, scenario 5).

/** The engine in CLI mode on a free port (opts as tests/e2e/lib/engine.mjs startEngine). */
export async function startEngine(opts = {}) {
  return wrapEngine(await e2eStartEngine({ stderrToFile: true, ...opts }), 'engine');
}

/** The engine with `sites` connected sites (4 live sessions each), for holding many sessions. */
export async function startLoadEngine(opts = {}) {
  return wrapEngine(await e2eStartLoadEngine({ stderrToFile: true, ...opts }), 'engine');
}

function wrap(h, name) {
  return Object.assign(h, { name, pids: h.pids || (() => treePids(h.pid)) });
}

export async function startNginxHealth(body) {
  const port = await freePort();
  return wrap(await startNginx({ buildDir: BUILD, name: `health-${process.pid}-${++nginxCount}`, port, locations: [healthLocation(body)] }), 'nginx');
}

export async function startNginxRelay(upstreamPort) {
  const port = await freePort();
  return wrap(await startNginx({ buildDir: BUILD, name: `relay-${process.pid}-${++nginxCount}`, port, ...relay(upstreamPort) }), 'nginx');
}

export async function startNodeHealth(body) {
  return wrap(await spawnPinned(process.execPath, [path.join(ROOT, 'bench/baselines/node-health.mjs'), '0', body]), 'node');
}

export async function startNodeRelay(upstreamPort) {
  return wrap(await spawnPinned(process.execPath, [path.join(ROOT, 'bench/baselines/node-relay.mjs'), '0', String(upstreamPort)]), 'node');
}

export async function startFloorHttp(body) {
  return wrap(await spawnPinned(path.join(FLOORS, 'epoll-http'), ['0', body]), 'floor');
}

export async function startFloorRelay(upstreamPort) {
  return wrap(await spawnPinned(path.join(FLOORS, 'sse-relay'), ['0', String(upstreamPort)]), 'floor');
}

/** The SSE upstream the relays read from: on the helper CPU, so it does not compete with them. */
export async function startSseUpstream() {
  return wrap(await spawnPinned(process.execPath, [path.join(ROOT, 'bench/fakes/sse-upstream.mjs'), '0'], { cpu: CPU.helper }), 'upstream');
}

/** The MCP TypeScript SDK's streamable HTTP server with one echo tool (scenario 4). */
export async function startMcpSdkServer() {
  return wrap(await spawnPinned(process.execPath, [path.join(ROOT, 'bench/baselines/mcp-sdk-server.mjs'), '0']), 'sdk');
}

/** A Node `ws` server answering a page's {"type":"ping"} with {"type":"pong"} (scenario 6). */
export async function startNodeWsEcho() {
  return wrap(await spawnPinned(process.execPath, [path.join(ROOT, 'bench/baselines/node-ws-echo.mjs'), '0']), 'node');
}

/** The TCP echo server of the ping-pong floor (its client: `tcp-pingpong client PORT`). */
export async function startFloorEcho() {
  return wrap(await spawnPinned(path.join(FLOORS, 'tcp-pingpong'), ['serve', '0']), 'floor');
}

/** The idle floor: keeps the connections its peers open alive with pings and keep-alives (scenario 11). */
export async function startFloorIdle() {
  return wrap(await spawnPinned(path.join(FLOORS, 'idle'), ['0']), 'floor');
}

/** The ACP relay floor: the Node relay's /acp routes in C, spawning the agent `agentArgv` (scenario 3). */
export async function startFloorAcpRelay(agentArgv, env) {
  return wrap(await spawnPinned(path.join(FLOORS, 'acp-relay'), ['0', ...agentArgv], { env: { ...process.env, ...env } }), 'floor');
}
