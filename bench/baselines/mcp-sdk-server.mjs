// The MCP TypeScript SDK's server for scenario 4: one `echo` tool (it answers the text it is given,
// as the page of the engine's scenario does), served over streamable HTTP the way the SDK's own
// example does it: stateful (a session id per client, a transport per session), node:http, the
// body left to the transport to read, SSE answers (the SDK's default, like the engine's).
//
//   node bench/baselines/mcp-sdk-server.mjs PORT      prints "listening on <port>"; POST /webmcp/mcp
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const transports = new Map();

function newServer() {
  const server = new McpServer({ name: 'echo', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo the text.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  if (req.url !== '/webmcp/mcp') {
    res.writeHead(404).end();
    return;
  }
  const sid = req.headers['mcp-session-id'];
  let transport = sid && transports.get(sid);
  if (!transport) {
    if (sid) {
      res.writeHead(404).end();
      return;
    }
    // A request without a session: initialize (the transport refuses anything else itself).
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});
httpServer.listen(Number(process.argv[2] || 0), '127.0.0.1', () => console.log(`listening on ${httpServer.address().port}`));
