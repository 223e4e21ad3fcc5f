// The OpenCode PTY API of one sandbox, driven by the published OpenCode SDK
// (@opencode-ai/sdk, v2 entry, client.pty) and the ws package, through the node named
// by BASE_URL (a cluster node that does not own the sandbox, as the Go driver in
// internal/clustertest picks it). Environment: BASE_URL (http://host:port of the
// node), TOKEN (the API token), SB (an existing sandbox).
//
// Steps: shells, create (bash), list, get, update (title, size: `stty size` follows),
// connect-token, connect with the ticket (a second use fails), type and read, multi-byte
// output before the disconnect, disconnect; multi-byte output while disconnected;
// reconnect from the tracked cursor and get exactly what came after it (checked against
// sandgate's own byte stream of the process); cursor -1; remove, and the process tree
// is gone. Then a pty that exits (its output, a normal close, its exit code) and an
// unknown one (404, and 1008 on connect). Each step is bounded; a failed step skips
// the rest.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createOpencodeClient } from '@opencode-ai/sdk/v2';
import { ByteStream, PtyConn, WAIT_MS, tryOpen } from './conn.mjs';
import { api, esc, exec, ok, sleep } from './util.mjs';

const BASE_URL = process.env.BASE_URL;
const TOKEN = process.env.TOKEN;
const SB = process.env.SB;
if (!BASE_URL || !TOKEN || !SB) throw new Error('set BASE_URL, TOKEN and SB');

const OC = `${BASE_URL}/v1/sandboxes/${encodeURIComponent(SB)}/opencode`;
const WS_OC = OC.replace(/^http/, 'ws');
const auth = { Authorization: `Bearer ${TOKEN}` };
const client = createOpencodeClient({ baseUrl: OC, headers: auth });
const sandgate = (method, path, body) => api(BASE_URL, TOKEN, method, `/v1/sandboxes/${encodeURIComponent(SB)}${path}`, body);

// What the terminal prints. Typed lines use arithmetic or octal escapes, so the echo
// of the typed line never matches what its output is matched against.
const ENV_MARK = 'env-é';
const MULTI = 'é 中文 😀'; // 2-, 3- and 4-byte UTF-8: 1, 1 and 2 UTF-16 code units
const MULTI_OCTAL = '\\303\\251 \\344\\270\\255\\346\\226\\207 \\360\\237\\230\\200';
const FLAG = 'oc-resume-flag'; // in the workspace, the pty's and exec's default cwd
const AFTER_M2 = new RegExp(`M2:${MULTI}:42\\r?\\n[^]*oc\\$ `); // and the prompt after it

const s = {}; // what the steps share
const open = []; // sockets to end whatever happens
let broken = '';

// step runs one sequential subtest, skipped once an earlier one failed.
function step(t, name, fn, ms = 4 * WAIT_MS) {
  return t.test(name, { skip: broken ? `after the failed step "${broken}"` : false, timeout: ms }, async () => {
    try {
      await fn();
    } catch (e) {
      broken = name;
      throw e;
    }
  });
}

function connectURL(ticket, cursor, id = s.pty.id) {
  const q = new URLSearchParams({ ticket });
  if (cursor !== undefined) q.set('cursor', String(cursor));
  return `${WS_OC}/pty/${encodeURIComponent(id)}/connect?${q}`;
}

async function ticket(id = s.pty.id) {
  const tok = ok(await client.pty.connectToken({ ptyID: id }), 'connect-token');
  assert.equal(typeof tok.ticket, 'string');
  assert.ok(tok.ticket.length >= 16, `a ticket long enough not to be guessed: ${tok.ticket}`);
  assert.ok(Number.isFinite(tok.expires_in) && tok.expires_in > 0 && tok.expires_in <= 60, `expires_in ${tok.expires_in}`);
  return tok.ticket;
}

async function connect(cursor, id = s.pty.id) {
  const c = await PtyConn.open(connectURL(await ticket(id), cursor, id));
  open.push(c);
  return c;
}

// samePty checks the fields a pty keeps between answers.
function samePty(got, want, what) {
  for (const k of ['id', 'title', 'command', 'args', 'cwd', 'status', 'pid']) {
    assert.deepEqual(got[k], want[k], `${what}: ${k} of ${JSON.stringify(got)}`);
  }
}

after(async () => {
  for (const c of open) c.terminate();
  if (s.pty && !s.removed) await client.pty.remove({ ptyID: s.pty.id }).catch(() => {});
  if (s.short) await client.pty.remove({ ptyID: s.short.id }).catch(() => {});
});

// Within the Go driver's bound (5 min), so that its report includes this one's.
test('OpenCode PTY API through the published SDK', { timeout: 8 * WAIT_MS }, async (t) => {
  await step(t, 'shells lists the bash of the sandbox', async () => {
    const shells = ok(await client.pty.shells(), 'shells');
    assert.ok(Array.isArray(shells) && shells.length > 0, `shells: ${JSON.stringify(shells)}`);
    for (const sh of shells) {
      assert.equal(typeof sh.path, 'string');
      assert.equal(typeof sh.name, 'string');
      assert.equal(typeof sh.acceptable, 'boolean');
    }
    const bash = shells.find((sh) => sh.path.endsWith('/bash') && sh.acceptable);
    assert.ok(bash, `no acceptable bash in ${JSON.stringify(shells)}`);
    s.bash = bash.path;
  });

  await step(t, 'create, list and get a pty', async () => {
    const args = ['--norc', '--noprofile'];
    const res = await client.pty.create({ command: s.bash, args, title: 'sdk-term', env: { PS1: 'oc$ ', OC_MARK: ENV_MARK } });
    const pty = ok(res, 'create');
    assert.equal(res.response.status, 200);
    assert.equal(typeof pty.id, 'string');
    assert.equal(pty.title, 'sdk-term');
    assert.equal(pty.command, s.bash);
    assert.deepEqual(pty.args, args);
    assert.equal(pty.status, 'running');
    assert.ok(Number.isInteger(pty.pid) && pty.pid > 0, `pid ${pty.pid}`);
    assert.ok(typeof pty.cwd === 'string' && pty.cwd.startsWith('/'), `cwd ${pty.cwd}`);
    assert.equal(pty.exitCode, undefined);
    s.pty = pty;

    const list = ok(await client.pty.list(), 'list');
    const listed = list.filter((p) => p.id === pty.id);
    assert.equal(listed.length, 1, `the pty once in ${JSON.stringify(list)}`);
    samePty(listed[0], pty, 'list');
    samePty(ok(await client.pty.get({ ptyID: pty.id }), 'get'), pty, 'get');

    // The directory travels as a query parameter on GET and as an encoded header
    // otherwise; one outside the workspace is refused.
    const inWs = createOpencodeClient({ baseUrl: OC, headers: auth, directory: pty.cwd });
    samePty(ok(await inWs.pty.get({ ptyID: pty.id }), 'get with the workspace as directory'), pty, 'get with directory');
    const outside = await createOpencodeClient({ baseUrl: OC, headers: auth, directory: '/' }).pty.list();
    assert.equal(outside.response.status, 400, `list with directory / : ${JSON.stringify(outside.error)}`);
  });

  await step(t, 'update sets the title and the size, and stty size follows', async () => {
    const upd = ok(await client.pty.update({ ptyID: s.pty.id, title: 'renamed', size: { rows: 33, cols: 111 } }), 'update');
    samePty(upd, { ...s.pty, title: 'renamed' }, 'update');
    samePty(ok(await client.pty.get({ ptyID: s.pty.id }), 'get'), upd, 'get after update');
    s.pty = upd;
    // The pty is a sandgate process with a terminal, its title the process's label.
    const proc = await sandgate('GET', `/processes/${encodeURIComponent(s.pty.id)}`);
    assert.equal(proc.status, 200, JSON.stringify(proc.body));
    assert.equal(proc.body.pty, true);
    assert.equal(proc.body.label, 'renamed');
    assert.equal(proc.body.status, 'running');
  });

  await step(t, 'connect with a ticket; a second use of it fails', async () => {
    const tk = await ticket();
    const c = await PtyConn.open(connectURL(tk));
    open.push(c);
    s.c1 = c;
    // Nothing of the output has left the ring: the replay runs from the start, and the
    // cursor counts the text sent.
    const ready = await c.waitReady();
    assert.equal(ready.cursor, c.replay.length, `the cursor after a replay from the start: ${c.seen()}`);

    const again = await tryOpen(connectURL(tk));
    if (again.conn) {
      open.push(again.conn);
      await again.conn.wait((x) => x.closed, 'the close of a connection with a used ticket');
      assert.equal(again.conn.closed.code, 1008, `a used ticket: ${again.conn.seen()}`);
      assert.equal(again.conn.textFrames, 0, `a used ticket got output: ${again.conn.seen()}`);
    } else {
      assert.ok([401, 403].includes(again.status), `a used ticket: handshake answered ${again.status} ${again.body}`);
    }

    c.type('stty size\n');
    await c.waitText(/\b33 111\r?\n/, 'stty size after the update');
    ok(await client.pty.update({ ptyID: s.pty.id, size: { rows: 40, cols: 200 } }), 'resize while connected');
    c.type('stty size\n');
    await c.waitText(/\b40 200\r?\n/, 'stty size after a resize while connected');
  });

  await step(t, 'type and read, in text and binary frames, with multi-byte output', async () => {
    const c = s.c1;
    c.type('echo "E:$OC_MARK:$((6*7))" "C:$PWD"\n', true);
    await c.waitText(new RegExp(`E:${ENV_MARK}:42 C:${esc(s.pty.cwd)}\\r?\\n`), 'the env and cwd of the pty');
    c.type(`printf 'M1:${MULTI_OCTAL}:%s\\n' $((1+1))\n`);
    await c.waitText(new RegExp(`M1:${MULTI}:2\\r?\\n`), 'multi-byte output');
    // A background job (a process group of its own under job control) to find after
    // the remove; the shell's pid is the pty's.
    c.type('sleep 1000 & echo "P:$$:$!"\n');
    const m = await c.waitText(/P:(\d+):(\d+)\r?\n/, 'the pids of the shell and its job');
    s.pids = [Number(m[1]), Number(m[2])];
    assert.equal(s.pids[0], s.pty.pid, 'the pty\'s pid is its shell\'s');
  });

  await step(t, 'disconnect; the pty writes multi-byte output meanwhile', async () => {
    const c = s.c1;
    await sandgate('POST', '/exec', { command: `rm -f ${FLAG}` });
    c.type(`until [ -e ${FLAG} ]; do sleep 0.1; done; printf 'M2:${MULTI_OCTAL}:%s\\n' $((40+2)) # wait-7\n`);
    await c.waitText(/# wait-7/, 'the echo of the typed line');
    await c.close();
    s.cursor = c.cursor();
    s.text1 = c.text;
    assert.equal(s.c1.protocolErrors.length, 0, s.c1.protocolErrors.join('; '));
    assert.ok(!s.text1.includes(`M2:${MULTI}`), 'output of the awaited command before the flag was set');

    // sandgate's own byte stream of the process, from its first byte: the reference.
    s.bytes = await ByteStream.open(`${BASE_URL.replace(/^http/, 'ws')}/v1/sandboxes/${encodeURIComponent(SB)}/processes/${encodeURIComponent(s.pty.id)}/ws?offset=0`, TOKEN);
    open.push(s.bytes);
    const res = await sandgate('POST', '/exec', { command: `touch ${FLAG}` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.exit_code, 0, JSON.stringify(res.body));
    await s.bytes.wait((b) => AFTER_M2.test(b.text), 'the output written while disconnected, and the prompt after it');
  });

  await step(t, 'reconnect from the tracked cursor: nothing lost, nothing repeated', async () => {
    const full = s.bytes.text;
    assert.equal(full.slice(0, s.cursor), s.text1, 'the text of the first connection is the process\'s output up to the cursor');
    const c = await connect(s.cursor);
    s.c2 = c;
    await c.waitText(AFTER_M2, 'the output written while disconnected, and the prompt', { whole: true });
    assert.equal(c.controls.filter((x) => x.gap !== undefined).length, 0, `no gap: ${JSON.stringify(c.controls)}`);
    const ready = await c.waitReady();
    assert.equal(ready.cursor, s.cursor + c.replay.length, `the cursor after the replay: ${c.seen()}`);
    assert.ok(c.text.includes(`M2:${MULTI}:42`), `the multi-byte output after the cursor: ${c.seen()}`);
    // What the two connections got is the process's output, in order, once.
    const got = s.text1 + c.text;
    const ref = (await s.bytes.wait((b) => b.text.length >= got.length && b.text, 'the reference to catch up')).slice(0, got.length);
    assert.equal(got, ref, 'both connections together are the process\'s output');
    assert.equal(got.split(`M2:${MULTI}:42`).length, 2, 'the output written while disconnected, once');
    assert.equal(c.protocolErrors.length, 0, c.protocolErrors.join('; '));
  });

  await step(t, 'cursor -1 starts at the end, then follows', async () => {
    const end = s.c2.cursor();
    const c = await connect(-1);
    const ready = await c.waitReady();
    assert.equal(c.replay, '', 'no replay from the end');
    assert.equal(ready.cursor, end, 'the end is where the other connection is');
    c.type('echo "L:$((5*5))"\n');
    await c.waitText(/L:25\r?\n[^]*oc\$ $/, 'live output after cursor -1, and the prompt');
    await s.c2.waitText(/L:25\r?\n[^]*oc\$ $/, 'the same output on the other connection');
    assert.equal(c.cursor(), s.c2.cursor(), 'both connections track the same cursor');
    await c.close();
    await s.c2.close();
  });

  await step(t, 'remove ends the process tree', async () => {
    const before = await running(s.pids);
    assert.match(before.get(s.pids[0])?.cmdline ?? '', /bash/, `the shell before the remove: ${JSON.stringify([...before])}`);
    assert.match(before.get(s.pids[1])?.cmdline ?? '', /^sleep 1000/, `its job before the remove: ${JSON.stringify([...before])}`);

    const res = await client.pty.remove({ ptyID: s.pty.id });
    assert.equal(ok(res, 'remove'), true);
    s.removed = true;
    const gone = await client.pty.get({ ptyID: s.pty.id });
    assert.equal(gone.response.status, 404);
    assert.equal(gone.error?._tag, 'PtyNotFoundError', JSON.stringify(gone.error));
    assert.equal(gone.error?.ptyID, s.pty.id);
    assert.ok(!ok(await client.pty.list(), 'list').some((p) => p.id === s.pty.id), 'the pty is no longer listed');
    const proc = await sandgate('GET', `/processes/${encodeURIComponent(s.pty.id)}`);
    assert.equal(proc.status, 404, JSON.stringify(proc.body));
    assert.equal(proc.body.error?.code, 'not_found');

    // The kill is SIGTERM, then SIGKILL a while later to what is left.
    // A pid that runs again with another start time is another process (on the local
    // runtime pids are the host's, and are reused).
    const same = (now) => [...now].filter(([pid, p]) => p.start === before.get(pid)?.start);
    const deadline = Date.now() + WAIT_MS;
    let left = same(before);
    while (left.length > 0 && Date.now() < deadline) {
      await sleep(200); // a pid's end has no event to wait on through the API
      left = same(await running(s.pids));
    }
    assert.deepEqual(left, [], 'processes of the removed pty still alive');
    await s.bytes.wait((b) => b.closed, 'the end of the process\'s byte stream');
  });

  await step(t, 'a pty that exited: its output, then a normal close; get says exited, with its code', async () => {
    const pty = ok(await client.pty.create({ command: s.bash, args: ['-c', 'printf "X:%s\\n" $((2+3)); exit 3'], title: 'short' }), 'create');
    s.short = pty;
    const c = await connect(undefined, pty.id);
    await c.wait((x) => x.closed, 'the close after the exit');
    assert.equal(c.closed.code, 1000, `the close after the exit: ${c.seen()}`);
    assert.ok(c.ready, `the control frame after the replay: ${c.seen()}`);
    assert.match(c.text, /X:5\r?\n/, 'the output of the exited pty');
    const got = ok(await client.pty.get({ ptyID: pty.id }), 'get');
    samePty(got, { ...pty, status: 'exited' }, 'get after the exit');
    assert.equal(got.exitCode, 3);
    const listed = ok(await client.pty.list(), 'list').find((p) => p.id === pty.id);
    assert.equal(listed?.status, 'exited', `the exited pty in the list: ${JSON.stringify(listed)}`);
    assert.equal(ok(await client.pty.remove({ ptyID: pty.id }), 'remove'), true);
    s.short = undefined;
  });

  await step(t, 'an unknown pty: no ticket, and the connection closes with 1008', async () => {
    const id = 'proc_0000000000000000';
    const tok = await client.pty.connectToken({ ptyID: id });
    assert.equal(tok.response.status, 404);
    assert.equal(tok.error?._tag, 'PtyNotFoundError', JSON.stringify(tok.error));
    const c = await PtyConn.open(`${WS_OC}/pty/${id}/connect`, { headers: auth });
    open.push(c);
    await c.wait((x) => x.closed, 'the close of a connection to an unknown pty');
    assert.equal(c.closed.code, 1008, c.seen());
    assert.equal(c.textFrames, 0, c.seen());
  });
});

// running answers, of pids, those that run in the sandbox (zombies are dead: on the
// local runtime the subreaper may reap them late): pid → {start, cmdline}, start
// being the start time in /proc/PID/stat.
async function running(pids) {
  const script = `for p in ${pids.join(' ')}; do
    st=$(sed 's/^.*) //' /proc/$p/stat 2>/dev/null) || continue
    set -- $st
    [ "$1" = Z ] && continue
    echo "$p $\{20} $(tr '\\0' ' ' < /proc/$p/cmdline)"
  done; true`;
  const out = new Map();
  for (const line of (await exec(sandgate, script)).stdout.split('\n')) {
    const m = line.match(/^(\d+) (\d+) (.*)$/);
    if (m) out.set(Number(m[1]), { start: m[2], cmdline: m[3] });
  }
  return out;
}
