// The few browser globals the cascade uses, guarded so the SDK also loads where they don't exist
// (Node for tests, server-side rendering, workers).

/** Listens on window when there is one. Returns the way to stop. */
export function onWindow(type: string, listener: (event: Event) => void): () => void {
  const target = typeof window !== "undefined" ? (window as unknown as EventTarget | undefined) : undefined;
  if (!target || typeof target.addEventListener !== "function") return () => {};
  target.addEventListener(type, listener);
  return () => target.removeEventListener(type, listener);
}

/** Whether the page is visible. Without a document (Node, a worker) there is no page to hide, so
 *  it counts as visible. */
export function pageVisible(): boolean {
  if (typeof document === "undefined" || !document) return true;
  const state = (document as { visibilityState?: string }).visibilityState;
  return state === undefined || state === "visible";
}

/** Calls `tick` every `ms`; returns the way to stop. The timer doesn't keep Node alive. */
export function every(ms: number, tick: () => void): () => void {
  const timer = setInterval(tick, ms);
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

/** A listener's or hook's bug must not break the SDK, but shouldn't vanish either. */
export function reportError(error: unknown): void {
  const report = (globalThis as { reportError?: (error: unknown) => void }).reportError;
  if (typeof report === "function") report(error);
  else console.error(error);
}
