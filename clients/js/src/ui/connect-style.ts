// The Connect UI's stylesheet: small, neutral, and themable from the page through custom
// properties (--leuria-accent, --leuria-radius, --leuria-font) without reaching into the shadow DOM.
export const STYLE = `
:host {
  --_accent: var(--leuria-accent, #4f46e5);
  --_fg: var(--leuria-fg, #1f2328);
  --_muted: var(--leuria-muted, #59636e);
  --_bg: var(--leuria-bg, #ffffff);
  --_border: var(--leuria-border, #d0d7de);
  --_problem: var(--leuria-problem, #b42318);
  --_ready: var(--leuria-ready, #1a7f37);
  display: block;
  font: 14px/1.4 var(--leuria-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  color: var(--_fg);
  color-scheme: light dark;
}
@media (prefers-color-scheme: dark) {
  :host {
    --_accent: var(--leuria-accent, #8b87ff);
    --_fg: var(--leuria-fg, #e6edf3);
    --_muted: var(--leuria-muted, #9198a1);
    --_bg: var(--leuria-bg, #161b22);
    --_border: var(--leuria-border, #3d444d);
    --_problem: var(--leuria-problem, #ff7b72);
    --_ready: var(--leuria-ready, #3fb950);
  }
}
:host([hidden]) { display: none; }
.box {
  display: flex; flex-direction: column; gap: 10px;
  padding: 12px 14px; border: 1px solid var(--_border); border-radius: var(--leuria-radius, 10px);
  background: var(--_bg);
}
.status { margin: 0; display: flex; align-items: center; gap: 8px; }
.dot { width: 8px; height: 8px; border-radius: 50%; flex: none; background: var(--_muted); }
.box[data-tone="ready"] .dot { background: var(--_ready); }
.box[data-tone="action"] .dot, .box[data-tone="waiting"] .dot { background: var(--_accent); }
.box[data-tone="waiting"] .dot { animation: pulse 1.2s ease-in-out infinite; }
.box[data-tone="problem"] .dot { background: var(--_problem); }
@keyframes pulse { 50% { opacity: 0.3; } }
@media (prefers-reduced-motion: reduce) { .dot { animation: none !important; } }
progress { width: 100%; height: 6px; accent-color: var(--_accent); }
.row { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; }
.row:empty, .choices:empty { display: none; }
button {
  font: inherit; cursor: pointer; border-radius: 8px; padding: 6px 12px;
  border: 1px solid var(--_border); background: transparent; color: var(--_fg);
}
button:hover { border-color: var(--_accent); }
button:focus-visible { outline: 2px solid var(--_accent); outline-offset: 2px; }
button.primary { background: var(--_accent); border-color: var(--_accent); color: #fff; font-weight: 600; }
button.primary:hover { filter: brightness(1.08); }
button.link { border: none; padding: 2px 4px; color: var(--_muted); text-decoration: underline; }
.choices { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; color: var(--_muted); }
.choices button { padding: 4px 10px; font-size: 13px; }
:host([compact]) .box { flex-direction: row; flex-wrap: wrap; align-items: center; gap: 8px; padding: 6px 10px; }
:host([compact]) .status { flex: 1 1 auto; }
:host([compact]) progress { flex: 1 1 120px; width: auto; }
:host([compact]) .choices-label { display: none; }
:host([compact]) button { padding: 4px 10px; }
`;
