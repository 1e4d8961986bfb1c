// Turning the SDK's messages into what the engine takes: one prompt string (an engine session keeps
// its own history, so a fresh one gets the earlier messages as context in its first prompt), image
// attachments from the last user message, and, for a schema, an instruction to answer in JSON (the
// bridge has no native structured output; the core parses and checks the answer).
import type { JsonSchema, Message, Part } from "../../types.js";

export interface EngineImage {
  type: "image";
  mimeType: string;
  data: string;
}

export interface EnginePrompt {
  prompt: string;
  attachments: EngineImage[];
}

/** The engine takes at most 10 attachments per request. */
const MAX_ATTACHMENTS = 10;

export function textOf(message: Message): string {
  if (typeof message.content === "string") return message.content;
  return message.content.map((p: Part) => (p.type === "text" ? p.text : "")).join("");
}

/** The message's text, with a short note where an image was (for history, which carries no files). */
function textWithNotes(message: Message): string {
  if (typeof message.content === "string") return message.content;
  return message.content.map((p: Part) => (p.type === "text" ? p.text : "[an image]")).join("");
}

export function imagesOf(message: Message | undefined): EngineImage[] {
  if (!message || typeof message.content === "string") return [];
  const images: EngineImage[] = [];
  for (const p of message.content) {
    if (p.type === "image" && images.length < MAX_ATTACHMENTS) images.push({ type: "image", mimeType: p.mimeType, data: p.data });
  }
  return images;
}

export function schemaInstruction(schema: JsonSchema): string {
  return (
    "Answer with only a JSON value that matches this JSON Schema: no other text, no explanation, no code fences.\n" +
    JSON.stringify(schema)
  );
}

const ROLE: Record<string, string> = { user: "User", assistant: "Assistant", system: "Instructions" };

/**
 * The prompt for a session that hasn't seen `messages` yet: the last user message, preceded by the
 * earlier ones as a transcript when there are any.
 */
export function promptFor(messages: readonly Message[], schema?: JsonSchema, intro = "Here is our conversation so far:"): EnginePrompt {
  const lastIndex = findLastUser(messages);
  const last = lastIndex >= 0 ? messages[lastIndex] : undefined;
  const earlier = messages.filter((m, i) => i !== lastIndex && m.role !== "system");
  let prompt = last ? textOf(last) : "";
  const attachments = imagesOf(last);
  if (!prompt.trim()) prompt = attachments.length ? "Look at the attached image." : "Hello.";
  if (earlier.length) {
    const transcript = earlier.map((m) => `${ROLE[m.role] ?? m.role}: ${textWithNotes(m)}`).join("\n\n");
    prompt = `${intro}\n\n${transcript}\n\nNow the user says:\n${prompt}`;
  }
  if (schema) prompt += `\n\n${schemaInstruction(schema)}`;
  return { prompt, attachments };
}

/** The prompt for a session that already holds the history: just the new user message. */
export function nextPromptFor(messages: readonly Message[], schema?: JsonSchema): EnginePrompt {
  const lastIndex = findLastUser(messages);
  return promptFor(lastIndex >= 0 ? [messages[lastIndex]] : [], schema);
}

/**
 * The prompt for a session that has seen the first `seen` messages: the whole history for a fresh
 * one (0), the new user message alone when nothing happened in between, and otherwise the messages
 * it missed (turns another AI answered while this one wasn't ready) as context before it.
 */
export function promptAfter(messages: readonly Message[], seen: number, schema?: JsonSchema): EnginePrompt {
  if (seen <= 0) return promptFor(messages, schema);
  const lastIndex = findLastUser(messages);
  if (lastIndex <= seen) return nextPromptFor(messages, schema);
  return promptFor(messages.slice(seen, lastIndex + 1), schema, "Here is what was said since your last answer:");
}

function findLastUser(messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === "user") return i;
  return -1;
}
