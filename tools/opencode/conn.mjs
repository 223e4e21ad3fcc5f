// WebSocket helpers of the OpenCode PTY test: a connection to a pty's /connect that
// keeps OpenCode's framing apart (text frames are terminal output, a binary frame
// 0x00 + JSON is a control message), and a reader of sandgate's own byte stream of a
// process (/ws), the reference the OpenCode text is checked against. Every wait is
// bounded and settles when the socket closes, so a test never hangs on a socket.
import WebSocket from 'ws';

// A wait that does not name its own bound gets this one: generous, the machine that
// runs the tests may be loaded.
export const WAIT_MS = 30000;

// Waiters wakes the promises of wait() each time the state they test may have changed.
class Waiters {
  constructor() {
    this.list = [];
  }

  // wait resolves with pred()'s value once it is truthy; it rejects after ms, or when
  // dead() returns a reason (a closed socket), naming what it waited for and seen().
  wait(pred, what, seen, dead, ms = WAIT_MS) {
    return new Promise((resolve, reject) => {
      const w = {
        check: () => {
          const v = pred();
          if (v) {
            this.drop(w);
            resolve(v);
            return;
          }
          const reason = dead();
          if (reason) {
            this.drop(w);
            reject(new Error(`${what}: ${reason}; seen: ${seen()}`));
          }
        },
      };
      w.timer = setTimeout(() => {
        this.drop(w);
        reject(new Error(`${what}: not within ${ms} ms; seen: ${seen()}`));
      }, ms);
      this.list.push(w);
      w.check();
    });
  }

  drop(w) {
    clearTimeout(w.timer);
    this.list = this.list.filter((x) => x !== w);
  }

  wake() {
    for (const w of [...this.list]) w.check();
  }
}

// Handshake opens a WebSocket to url (headers optional) and resolves once it is open;
// it rejects with err.status set when the server answers the handshake with an HTTP
// status instead of upgrading, and with the socket's error otherwise.
function handshake(url, headers, onMessage, onClose, ms) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, handshakeTimeout: ms });
    ws.on('message', onMessage);
    ws.on('close', onClose);
    let refused = null;
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (req, res) => {
      refused = new Error(`handshake of ${url.replace(/ticket=[^&]*/, 'ticket=…')} answered ${res.statusCode}`);
      refused.status = res.statusCode;
      refused.body = '';
      // The refused request's socket stays open (keep-alive) unless ended here, and
      // would keep the test's process alive until the server drops it.
      const sock = res.socket;
      const end = () => { reject(refused); req.destroy(); sock?.destroy(); };
      res.on('data', (b) => { refused.body += b; });
      res.on('end', () => { refused.message += `: ${refused.body}`; end(); });
      res.on('error', end);
    });
    ws.on('error', (e) => reject(refused ?? e));
  });
}

// PtyConn is one OpenCode /connect WebSocket. Text frames before the first control
// frame without a gap are the replay, those after it are live; cursor() is what a
// client tracks: the last control frame's cursor plus the .length (UTF-16 code units)
// of every text frame after it.
export class PtyConn {
  static async open(url, { headers, ms = WAIT_MS } = {}) {
    const c = new PtyConn();
    c.ws = await handshake(url, headers, (data, binary) => c.onMessage(data, binary),
      (code, reason) => c.onClose(code, reason), ms);
    return c;
  }

  constructor() {
    this.ws = null;
    this.replay = ''; // text before the control frame that ends the replay
    this.live = ''; // text after it
    this.controls = []; // every control frame, parsed
    this.ready = null; // the control frame that ended the replay
    this.unitsAfter = 0; // UTF-16 code units of the text frames after the last control frame
    this.textFrames = 0;
    this.protocolErrors = [];
    this.closed = null; // {code, reason} once closed
    this.waiters = new Waiters();
  }

  onMessage(data, binary) {
    if (binary) {
      if (data.length === 0 || data[0] !== 0) {
        this.protocolErrors.push(`a binary frame that is not a control frame: ${data.toString('hex').slice(0, 64)}`);
      } else {
        try {
          const ctl = JSON.parse(data.subarray(1).toString('utf8'));
          this.controls.push(ctl);
          this.unitsAfter = 0;
          if (!this.ready && ctl.gap === undefined) this.ready = ctl;
        } catch (e) {
          this.protocolErrors.push(`a control frame that is not JSON: ${e.message}`);
        }
      }
    } else {
      const text = data.toString('utf8');
      this.textFrames++;
      this.unitsAfter += text.length;
      if (this.ready) this.live += text;
      else this.replay += text;
    }
    this.waiters.wake();
  }

  onClose(code, reason) {
    this.closed = { code, reason: reason.toString() };
    this.waiters.wake();
  }

  // text is every text frame received, in order.
  get text() {
    return this.replay + this.live;
  }

  // cursor is the position a client resumes from after what it has received.
  cursor() {
    const last = this.controls.at(-1);
    return last === undefined ? undefined : last.cursor + this.unitsAfter;
  }

  seen() {
    const t = this.text;
    return JSON.stringify(t.length > 2000 ? '…' + t.slice(-2000) : t) +
      ` controls ${JSON.stringify(this.controls)} closed ${JSON.stringify(this.closed)}`;
  }

  // wait resolves with pred(this) once truthy; a closed socket or ms fails it.
  wait(pred, what, ms) {
    return this.waiters.wait(() => pred(this), what, () => this.seen(),
      () => (this.closed ? `closed ${JSON.stringify(this.closed)}` : ''), ms);
  }

  // waitText resolves with the match of re in the live text (after the replay's
  // control frame), or in all the text when whole is true.
  waitText(re, what, { whole = false, ms } = {}) {
    return this.wait((c) => (whole ? c.text : c.live).match(re), what, ms);
  }

  waitReady(ms) {
    return this.wait((c) => c.ready, 'the control frame that ends the replay', ms);
  }

  // type sends s as input: a text frame, or a binary one when binary is true.
  type(s, binary = false) {
    this.ws.send(binary ? Buffer.from(s, 'utf8') : s, { binary });
  }

  // close closes the socket normally and resolves once it is closed.
  close(ms = WAIT_MS) {
    if (this.closed) return Promise.resolve(this.closed);
    this.ws.close(1000);
    return this.waiters.wait(() => this.closed, 'the close of the connection', () => this.seen(), () => '', ms)
      .catch((e) => { this.ws.terminate(); throw e; });
  }

  terminate() {
    if (this.ws && !this.closed) this.ws.terminate();
  }
}

// ByteStream reads sandgate's own WebSocket of a process (binary frames are output
// bytes, text frames JSON control messages) and keeps every byte.
export class ByteStream {
  static async open(url, token, ms = WAIT_MS) {
    const s = new ByteStream();
    s.ws = await handshake(url, { Authorization: `Bearer ${token}` },
      (data, binary) => s.onMessage(data, binary), (code, reason) => s.onClose(code, reason), ms);
    return s;
  }

  constructor() {
    this.ws = null;
    this.chunks = [];
    this.messages = [];
    this.closed = null;
    this.waiters = new Waiters();
  }

  onMessage(data, binary) {
    if (binary) this.chunks.push(Buffer.from(data));
    else this.messages.push(JSON.parse(data.toString('utf8')));
    this.waiters.wake();
  }

  onClose(code, reason) {
    this.closed = { code, reason: reason.toString() };
    this.waiters.wake();
  }

  // text is the output so far decoded as UTF-8 (what the process wrote, whole).
  get text() {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  wait(pred, what, ms) {
    return this.waiters.wait(() => pred(this), what,
      () => `${JSON.stringify(this.text.slice(-2000))} messages ${JSON.stringify(this.messages)}`,
      () => (this.closed ? `closed ${JSON.stringify(this.closed)}` : ''), ms);
  }

  terminate() {
    if (this.ws && !this.closed) this.ws.terminate();
  }
}

// tryOpen opens url and reports how it went: {status} when the handshake was refused
// with an HTTP status, or {conn} (a PtyConn that either stays open or was closed, see
// conn.closed) when it was upgraded.
export async function tryOpen(url, opts) {
  try {
    return { conn: await PtyConn.open(url, opts) };
  } catch (e) {
    if (e.status !== undefined) return { status: e.status, body: e.body };
    throw e;
  }
}
