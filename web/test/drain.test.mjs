// The terminal page across a planned ownership move: three real nodes, the page loaded
// from a node that does not own the sandbox, and the owner drained. The drain ends the
// terminal's shell on the old owner and closes the page's WebSocket with 1012; the
// page reconnects through the same node, is held until the new owner serves, and gets
// a new shell behind the same terminal, which it announces.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { checkSequence, launchBrowser, startServer, termLines, typeLine, waitConnected, waitForLine } from './harness.mjs';

const nodes = [];
let browser;

before(async () => {
  nodes.push(await startServer({ extraArgs: ['--node-id', 'n1'] }));
  const join = nodes[0].base.replace('http://', '');
  for (const id of ['n2', 'n3']) nodes.push(await startServer({ extraArgs: ['--node-id', id, '--join', join] }));
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close();
  for (const n of nodes.reverse()) await n.stop();
});

// waitFor polls check every 100 ms (cluster state has no event to wait on over HTTP)
// until it returns a value, for up to timeout ms.
async function waitFor(what, check, timeout = 120000) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${last}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('the terminal page follows its sandbox to another node when the owner is drained', async () => {
  for (const [i, n] of nodes.entries()) n.id = `n${i + 1}`;
  await waitFor('three members alive', async () => {
    const info = await nodes[0].api('GET', '/v1/cluster');
    return info.members.length === 3 && info.members.every((m) => m.status === 'alive') && info.leader;
  });
  // A sandbox on a partition the rebalance already gave to the node that joined last
  // (the other follower if that one leads): that node is its partition's final
  // rendezvous owner, so only the drain moves it.
  const { leader } = await nodes[0].api('GET', '/v1/cluster');
  const owner = nodes[2].id === leader ? nodes[1] : nodes[2];
  let sb;
  for (let i = 0; !sb; i++) {
    assert.ok(i < 1000, `1000 sandboxes, none owned by ${owner.id}`);
    const s = await nodes[0].api('POST', '/v1/sandboxes', { id: `wd${i}` });
    if (s.node === owner.id) sb = s.id;
  }
  const via = nodes.find((n) => n !== owner && n.id !== leader) || nodes.find((n) => n !== owner);

  const page = await browser.newPage();
  await page.goto(`${via.base}/t/${sb}/main?token=${via.token}`);
  await waitConnected(page);
  await typeLine(page, 'echo before-$((1+1))');
  await waitForLine(page, 'before-2');
  const firstProcess = await page.evaluate(() => window.__sg.conn.process);
  await typeLine(page, 'for i in $(seq 1 1000000); do echo $i; sleep 0.01; done');
  await waitForLine(page, '20', { timeout: 60000 });
  await page.evaluate(() => {
    window.__states = [];
    new MutationObserver(() => window.__states.push(document.querySelector('#state').dataset.state)).observe(
      document.querySelector('#state'),
      { attributes: true },
    );
  });

  await via.api('POST', `/v1/cluster/members/${owner.id}/drain`);
  const to = await waitFor('the sandbox on another node', async () => {
    const s = await via.api('GET', `/v1/sandboxes/${sb}`);
    return s.node && s.node !== owner.id && s.node;
  });
  await waitForLine(page, '[ a new shell was started for this terminal ]', { timeout: 60000 });
  await waitConnected(page, { timeout: 60000 });
  const states = await page.evaluate(() => window.__states);
  assert.ok(states.includes('reconnecting'), `states: ${states}`);
  assert.notEqual(await page.evaluate(() => window.__sg.conn.process), firstProcess, 'a new shell');

  // The numbers the old shell printed came once each and in order (a gap is marked).
  const r = checkSequence(await termLines(page));
  assert.equal(r.bad, null, `sequence: ${JSON.stringify(r)}`);
  assert.ok(r.count >= 20, `sequence: ${JSON.stringify(r)}`);

  // A shell may drop what was typed before it set its terminal up, and nothing tells
  // the page when that is done: type again until the answer shows.
  for (let i = 0; ; i++) {
    await typeLine(page, 'echo after-$((2+3))');
    try {
      await waitForLine(page, 'after-5', { timeout: 10000 });
      break;
    } catch (err) {
      if (i === 9) throw err;
    }
  }
  const events = await via.api('GET', `/v1/sandboxes/${sb}/events?since=0`);
  const moved = events.events.filter((e) => e.type === 'sandbox.moved');
  assert.equal(moved.length, 1, JSON.stringify(moved));
  assert.deepEqual([moved[0].data.planned, moved[0].data.from, moved[0].data.to], [true, owner.id, to]);
  await page.close();
});
