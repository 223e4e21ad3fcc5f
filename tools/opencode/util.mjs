// HTTP helpers of the OpenCode PTY test: sandgate's own API (the reference the
// OpenCode routes are checked against) and the SDK's result tuples.
import assert from 'node:assert/strict';

// api sends one request to sandgate with the bearer token and answers
// {status, body}, body parsed when it is JSON.
export async function api(base, token, method, path, body) {
  const headers = { Authorization: `Bearer ${token}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30000),
  });
  const text = await res.text();
  let parsed = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body: parsed };
}

// exec runs a shell command in the sandbox through sandgate's exec route (call is a
// bound api function of the sandbox) and answers its result; anything but a 200 with
// exit code 0 fails.
export async function exec(call, command) {
  const res = await call('POST', '/exec', { command });
  assert.equal(res.status, 200, `exec ${command}: ${JSON.stringify(res.body)}`);
  assert.equal(res.body.exit_code, 0, `exec ${command}: ${JSON.stringify(res.body)}`);
  return res.body;
}

// ok returns the data of an SDK call's result, failing on an error answer.
export function ok(res, what) {
  if (res.error !== undefined || !res.response?.ok) {
    assert.fail(`${what}: ${res.response?.status} ${JSON.stringify(res.error)}`);
  }
  return res.data;
}

// esc makes s a literal inside a RegExp.
export function esc(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
