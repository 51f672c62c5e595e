// The console's shell: the pages (one module each, chosen by the location's hash), the caller's
// identity, and the API key form shown when the API answers 401.
import {h, clear} from './dom.js';
import {get, key, APIError, NEED_KEY} from './api.js';
import * as overview from './overview.js';
import * as tools from './tools.js';
import * as playground from './playground.js';
import * as usage from './usage.js';
import * as recent from './recent.js';
import * as approvals from './approvals.js';

const pages = {overview, tools, playground, usage, approvals, recent};
const titles = {overview: 'Overview', tools: 'Tools', playground: 'Playground', usage: 'Usage', approvals: 'Approvals', recent: 'Recent requests'};

const main = document.getElementById('main');
const panel = document.getElementById('key-panel');
const form = document.getElementById('key-form');
const input = document.getElementById('key-input');
const message = document.getElementById('key-message');
const who = document.getElementById('who');

let about = null; // GET /ui/api/about, once the API has answered it
let running = null; // the shown page's AbortController: aborting it stops its timers and requests

// askForKey shows the key form with the API's answer.
function askForKey(err) {
  message.textContent = err instanceof APIError ? err.text : String(err);
  panel.hidden = false;
  if (!about) input.focus();
}

window.addEventListener(NEED_KEY, (e) => askForKey(e.detail));

form.addEventListener('submit', async (e) => {
  e.preventDefault();
  key.set(input.value.trim());
  input.value = '';
  await start();
});

function showWho() {
  clear(who);
  if (!about) return;
  const id = about.identity || 'no identity';
  who.append(h('span', {}, 'Signed in as ', h('strong', {}, id), about.admin ? ' (admin)' : ''));
  if (key.get()) {
    who.append(' ', h('button', {type: 'button', class: 'link', onclick: () => {
      key.clear();
      about = null;
      showWho();
      start();
    }}, 'Forget key'));
  }
}

// start learns who the caller is, then shows the page; a 401 shows the key form instead.
async function start() {
  try {
    about = await get('/ui/api/about');
  } catch (err) {
    about = null;
    showWho();
    if (running) running.abort();
    const needKey = err instanceof APIError && err.status === 401;
    clear(main).append(h('div', {id: 'page', 'data-page': 'none', 'data-state': 'error'}, needKey
      ? h('p', {class: 'muted'}, 'The pages show once the API takes your key.')
      : h('p', {class: 'problem', role: 'alert'}, err instanceof APIError ? err.text : 'The API did not answer: ' + err.message)));
    if (!needKey) panel.hidden = true;
    return;
  }
  panel.hidden = true;
  message.textContent = '';
  showWho();
  show();
}

// show renders the page the hash names (#/tools, #/recent/12, …).
function show() {
  if (!about) return;
  const [name, ...args] = location.hash.replace(/^#\/?/, '').split('/');
  const page = pages[name] ? name : 'overview';
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (running) running.abort();
  running = new AbortController();
  document.title = titles[page] + ' · toolrouter console';
  const root = h('div', {id: 'page', 'data-page': page, 'data-state': 'loading'});
  clear(main).append(root);
  pages[page].render(root, {about, args: args.map(decodeURIComponent), signal: running.signal});
  const h1 = root.querySelector('h1');
  if (h1 && document.activeElement !== document.body && !main.contains(document.activeElement)) {
    h1.tabIndex = -1;
    h1.focus();
  }
}

window.addEventListener('hashchange', show);
start();
