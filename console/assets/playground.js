// Playground: a query routed (POST /v1/route/stream) or answered (POST /v1/answer/stream) while
// you watch: each event as it arrives, then the request's whole timeline, its final JSON and the
// curl command that sends the same request.
import {h, clear, json, ms, num} from './dom.js';
import {stream, key, APIError} from './api.js';
import {render as timeline} from './timeline.js';

export function render(root, {signal}) {
  const query = h('textarea', {id: 'pg-query', rows: 3, required: true, spellcheck: 'false'});
  const route = h('input', {type: 'radio', name: 'pg-endpoint', id: 'pg-route', value: 'route', checked: true});
  const answer = h('input', {type: 'radio', name: 'pg-endpoint', id: 'pg-answer', value: 'answer'});
  const synth = h('select', {id: 'pg-synthesize', disabled: true},
    ['auto', 'always', 'never'].map((v) => h('option', {value: v}, v)));
  const caller = h('input', {id: 'pg-caller', type: 'text', autocomplete: 'off', spellcheck: 'false'});
  const run = h('button', {type: 'submit', id: 'pg-run'}, 'Run');
  const stop = h('button', {type: 'button', id: 'pg-stop', disabled: true}, 'Stop');
  const status = h('p', {id: 'pg-status', class: 'muted', role: 'status'}, 'Type a query and run it.');
  const tl = h('div', {id: 'pg-timeline', 'data-state': 'idle'});
  const out = h('pre', {id: 'pg-json', class: 'code'});
  const curl = h('pre', {id: 'pg-curl', class: 'code'});
  const copy = h('button', {type: 'button', id: 'pg-copy'}, 'Copy the curl command');
  const copied = h('span', {class: 'muted small', role: 'status'});
  for (const r of [route, answer]) r.addEventListener('change', () => {
    synth.disabled = !answer.checked;
    showCurl();
  });
  for (const c of [query, synth, caller]) c.addEventListener('input', showCurl);
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(curl.textContent);
      copied.textContent = 'Copied.';
    } catch {
      // No clipboard outside a secure context: select the text instead.
      const range = document.createRange();
      range.selectNodeContents(curl);
      getSelection().removeAllRanges();
      getSelection().addRange(range);
      copied.textContent = 'Selected: copy it with Ctrl+C.';
    }
  });

  const request = () => {
    const body = {query: query.value};
    if (caller.value.trim()) body.caller = caller.value.trim();
    if (answer.checked && synth.value !== 'auto') body.synthesize = synth.value;
    return {path: answer.checked ? '/v1/answer/stream' : '/v1/route/stream', body};
  };
  function showCurl() {
    const {path, body} = request();
    const quote = (s) => "'" + s.replace(/'/g, "'\\''") + "'";
    curl.textContent = `curl -sN ${location.origin}${path} -H 'Content-Type: application/json'` +
      (key.get() ? ' -H "Authorization: Bearer $TOOLROUTER_KEY"' : '') + ` -d ${quote(JSON.stringify(body))}`;
  }
  showCurl();

  let current = null;
  stop.addEventListener('click', () => current && current.abort());
  signal.addEventListener('abort', () => current && current.abort());
  const form = h('form', {id: 'pg-form', onsubmit: async (e) => {
    e.preventDefault();
    if (!query.value.trim()) return;
    current = new AbortController();
    run.disabled = true;
    stop.disabled = false;
    await go(request(), current.signal, {status, tl, out});
    run.disabled = false;
    stop.disabled = true;
  }},
  h('div', {class: 'field'}, h('label', {for: 'pg-query'}, 'Query'), query),
  h('div', {class: 'row'},
    h('fieldset', {}, h('legend', {}, 'Endpoint'),
      h('label', {for: 'pg-route'}, route, ' Route ', h('code', {}, '/v1/route/stream')),
      h('label', {for: 'pg-answer'}, answer, ' Answer ', h('code', {}, '/v1/answer/stream'))),
    h('div', {class: 'field'}, h('label', {for: 'pg-synthesize'}, 'Synthesize (answer)'), synth),
    h('div', {class: 'field'}, h('label', {for: 'pg-caller'}, 'Caller (optional)'), caller)),
  h('div', {class: 'row'}, run, stop));

  root.append(h('h1', {}, 'Playground'),
    h('section', {class: 'card', 'aria-label': 'Request'}, form),
    h('section', {class: 'card', 'aria-labelledby': 'pg-tl-title'}, h('h2', {id: 'pg-tl-title'}, 'Timeline'), status, tl),
    h('section', {class: 'card', 'aria-labelledby': 'pg-json-title'}, h('h2', {id: 'pg-json-title'}, 'Final JSON'), out),
    h('section', {class: 'card', 'aria-labelledby': 'pg-curl-title'}, h('h2', {id: 'pg-curl-title'}, 'The same request with curl'), curl, h('div', {class: 'row'}, copy, copied)));
  root.dataset.state = 'ready';
  query.focus();
}

// go sends the request and shows its events as they come, then its timeline.
async function go({path, body}, signal, {status, tl, out}) {
  const live = h('ol', {class: 'timeline live'});
  clear(tl).append(live);
  tl.dataset.state = 'streaming';
  out.textContent = '';
  status.textContent = 'Streaming ' + path + '…';
  status.className = 'muted';
  const selections = {};
  const started = performance.now();
  let done = false;
  try {
    await stream(path, body, (ev) => {
      if (ev.type === 'select_complete') selections[ev.round] = ev.selection;
      if (ev.type === 'complete') {
        done = true;
        const {type: _type, ...payload} = ev;
        out.textContent = json(payload);
        const outcome = payload.routing || payload;
        clear(tl).append(timeline(outcome, {selections, council: payload.council, final: payload.final, answeredBy: payload.answered_by}));
        tl.dataset.state = 'complete';
        status.textContent = `Complete in ${ms(performance.now() - started)}` + usage(payload);
        return;
      }
      if (ev.type === 'error') {
        done = true;
        const e = ev.error || {};
        out.textContent = json(ev);
        status.textContent = `${e.status} ${e.code}: ${e.message}`;
        status.className = 'problem';
        tl.dataset.state = 'error';
        return;
      }
      live.append(liveEntry(ev));
    }, {signal});
    if (!done) {
      status.textContent = 'The stream ended without its complete event.';
      status.className = 'problem';
      tl.dataset.state = 'error';
    }
  } catch (err) {
    tl.dataset.state = 'error';
    status.className = 'problem';
    status.textContent = err.name === 'AbortError' ? 'Stopped.' : err instanceof APIError ? err.text : 'The request failed: ' + err.message;
  }
}

function usage(p) {
  const u = (p.usage && (p.usage.total || p.usage)) || null;
  if (!u) return '.';
  return `: ${num(u.llm_calls)} model calls, ${num(u.prompt_tokens)} prompt + ${num(u.completion_tokens)} completion tokens.`;
}

// liveEntry is one streamed event, as it arrives.
function liveEntry(ev) {
  const call = ev.call || {};
  const name = call.server ? `${call.server}.${call.tool}` : call.tool;
  let text;
  switch (ev.type) {
    case 'select_start': text = `Selecting, round ${ev.round}…`; break;
    case 'select_complete': {
      const s = ev.selection || {};
      const st = ev.step || {};
      text = `Selected in round ${ev.round}: ${s.use_tool ? (s.tools || []).join(', ') : 'no tool'}` +
        (s.reasoning ? ` (“${s.reasoning}”)` : '') + ` · ${ms(st.duration_ms)} · ${num(st.prompt_tokens)} + ${num(st.completion_tokens)} tokens`;
      break;
    }
    case 'tool_call_start': text = `Step ${call.step}: writing the arguments of ${name}…`; break;
    case 'tool_call_complete': text = `Step ${call.step}: ${name} ${JSON.stringify(call.arguments)}`; break;
    case 'approval_required': text = `Step ${call.step}: ${name} awaits approval: ${(ev.pending || {}).reason || ''}`; break;
    case 'tool_result': text = `Step ${call.step}: ` + (call.error ? `✗ ${call.error.code}: ${call.error.message}` : `result ${call.result ? call.result.text : ''}`); break;
    default: {
      const members = ev.data && ev.data.members;
      text = ev.type.replace('_', ' ') + (members ? ': ' + members.join(', ') : '');
    }
  }
  return h('li', {class: 'step live-' + ev.type, 'data-kind': ev.type}, h('div', {class: 'step-head'}, h('span', {class: 'kind'}, ev.type), ' ', h('span', {class: 'what'}, text)));
}
