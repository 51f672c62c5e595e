// The console's calls of the HTTP API: the caller's key (kept in sessionStorage) as a Bearer
// token, JSON bodies, the API's errors as APIError, and Server-Sent Events read from a POST.

const KEY = 'toolrouter.key';

export const key = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (k) => sessionStorage.setItem(KEY, k),
  clear: () => sessionStorage.removeItem(KEY),
};

// APIError is an error answer of the API: its status, code and message.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
  // text is the error as the pages show it: "401 invalid_credential: …".
  get text() {
    return `${this.status} ${this.code}: ${this.message}`;
  }
}

// Whoever wants to know that the API asked for a credential listens for this event on window.
export const NEED_KEY = 'toolrouter:needkey';

function headers(extra) {
  const hs = {Accept: 'application/json', ...extra};
  const k = key.get();
  if (k) hs.Authorization = 'Bearer ' + k;
  return hs;
}

function problem(status, body) {
  const e = body && body.error;
  const err = new APIError(status, (e && e.code) || 'http_' + status, (e && e.message) || 'the server answered ' + status);
  if (status === 401) window.dispatchEvent(new CustomEvent(NEED_KEY, {detail: err}));
  return err;
}

// get fetches path and returns its JSON; statuses in ok (beside 2xx) are answers too (/readyz
// answers 503 with its details).
export async function get(path, {signal, ok = []} = {}) {
  const resp = await fetch(path, {headers: headers(), signal, cache: 'no-store', credentials: 'omit'});
  let body = null;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  if (!resp.ok && !ok.includes(resp.status)) throw problem(resp.status, body);
  return body;
}

// post POSTs body as JSON to path and returns the answer's JSON.
export async function post(path, body, {signal} = {}) {
  const resp = await fetch(path, {
    method: 'POST', body: JSON.stringify(body), signal, cache: 'no-store', credentials: 'omit',
    headers: headers({'Content-Type': 'application/json'}),
  });
  let b = null;
  try {
    b = await resp.json();
  } catch {
    b = null;
  }
  if (!resp.ok) throw problem(resp.status, b);
  return b;
}

// stream POSTs body as JSON to path and calls onEvent with each event's data (a parsed JSON
// object whose type is the event's name) as it arrives; it returns once the stream ends.
export async function stream(path, body, onEvent, {signal} = {}) {
  const resp = await fetch(path, {
    method: 'POST', body: JSON.stringify(body), signal, cache: 'no-store', credentials: 'omit',
    headers: headers({'Content-Type': 'application/json', Accept: 'text/event-stream'}),
  });
  if (!resp.ok) {
    let b = null;
    try {
      b = await resp.json();
    } catch {
      b = null;
    }
    throw problem(resp.status, b);
  }
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += value.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) onEvent(JSON.parse(data));
    }
  }
}
