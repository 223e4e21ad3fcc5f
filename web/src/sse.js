// A small Server-Sent Events client on fetch, used instead of EventSource because it
// sends the token in the Authorization header, sees the HTTP status of a refused
// request (401, 404), receives events of any name (agent.* types are open-ended), and
// lets the caller decide whether to reconnect.

import { getToken, login } from './api.js';

// parseSSE feeds decoded text into an SSE parser and calls onEvent({event, id, data})
// for each complete event. It returns a function to call with more text.
export function sseParser(onEvent) {
  let buf = '';
  let event = '';
  let data = [];
  let id = null;
  return (chunk) => {
    buf += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      if (!m) break;
      // A lone \r at the end might be the first half of \r\n: wait for more.
      if (m[0] === '\r' && m.index === buf.length - 1) break;
      const line = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      if (line === '') {
        if (data.length) onEvent({ event: event || 'message', id, data: data.join('\n') });
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      let value = c < 0 ? '' : line.slice(c + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
  };
}

// SSEStream follows one SSE URL, reconnecting with Last-Event-ID after a drop, until
// close() or until onEvent returns 'stop'. onState(name, detail) reports 'open',
// 'reconnecting', 'ended' and 'error'.
export class SSEStream {
  constructor(url, { onEvent, onState = () => {}, reconnect = true }) {
    this.url = url;
    this.onEvent = onEvent;
    this.onState = onState;
    this.reconnect = reconnect;
    this.lastID = null;
    this.ctrl = null;
    this.closed = false;
    this.attempt = 0;
    this.run();
  }

  async run() {
    while (!this.closed) {
      this.ctrl = new AbortController();
      let stop = false;
      try {
        const headers = { Accept: 'text/event-stream' };
        const t = getToken();
        if (t) headers.Authorization = `Bearer ${t}`;
        if (this.lastID !== null) headers['Last-Event-ID'] = this.lastID;
        const res = await fetch(this.url, { headers, signal: this.ctrl.signal, cache: 'no-store' });
        if (res.status === 401) {
          this.onState('error', 'token needed');
          await login('The server wants an API token.');
          continue;
        }
        if (!res.ok) {
          let msg = `HTTP ${res.status}`;
          try {
            const body = await res.json();
            if (body && body.error && body.error.message) msg = body.error.message;
          } catch {
            // not JSON
          }
          this.onState('error', msg);
          if (res.status === 404 || res.status === 400 || res.status === 403) return;
          throw new Error(msg);
        }
        this.attempt = 0;
        this.onState('open', '');
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        const feed = sseParser((ev) => {
          if (ev.id !== null) this.lastID = ev.id;
          if (this.onEvent(ev) === 'stop') stop = true;
        });
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          feed(value);
          if (stop) {
            this.ctrl.abort();
            break;
          }
        }
        if (stop || !this.reconnect) {
          this.onState('ended', '');
          return;
        }
      } catch (err) {
        if (this.closed) return;
        if (!this.reconnect) {
          this.onState('error', String(err && err.message ? err.message : err));
          return;
        }
      }
      if (this.closed) return;
      const delay = Math.min(10000, 500 * 2 ** this.attempt++);
      this.onState('reconnecting', `retrying in ${(delay / 1000).toFixed(1)} s`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  close() {
    this.closed = true;
    if (this.ctrl) this.ctrl.abort();
  }
}
