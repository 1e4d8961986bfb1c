// Kiln & Co.: a shop page that asks an AI about its mugs. The AI is the visitor's own (through
// Leuria) when they connect it; otherwise, if they choose, the browser's built-in model or the
// shop's server. The page doesn't care which: it streams the answer and says who wrote it.
import { createLeuria, bridge, browserAI, server, defineConnectElement, NoProviderError } from '@leuria/client';
import { PRODUCTS, searchTool } from './products.js';

// ------------------------------------------------------------------ the catalog

const list = document.getElementById('products');
const SWATCH = { 'rust red': '#a8452b', 'deep blue': '#1f4e8c', green: '#5f7f4f', sand: '#d8c3a0', white: '#eeeae4', black: '#24262b', 'light green': '#a5c98a', 'blue grey': '#6c7f91' };
for (const p of PRODUCTS) {
  const item = document.createElement('li');
  item.className = 'product';
  item.innerHTML = `<div class="swatch" aria-hidden="true"></div><h3></h3><p class="price"></p><p class="meta"></p><p class="stock"></p>`;
  item.querySelector('.swatch').style.background = SWATCH[p.color] ?? '#ccc';
  item.querySelector('h3').textContent = p.name;
  item.querySelector('.price').textContent = `$${p.price}`;
  item.querySelector('.meta').textContent = `${p.color}, ${p.glaze} · ${p.capacityMl} ml`;
  const stock = item.querySelector('.stock');
  stock.textContent = p.stock ? `${p.stock} in stock` : 'Sold out';
  if (!p.stock) stock.classList.add('out');
  list.append(item);
}

// ------------------------------------------------------------------ the AI

// An engine on another port than 19570: open the shop with ?engine=http://127.0.0.1:<port>. Only
// that form (or localhost) is taken: bridge() refuses any other host, so a crafted link can't send
// the visitor's pairing elsewhere.
const asked = new URLSearchParams(location.search).get('engine');
const engine = asked && /^http:\/\/(127\.0\.0\.1|localhost):\d{1,5}\/?$/.test(asked) ? asked : null;

const ai = createLeuria({
  providers: [
    // Tell Leuria what this page needs, so it suggests the lightest of the visitor's AIs that fits.
    bridge({ app: 'Kiln & Co.', needs: { tools: true, effort: 'light' }, ...(engine ? { url: engine } : {}) }),
    browserAI(),
    server({ url: '/api/ai/chat/completions' }),
  ],
});
window.shopAI = ai; // for poking around in the console

defineConnectElement();
const connect = document.getElementById('connect');
connect.leuria = ai;

const SYSTEM = `You are the shop assistant of Kiln & Co., a small pottery studio that sells handmade mugs.
Use the search_products tool to look up mugs, prices (in USD) and stock; never invent products or prices.
Answer in one to three short sentences.`;

// One conversation, so follow-up questions ("and in green?") keep their context.
const conversation = ai.conversation({ system: SYSTEM, tools: [searchTool] });

// ------------------------------------------------------------------ the chat box

const log = document.getElementById('log');
const form = document.getElementById('ask');
const input = document.getElementById('question');
const send = document.getElementById('send');

function addEntry(className, text = '') {
  const li = document.createElement('li');
  li.className = className;
  li.textContent = text;
  log.append(li);
  log.scrollTop = log.scrollHeight;
  return li;
}

/** "Answered by your AI (Claude Code)", "Answered by this site's AI". */
function answeredBy(providerId, model) {
  const state = ai.getState().providers.find((p) => p.id === providerId);
  const who = providerId === 'bridge' ? 'your AI' : (state?.label ?? providerId).replace(/^This\b/, 'this');
  return `Answered by ${who}${model ? ` (${model})` : ''}`;
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const question = input.value.trim();
  if (!question) return;
  input.value = '';
  send.disabled = true;
  addEntry('you', question);
  const answer = addEntry('ai');
  const text = document.createElement('span');
  text.className = 'text';
  const note = document.createElement('span');
  note.className = 'note';
  answer.append(text, note);

  try {
    const run = conversation.send(question);
    let provider;
    let model;
    // Events arrive as they happen: the provider's name first, then tool calls and text.
    for await (const e of run) {
      if (e.type === 'start') ({ provider, model } = e);
      else if (e.type === 'tool-call') note.textContent = 'Searching the catalog…';
      else if (e.type === 'tool-result') note.textContent = '';
      else if (e.type === 'text') text.textContent += e.text;
      else if (e.type === 'finish') {
        text.textContent = e.text;
        model = e.message.metadata?.model ?? model;
      } else if (e.type === 'error') throw e.error;
    }
    const by = document.createElement('span');
    by.className = 'by';
    by.textContent = answeredBy(provider, model);
    answer.append(by);
    answer.dataset.provider = provider;
  } catch (error) {
    answer.classList.add('problem');
    if (error instanceof NoProviderError) {
      text.textContent = error.actionable || error.choices.length
        ? 'Connect your AI above, or choose another one, then ask again.'
        : 'No AI is available here right now.';
      connect.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    } else {
      // ProviderError messages are plain words; anything else stays in the console.
      text.textContent = error?.name === 'ProviderError' ? error.message : 'Something went wrong. Try again.';
      if (error?.name !== 'ProviderError') console.error(error);
    }
    note.textContent = '';
  } finally {
    send.disabled = false;
    input.focus();
  }
});

