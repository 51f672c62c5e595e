// Building the DOM without HTML strings: text is always text, never markup.

// h makes an element: attrs sets attributes ("class", "text" for textContent, "on*" for
// listeners; null, undefined and false leave one out), children are nodes or strings.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

// append adds children (nested arrays flattened; null, undefined and false skipped) to el.
export function append(el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// clear empties el and returns it.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// ms formats milliseconds for a person: "0.4 ms", "12 ms", "1.23 s".
export function ms(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (v >= 1000) return (v / 1000).toFixed(2) + ' s';
  if (v >= 10) return Math.round(v) + ' ms';
  return v.toFixed(1) + ' ms';
}

// num formats a count with thousands separators.
export function num(v) {
  return (v ?? 0).toLocaleString('en-US');
}

// json pretty-prints a value.
export function json(v) {
  return JSON.stringify(v, null, 2);
}

// time formats an RFC 3339 time as local date and time, to the second.
export function time(s) {
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) return s || '–';
  return d.toLocaleString('en-GB', {year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit'});
}

// yesNo says a boolean in words, with a sign beside it that is not colour alone.
export function yesNo(b, yes = 'yes', no = 'no') {
  return h('span', {class: b ? 'ok' : 'bad'}, b ? '✓ ' + yes : '✗ ' + no);
}

// state shows a server's status as a word with a sign: up, starting, down.
export function state(s) {
  const sign = {up: '●', starting: '◐', down: '○'}[s] || '?';
  return h('span', {class: 'state state-' + s}, sign + ' ' + s);
}

// section makes a titled section.
export function section(title, ...children) {
  const id = 'sec-' + title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return h('section', {class: 'card', 'aria-labelledby': id}, h('h2', {id}, title), children);
}

// table makes a table from a header row and rows of cells (nodes or strings); caption is read
// by screen readers.
export function table(caption, head, rows, attrs = {}) {
  return h('table', attrs,
    h('caption', {class: caption.startsWith('!') ? 'sr-only' : null}, caption.replace(/^!/, '')),
    h('thead', {}, h('tr', {}, head.map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) => i === 0 ? h('th', {scope: 'row'}, c) : h('td', {}, c))))));
}

// dl makes a description list from [term, value] pairs (pairs whose value is undefined are left out).
export function dl(pairs, attrs = {}) {
  return h('dl', attrs, pairs.filter((p) => p[1] !== undefined).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

// badge is a short label beside a name (read-only, quarantined, …): its text says what it means,
// its class (badge-KIND, KIND from the text unless given) only colours it.
export function badge(text, kind = text) {
  return h('span', {class: 'badge badge-' + kind.toLowerCase().replace(/[^a-z0-9]+/g, '-')}, text);
}
