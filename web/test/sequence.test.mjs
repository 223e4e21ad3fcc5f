// checkSequence, which the resume test relies on, on lines made up for each case.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkSequence } from './harness.mjs';

const nums = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i));
const marker = (from, to) => `[ ${to - from} bytes of output lost: offset ${from} to ${to} ]`;

test('an unbroken sequence, with a prompt around it', () => {
  const r = checkSequence(['$ seq 1 500', ...nums(1, 500), 'seq-done-42', '$ ']);
  assert.deepEqual(r, { count: 500, gaps: [], bad: null, last: 500 });
});

test('a jump across a marker, with a cut number on each side, is not bad', () => {
  const lines = [...nums(1, 1233), '12', marker(8000, 9000), '89', ...nums(1590, 2000)];
  const r = checkSequence(lines);
  assert.equal(r.bad, null);
  assert.deepEqual(r.gaps, [{ from: 8000, to: 9000 }]);
  assert.equal(r.last, 2000);
});

test('a silent jump, a repeat or a reordering is bad', () => {
  assert.deepEqual(checkSequence([...nums(1, 10), ...nums(20, 30)]).bad, { at: 10, got: 20, want: 11 });
  assert.deepEqual(checkSequence([...nums(1, 10), ...nums(8, 30)]).bad, { at: 10, got: 8, want: 11 });
  assert.deepEqual(checkSequence(['1', '3', '2']).bad, { at: 1, got: 3, want: 2 });
});

test('a short line is bad unless a marker follows it', () => {
  assert.deepEqual(checkSequence([...nums(1, 11), '1', ...nums(13, 20)]).bad, { at: 11, got: 1, want: 12 });
});
