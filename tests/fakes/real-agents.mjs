// Launch specs for the REAL ACP agents (pinned in package.json), run offline
// against the scripted model APIs in this folder.
//
//   const api = await startGeminiServer({ reply: "hi" });
//   const home = mkdtempSync(...);
//   const spec = geminiAgentSpec({ apiUrl: api.url, home });  // also writes settings
//   spawn(spec.command, spec.args, { env: spec.env, cwd: <empty dir> });
//
// Each spec function writes the settings files the agent needs into `home`
// (it is idempotent) and returns {command, args, env}: absolute binary path,
// fixed argument list, and a complete environment (not merged with
// process.env except PATH, so nothing of the host leaks in).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const GEMINI_BIN = join(root, "node_modules/.bin/gemini");
export const CLAUDE_ACP_BIN = join(root, "node_modules/.bin/claude-agent-acp");

/** Environment common to both: a private HOME and nothing else of the host. */
function baseEnv(home) {
  return {
    PATH: process.env.PATH,
    HOME: home,
    // Keep XDG lookups inside the private home too.
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_DATA_HOME: join(home, ".local/share"),
    TMPDIR: process.env.TMPDIR ?? "/tmp",
    LANG: "C.UTF-8",
    NO_COLOR: "1",
  };
}

/** Writes ~/.gemini/settings.json: API-key auth, no telemetry, no update checks. */
export function setupGeminiHome(home) {
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini/settings.json"), JSON.stringify({
    security: { auth: { selectedType: "gemini-api-key" } },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { disableAutoUpdate: true, disableUpdateNag: true },
  }, null, 2));
}

/**
 * Gemini CLI 0.61 as an ACP agent: `gemini --acp`.
 * apiUrl: base of the scripted Gemini API, e.g. http://127.0.0.1:PORT (no /v1beta).
 */
export function geminiAgentSpec({ apiUrl, home }) {
  setupGeminiHome(home);
  return {
    command: GEMINI_BIN,
    args: ["--acp"],
    env: {
      ...baseEnv(home),
      GOOGLE_GEMINI_BASE_URL: apiUrl,
      GEMINI_API_KEY: "dummy",
      // MCP servers are only connected in a trusted folder.
      GEMINI_CLI_TRUST_WORKSPACE: "true",
    },
  };
}

/** Writes ~/.claude.json and ~/.claude/settings.json so Claude Code starts quietly. */
export function setupClaudeHome(home) {
  mkdirSync(join(home, ".claude"), { recursive: true });
  writeFileSync(join(home, ".claude/settings.json"), JSON.stringify({}, null, 2));
}

/**
 * Claude Code's ACP adapter (@agentclientprotocol/claude-agent-acp 0.101,
 * which runs the bundled native Claude Code 2.1.x).
 * apiUrl: base of the scripted Anthropic API, e.g. http://127.0.0.1:PORT (no /v1).
 */
export function claudeAgentSpec({ apiUrl, home }) {
  setupClaudeHome(home);
  return {
    command: CLAUDE_ACP_BIN,
    args: [],
    env: {
      ...baseEnv(home),
      ANTHROPIC_BASE_URL: apiUrl,
      ANTHROPIC_API_KEY: "dummy",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      // Claude Code refuses some things as root unless it believes it is sandboxed.
      IS_SANDBOX: "1",
    },
  };
}

/**
 * The `_meta` the engine sends with `session/new` for Claude Code: built-in
 * tools off, only the page's MCP tools allowed, no settings files read.
 */
export const CLAUDE_BUILTIN_TOOLS = [
  "Agent", "Task", "Bash", "BashOutput", "KillShell", "Edit", "MultiEdit", "Write", "Read",
  "NotebookEdit", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "ExitPlanMode",
  "Skill", "SlashCommand", "AskUserQuestion",
];
export function claudeSessionMeta() {
  return {
    claudeCode: {
      options: {
        tools: [],
        allowedTools: ["mcp__webmcp"],
        disallowedTools: CLAUDE_BUILTIN_TOOLS,
        settingSources: [],
        strictMcpConfig: true,
      },
    },
  };
}
