// @leuria/client: the page's AI in one cascade. The visitor's own AI through the Leuria engine
// (bridge), the browser's built-in model (browserAI), and the site's server (server).
export { createLeuria } from "./leuria.js";
export { bridge } from "./providers/bridge/index.js";
export type { BridgeNeeds, BridgeOptions, KeyValueStorage } from "./providers/bridge/index.js";
export { browserAI } from "./providers/browser.js";
export type { BrowserAIOptions } from "./providers/browser.js";
export { server } from "./providers/server.js";
export type { ServerOptions } from "./providers/server.js";
export { defineConnectElement, LeuriaConnectElement } from "./ui/connect.js";
export { NoProviderError, ProviderError, SchemaError } from "./errors.js";
export type { NoProviderReason } from "./errors.js";
export type * from "./types.js";
