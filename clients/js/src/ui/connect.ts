// <leuria-connect>: a framework-free custom element that follows a Leuria object's state and
// offers what the visitor can do: connect their own AI, download the browser's model, or use
// another AI instead. Set `el.leuria = ai`. What it shows is decided in connect-view.ts.
//
// Clicks call ai.connect() synchronously, with no await before it: connecting opens a
// leuria:// link and downloading starts the browser's model, and both need the click's user
// activation, which an await would lose.
import type { Leuria, LeuriaState } from "../types.js";
import { connectView, type ButtonView, type ConnectView } from "./connect-view.js";
import { STYLE } from "./connect-style.js";

// Importing the SDK outside a browser (a server render, Node tests) must not fail: there,
// HTMLElement doesn't exist, and the element is simply never defined.
const Base = (typeof HTMLElement !== "undefined" ? HTMLElement : class {}) as typeof HTMLElement;

export class LeuriaConnectElement extends Base {
  #leuria: Leuria | null = null;
  #unsubscribe: (() => void) | null = null;
  /** Actions started from this element, by provider: a later outcome counts only if it is still
   *  the one listed (Cancel removes it, a new click replaces it). */
  #connecting = new Map<string, Promise<void>>();
  /** Waits the visitor cancelled: provider → the detail shown then (see LocalState.dismissed). */
  #dismissed = new Map<string, string | undefined>();
  #error: string | null = null;
  /** The state when the error was shown: a later change replaces the error with the news. */
  #errorState: LeuriaState | null = null;
  #lastState: LeuriaState | null = null;
  #parts: { box: HTMLElement; status: HTMLElement; text: HTMLElement; progress: HTMLProgressElement; row: HTMLElement; choices: HTMLElement } | null = null;
  #renderedKey = "";

  constructor() {
    super();
    // A page may set el.leuria before defineConnectElement() ran: that made a plain property on
    // the element, which would hide the setter. Take it over now that the element upgrades.
    if (Object.prototype.hasOwnProperty.call(this, "leuria")) {
      const value = (this as { leuria?: Leuria | null }).leuria ?? null;
      delete (this as { leuria?: unknown }).leuria;
      this.leuria = value;
    }
  }

  /** The Leuria object (from createLeuria) this element follows. */
  get leuria(): Leuria | null {
    return this.#leuria;
  }

  set leuria(value: Leuria | null) {
    if (value === this.#leuria) return;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#leuria = value;
    this.#connecting.clear();
    this.#dismissed.clear();
    this.#error = null;
    if (this.isConnected) this.#follow();
  }

  connectedCallback(): void {
    this.#build();
    this.#follow();
  }

  disconnectedCallback(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }

  #follow(): void {
    const ai = this.#leuria;
    if (ai && !this.#unsubscribe) this.#unsubscribe = ai.subscribe(() => this.#render());
    this.#render();
  }

  #build(): void {
    if (this.#parts) return;
    const root = this.shadowRoot ?? this.attachShadow({ mode: "open" });
    const style = document.createElement("style");
    style.textContent = STYLE;
    const box = el("div", "box");
    box.setAttribute("part", "box");
    // The live region stays the same node, so screen readers announce each new sentence.
    const status = el("p", "status");
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    const dot = el("span", "dot");
    dot.setAttribute("aria-hidden", "true");
    const text = el("span", "text");
    status.append(dot, text);
    const progress = document.createElement("progress");
    progress.max = 1;
    progress.hidden = true;
    const row = el("div", "row");
    const choices = el("div", "choices");
    box.append(status, progress, row, choices);
    root.append(style, box);
    this.#parts = { box, status, text, progress, row, choices };
  }

  #render(): void {
    const parts = this.#parts;
    if (!parts) return;
    const ai = this.#leuria;
    if (!ai) {
      parts.box.dataset.tone = "idle";
      parts.text.textContent = "";
      parts.row.replaceChildren();
      parts.choices.replaceChildren();
      parts.progress.hidden = true;
      return;
    }
    const state = ai.getState();
    if (this.#error && this.#errorState !== state) this.#error = null;
    const view = connectView(state, { connecting: this.#connecting, error: this.#error, dismissed: this.#dismissed });
    parts.box.dataset.tone = view.tone;
    if (parts.text.textContent !== view.status) parts.text.textContent = view.status;
    parts.progress.hidden = view.progress === null;
    if (view.progress !== null) {
      parts.progress.value = view.progress;
      parts.progress.setAttribute("aria-label", view.progressLabel);
    }
    this.#renderButtons(view);
    if (state !== this.#lastState) {
      this.#lastState = state;
      this.dispatchEvent(new CustomEvent("leuria-change", { detail: { state }, bubbles: true, composed: true }));
    }
  }

  /** Rebuilds the buttons only when they change, and keeps the focus on the same button. */
  #renderButtons(view: ConnectView): void {
    const parts = this.#parts!;
    const buttons = [view.primary, view.disconnect, ...view.choices].filter((b): b is ButtonView => b !== null);
    const key = buttons.map((b) => `${b.key}=${b.label}`).join("|");
    if (key === this.#renderedKey) return;
    this.#renderedKey = key;
    const focused = (this.shadowRoot?.activeElement as HTMLElement | null)?.dataset?.key;
    const row: HTMLElement[] = [];
    if (view.primary) row.push(this.#button(view.primary, "primary"));
    if (view.disconnect) row.push(this.#button(view.disconnect, "link"));
    parts.row.replaceChildren(...row);
    const choices: Node[] = [];
    if (view.choices.length) {
      const label = el("span", "choices-label");
      label.textContent = view.primary || view.disconnect ? "Or:" : "Choose:";
      choices.push(label, ...view.choices.map((c) => this.#button(c, "choice")));
    }
    parts.choices.replaceChildren(...choices);
    if (focused) (this.shadowRoot?.querySelector(`[data-key="${CSS.escape(focused)}"]`) as HTMLElement | null)?.focus();
  }

  #button(view: ButtonView, className: string): HTMLButtonElement {
    const button = document.createElement("button");
    button.type = "button";
    button.className = className;
    button.textContent = view.label;
    button.dataset.key = view.key;
    button.addEventListener("click", () => this.#act(view));
    return button;
  }

  /** A click. Everything that needs the click's user activation happens before the first await. */
  #act(view: ButtonView): void {
    const ai = this.#leuria;
    if (!ai) return;
    this.#error = null;
    this.#dismissed.delete(view.provider);
    if (view.kind === "cancel") {
      // Stops waiting here only: Leuria's window stays open, and an answer given there later
      // still shows up through the state. The next "Connect your AI" starts a fresh request.
      this.#connecting.delete(view.provider);
      this.#dismissed.set(view.provider, ai.getState().providers.find((p) => p.id === view.provider)?.detail);
      this.#render();
      return;
    }
    if (view.kind === "disconnect") {
      this.#track(view.provider, ai.disconnect(view.provider), false);
      return;
    }
    if (view.kind === "choose") {
      ai.chooseInstead(view.provider);
      if (view.download) this.#track(view.provider, ai.connect(view.provider), true);
      else this.#render();
      return;
    }
    this.#track(view.provider, ai.connect(view.provider), true);
  }

  #track(id: string, action: Promise<void>, busy: boolean): void {
    if (busy) this.#connecting.set(id, action);
    this.#render();
    // A cancelled wait, or one replaced by a newer click, reports nothing.
    const current = () => !busy || this.#connecting.get(id) === action;
    action.then(
      () => {
        if (!current()) return;
        this.#connecting.delete(id);
        this.#render();
      },
      (error: unknown) => {
        if (!current()) return;
        this.#connecting.delete(id);
        // ProviderError messages are plain words meant for visitors; anything else isn't shown.
        this.#error = error instanceof Error && error.name === "ProviderError" ? error.message : "That didn't work. Try again.";
        this.#errorState = this.#leuria?.getState() ?? null;
        this.#render();
      },
    );
  }
}

function el(tag: string, className: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  return node;
}

let defined = false;

/** Registers <leuria-connect> (or another tag name). Safe to call more than once, and a no-op
 *  outside a browser. */
export function defineConnectElement(tagName = "leuria-connect"): void {
  if (typeof customElements === "undefined" || typeof HTMLElement === "undefined") return;
  if (customElements.get(tagName)) return;
  // A class can be registered under one name only: a second name gets a subclass.
  customElements.define(tagName, defined ? class extends LeuriaConnectElement {} : LeuriaConnectElement);
  defined = true;
}
