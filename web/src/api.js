// Shared helpers for the dashboard and the terminal page: the API token, same-origin
// URLs, JSON requests and the login prompt.
//
// Every URL built here is relative to the page's own origin, so whichever cluster node
// served the page also answers its API calls, its SSE streams and its WebSockets (and
// forwards them to the sandbox's owner node).

const TOKEN_KEY = 'sandgate.token';

// takeTokenFromURL moves a ?token= query parameter into sessionStorage and removes it
// from the address bar, so the token does not stay in the history or a shared link.
export function takeTokenFromURL() {
  const url = new URL(location.href);
  const t = url.searchParams.get('token');
  if (t === null) return;
  setToken(t);
  url.searchParams.delete('token');
  history.replaceState(history.state, '', url.pathname + url.search + url.hash);
}

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage disabled: the token lives only as long as this page.
  }
}

// APIError is a failed API call, with the HTTP status and the API's error code.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code || '';
  }
}

// enc escapes one path segment.
export const enc = encodeURIComponent;

export function sandboxPath(sb) {
  return `/v1/sandboxes/${enc(sb)}`;
}

// withToken adds ?token= for the clients that cannot set headers (EventSource, WebSocket).
export function withToken(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null) q.set(k, String(v));
  }
  const t = getToken();
  if (t) q.set('token', t);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

// wsURL turns a same-origin path into a ws:// or wss:// URL.
export function wsURL(pathWithQuery) {
  const u = new URL(pathWithQuery, location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
}

// api sends one JSON request and returns the decoded body (null for 204). A 401 opens
// the login prompt, and the call is retried once a token has been entered.
export async function api(method, path, body, { signal } = {}) {
  for (;;) {
    const headers = {};
    const t = getToken();
    if (t) headers.Authorization = `Bearer ${t}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: 'no-store',
    });
    if (res.status === 401) {
      await login(t ? 'The server refused that token: enter another.' : 'The server wants an API token.');
      continue;
    }
    if (res.status === 204) return null;
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!res.ok) {
      const e = data && data.error;
      throw new APIError(res.status, e && e.code, (e && e.message) || text.trim() || `HTTP ${res.status}`);
    }
    return data;
  }
}

let loginPromise = null;

// login shows the token prompt once, however many callers are waiting on it, and
// resolves when a token has been stored.
export function login(reason) {
  if (loginPromise) return loginPromise;
  loginPromise = new Promise((resolve) => {
    const dlg = document.createElement('div');
    dlg.className = 'login';
    dlg.innerHTML = `
      <form class="login-box" autocomplete="off">
        <h2>sandgate</h2>
        <p class="login-reason"></p>
        <label>API token <input type="password" name="token" required autofocus></label>
        <button type="submit">Sign in</button>
        <p class="hint">Kept in this tab's session storage only.</p>
      </form>`;
    dlg.querySelector('.login-reason').textContent = reason || 'Enter the API token.';
    const form = dlg.querySelector('form');
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      setToken(form.token.value.trim());
      dlg.remove();
      loginPromise = null;
      resolve();
    });
    document.body.appendChild(dlg);
    form.token.focus();
  });
  return loginPromise;
}

// logout forgets the token.
export function logout() {
  setToken('');
}

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

export function fmtMs(ms) {
  if (ms === undefined || ms === null) return '–';
  if (ms % 86400000 === 0 && ms >= 86400000) return `${ms / 86400000}d`;
  if (ms % 3600000 === 0 && ms >= 3600000) return `${ms / 3600000}h`;
  if (ms % 60000 === 0 && ms >= 60000) return `${ms / 60000}m`;
  if (ms % 1000 === 0 && ms >= 1000) return `${ms / 1000}s`;
  return `${ms}ms`;
}

export function fmtBytes(n) {
  if (n === undefined || n === null) return '–';
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n / (1 << 20)} MiB`;
  if (n >= 1 << 10 && n % (1 << 10) === 0) return `${n / (1 << 10)} KiB`;
  return `${n} B`;
}

export function fmtTime(s) {
  if (!s) return '–';
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) return s;
  return d.toLocaleTimeString();
}
