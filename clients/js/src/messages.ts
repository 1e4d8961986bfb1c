// Turning a page's request into what a provider gets: the messages (system ones moved to
// `system`, attachments as image parts on the last user message) and the capabilities it needs.
import type { Attachment, Capability, ImagePart, JsonSchema, Message, Part, Tool } from "./types.js";

export interface Prepared {
  messages: Message[];
  system?: string;
}

/** From a chat request's prompt / messages / system / attachments. Throws a clear Error for a
 *  request that can't be sent. */
export function prepareMessages(input: {
  prompt?: string;
  messages?: readonly Message[];
  system?: string;
  attachments?: readonly Attachment[];
}): Prepared {
  const { prompt, messages, system, attachments } = input;
  if (prompt !== undefined && typeof prompt !== "string") throw new TypeError("prompt must be a string.");
  if (messages !== undefined && !Array.isArray(messages)) throw new TypeError("messages must be an array of messages.");
  const instructions: string[] = typeof system === "string" && system ? [system] : [];
  const out: Message[] = [];
  for (const message of messages ?? []) {
    checkMessage(message);
    if (message.role === "system") instructions.push(textOf(message.content));
    else out.push(copyMessage(message));
  }
  if (prompt !== undefined) out.push({ role: "user", content: prompt });
  if (!out.length) throw new TypeError("A chat request needs a prompt or messages.");
  if (attachments?.length) attachTo(out, attachments);
  const joined = instructions.filter(Boolean).join("\n\n");
  return joined ? { messages: out, system: joined } : { messages: out };
}

/** The new user message of a conversation turn. */
export function userMessage(prompt: string, attachments?: readonly Attachment[]): Message {
  if (typeof prompt !== "string") throw new TypeError("send() needs the visitor's message as a string.");
  const messages: Message[] = [{ role: "user", content: prompt }];
  if (attachments?.length) attachTo(messages, attachments);
  return messages[0]!;
}

/** What a provider must be able to do for this request. "structured" is met by structured output
 *  or by tools (a provider can ask for the answer through a tool). */
export function needsOf(request: { messages: readonly Message[]; tools: readonly Tool[]; schema?: JsonSchema }): Capability[] {
  const needs: Capability[] = ["chat"];
  if (request.tools.length) needs.push("tools");
  if (request.messages.some(hasImage)) needs.push("images");
  if (request.schema !== undefined) needs.push("structured");
  return needs;
}

function hasImage(message: Message): boolean {
  return Array.isArray(message.content) && message.content.some((part) => part.type === "image");
}

function attachTo(messages: Message[], attachments: readonly Attachment[]): void {
  const images = attachments.map(imagePart);
  let index = messages.length - 1;
  while (index >= 0 && messages[index]!.role !== "user") index--;
  if (index < 0) throw new TypeError("Attachments need a user message to go with.");
  const target = messages[index]!;
  const parts: Part[] = typeof target.content === "string" ? (target.content ? [{ type: "text", text: target.content }] : []) : [...target.content];
  messages[index] = { ...target, content: [...parts, ...images] };
}

function imagePart(attachment: Attachment): ImagePart {
  if (!attachment || typeof attachment.data !== "string" || typeof attachment.mimeType !== "string") {
    throw new TypeError("An attachment needs mimeType and base64 data.");
  }
  if (!attachment.mimeType.startsWith("image/")) {
    throw new TypeError(`Only images can be attached today (got ${attachment.mimeType}).`);
  }
  // Tolerate a data: URL (the form a FileReader gives), line breaks (MIME encoders wrap at 76), the
  // URL-safe alphabet and missing padding: every provider gets the padded standard base64 the engine
  // and the APIs ask for. Anything else is not base64, and says so here rather than mid-run.
  let data = attachment.data.replace(/^data:[^,]*;base64,/, "").replace(/\s+/g, "").replace(/-/g, "+").replace(/_/g, "/");
  if (data.length % 4 === 1 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length === 0) {
    throw new TypeError("An image attachment's data must be base64.");
  }
  data = data.replace(/=+$/, "");
  data += "=".repeat((4 - (data.length % 4)) % 4);
  return { type: "image", data, mimeType: attachment.mimeType };
}

function checkMessage(message: Message): void {
  const ok =
    message &&
    (message.role === "user" || message.role === "assistant" || message.role === "system") &&
    (typeof message.content === "string" || Array.isArray(message.content));
  if (!ok) throw new TypeError('Each message needs a role ("user", "assistant" or "system") and content.');
}

/** A copy the provider may keep or change without touching the page's objects. */
export function copyMessage(message: Message): Message {
  const content = typeof message.content === "string" ? message.content : message.content.map((part) => ({ ...part }));
  return message.metadata ? { role: message.role, content, metadata: { ...message.metadata } } : { role: message.role, content };
}

export function textOf(content: string | readonly Part[]): string {
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

/** Deep-freezes a message for the conversation's history. */
export function frozenMessage(message: Message): Message {
  if (Object.isFrozen(message)) return message;
  const content = typeof message.content === "string" ? message.content : Object.freeze(message.content.map((part) => Object.freeze({ ...part })));
  return Object.freeze({
    role: message.role,
    content: content as Message["content"],
    ...(message.metadata ? { metadata: Object.freeze({ ...message.metadata }) } : {}),
  });
}
