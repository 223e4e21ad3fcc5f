// TermConn keeps one browser attached to one terminal of the API across dropped
// connections, knowing nothing about how the bytes are drawn.
//
// Lifecycle:
//  1. start() PUTs the terminal (get-or-create) with the fitted size and remembers the
//     process id behind it.
//  2. It opens GET /v1/sandboxes/{sb}/terminals/{t}/ws, at first without an offset, so
//     a page opened late replays what the ring buffer still holds, and the server's
//     ready message says at which offset N that replay starts.
//  3. Binary frames are output: N grows by their length. A gap message moves N to its
//     end and is reported; exit is reported and ends the connection for good.
//  4. A connection that closes without exit is reopened after a backoff (250 ms doubling
//     to 8 s, with jitter) with ?offset=N, so the output resumes exactly where it stopped:
//     no byte twice, none missing (any the server no longer has arrive as a gap).
//     Before reopening it PUTs the terminal again; if a different process answers (the
//     sandbox woke from hibernation, or the server restarted) the stream starts over.
//
// Callbacks run synchronously on the page's event loop. TermConn is not shared between
// pages: two pages on one terminal each have their own.

const te = new TextEncoder();

const BACKOFF_MIN = 250;
const BACKOFF_MAX = 8000;

export class TermConn {
  constructor({ sandbox, terminal, api, paths, size, on }) {
    this.sandbox = sandbox;
    this.terminal = terminal;
    this.api = api; // { put(size) -> terminal object, get() -> terminal object, probe() -> Response }
    this.paths = paths; // { ws(offset) -> ws URL }
    this.size = size; // () => {cols, rows}
    this.on = on; // { output(bytes), gap(from, to), exit(msg), state(name, detail), restarted(oldProc, newProc), error(err), login() -> Promise }
    this.offset = null; // offset of the next output byte; null until the first ready
    this.process = null; // the process id behind the terminal
    this.ws = null;
    this.exited = false;
    this.closed = false;
    this.attempt = 0;
    this.timer = null;
    this.reconnects = 0; // how many times a dropped connection was reopened
    this.state = 'idle';
    this.onOnline = () => {
      if (this.timer) this.retryNow();
    };
    window.addEventListener('online', this.onOnline);
  }

  setState(name, detail) {
    this.state = name;
    this.on.state(name, detail || '');
  }

  // start makes sure the terminal exists and attaches to it.
  async start() {
    this.setState('connecting', 'creating terminal');
    try {
      const t = await this.api.put(this.size());
      this.process = t && t.process;
    } catch (err) {
      this.fail(err);
      return;
    }
    this.connect();
  }

  // restart asks for the terminal again after its shell exited, and attaches anew.
  async restart() {
    if (!this.exited) return;
    this.exited = false;
    this.attempt = 0;
    this.setState('connecting', 'restarting terminal');
    try {
      const t = await this.api.put(this.size());
      this.adopt(t);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.connect();
  }

  // adopt records the process behind the terminal; a new process has its own offsets.
  adopt(t) {
    const p = t && t.process;
    if (p && this.process && p !== this.process) {
      const old = this.process;
      this.process = p;
      this.offset = null;
      this.on.restarted(old, p);
    } else if (p) {
      this.process = p;
    }
  }

  fail(err) {
    if (err && err.status === 404) {
      this.closed = true;
      this.setState('gone', err.message);
      return;
    }
    this.on.error(err);
    this.scheduleReconnect(err && err.message);
  }

  connect() {
    if (this.closed || this.exited) return;
    clearTimeout(this.timer);
    this.timer = null;
    const ws = new WebSocket(this.paths.ws(this.offset));
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    let ready = false;
    this.setState('connecting', this.attempt ? `attempt ${this.attempt + 1}` : '');

    ws.onmessage = (ev) => {
      if (ws !== this.ws) return;
      if (typeof ev.data !== 'string') {
        const bytes = new Uint8Array(ev.data);
        this.offset = (this.offset ?? 0) + bytes.length;
        this.on.output(bytes);
        return;
      }
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      switch (msg.type) {
        case 'ready':
          ready = true;
          // ready.offset is where this stream starts: the offset asked for, or the
          // oldest byte still buffered when none was. A later start than asked is a
          // hole, whether or not a gap message follows to say so.
          if (typeof msg.offset === 'number') {
            if (this.offset !== null && msg.offset > this.offset) this.on.gap(this.offset, msg.offset);
            this.offset = msg.offset;
          }
          if (this.attempt > 0 || this.wasOpen) this.reconnects++;
          this.wasOpen = true;
          this.attempt = 0;
          this.setState('open', '');
          this.sendResize();
          break;
        case 'gap':
          if (typeof msg.to === 'number' && (this.offset === null || msg.to > this.offset)) {
            this.on.gap(Math.max(this.offset ?? 0, msg.from || 0), msg.to);
            this.offset = msg.to;
          }
          break;
        case 'exit':
          this.exited = true;
          this.on.exit(msg);
          this.setState('exited', exitText(msg));
          break;
        default:
          break;
      }
    };

    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      this.ws = null;
      if (this.closed) return;
      if (this.exited) return; // exit was reported already
      this.dropped(ready, ev);
    };
    // onerror is always followed by onclose, which does the work.
    ws.onerror = () => {};
  }

  // dropped decides what to do after a connection ended without an exit message.
  async dropped(wasReady, ev) {
    if (!wasReady) {
      // The handshake failed: the WebSocket API hides why, so ask the REST API.
      try {
        const res = await this.api.probe();
        if (res.status === 401) {
          this.setState('auth', 'token needed');
          await this.on.login();
          this.connect();
          return;
        }
        if (res.status === 404) {
          this.closed = true;
          this.setState('gone', 'terminal not found');
          return;
        }
      } catch {
        // Network down: back off below.
      }
    }
    const why = ev && ev.code ? `closed (${ev.code}${ev.reason ? ': ' + ev.reason : ''})` : 'connection lost';
    this.scheduleReconnect(why);
  }

  scheduleReconnect(why) {
    if (this.closed || this.exited) return;
    const base = Math.min(BACKOFF_MAX, BACKOFF_MIN * 2 ** this.attempt);
    const delay = Math.round(base * (0.8 + 0.4 * Math.random()));
    this.attempt++;
    this.setState('reconnecting', `${why || 'connection lost'}; retrying in ${(delay / 1000).toFixed(1)} s`);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.reattach(), delay);
  }

  retryNow() {
    clearTimeout(this.timer);
    this.timer = null;
    this.reattach();
  }

  async reattach() {
    this.timer = null;
    if (this.closed || this.exited) return;
    try {
      // Get-or-create again: a hibernated sandbox restarts its terminal on this request.
      const t = await this.api.put(this.size());
      this.adopt(t);
    } catch (err) {
      if (err && err.status === 404) {
        this.fail(err);
        return;
      }
      if (err && err.status === 401) {
        this.setState('auth', 'token needed');
        await this.on.login();
      } else if (err && err.status) {
        // The API answered with an error (policy, budget…): show it and keep trying.
        this.scheduleReconnect(err.message);
        return;
      }
      // A network error: try the WebSocket anyway, its failure backs off.
    }
    this.connect();
  }

  // send writes input to the terminal; it returns false when no connection is open.
  send(data) {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.state !== 'open') return false;
    ws.send(typeof data === 'string' ? te.encode(data) : data);
    return true;
  }

  resize() {
    this.sendResize();
  }

  sendResize() {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    const { cols, rows } = this.size();
    if (!cols || !rows) return;
    ws.send(JSON.stringify({ type: 'resize', cols, rows }));
  }

  // dropConnection closes the socket as if the network had failed (for manual testing
  // from the console); the connection is reopened as after any drop.
  dropConnection() {
    if (this.ws) this.ws.close(4000, 'dropped by page');
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    window.removeEventListener('online', this.onOnline);
    if (this.ws) this.ws.close(1000, 'page closed');
    this.ws = null;
  }
}

export function exitText(msg) {
  if (!msg) return 'exited';
  if (msg.signal) return `killed by ${msg.signal}`;
  if (msg.exit_code !== undefined && msg.exit_code !== null) return `exit code ${msg.exit_code}`;
  return 'exited';
}
