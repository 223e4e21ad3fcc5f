// Unit tests of the SSE parser (no browser, no server).
import assert from 'node:assert/strict';
import { test } from 'node:test';

// sse.js imports api.js, which touches browser globals only when called.
const { sseParser } = await import('../src/sse.js');

const parse = (chunks) => {
  const out = [];
  const feed = sseParser((ev) => out.push(ev));
  for (const c of chunks) feed(c);
  return out;
};

const cases = [
  {
    name: 'unnamed event with id',
    chunks: ['id: 7\ndata: {"seq":7}\n\n'],
    want: [{ event: 'message', id: '7', data: '{"seq":7}' }],
  },
  {
    name: 'named events, comments and heartbeats',
    chunks: [': hb\n\nevent: output\nid: 10\ndata: {"a":1}\n\nevent: exit\ndata: {"exit_code":0}\n\n'],
    want: [
      { event: 'output', id: '10', data: '{"a":1}' },
      { event: 'exit', id: '10', data: '{"exit_code":0}' },
    ],
  },
  {
    name: 'split anywhere, CRLF line ends',
    chunks: ['ev', 'ent: gap\r', '\ndata: {"from"', ':0,"to":4}\r\n', '\r\n'],
    want: [{ event: 'gap', id: null, data: '{"from":0,"to":4}' }],
  },
  {
    name: 'multi-line data, no space after the colon',
    chunks: ['data:a\ndata: b\n\n'],
    want: [{ event: 'message', id: null, data: 'a\nb' }],
  },
  {
    name: 'an event without data is not dispatched',
    chunks: ['event: x\n\n'],
    want: [],
  },
  {
    name: 'an unterminated event waits for its blank line',
    chunks: ['data: x\n'],
    want: [],
  },
];

for (const c of cases) {
  test(`sseParser: ${c.name}`, () => {
    assert.deepEqual(parse(c.chunks), c.want);
  });
}
