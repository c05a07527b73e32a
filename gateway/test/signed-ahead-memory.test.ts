import assert from 'node:assert/strict';
import { SignedAhead } from '../src/admission/admission.ts';

// A gateway's memory of one client key's nonces it admitted signed ahead of its clock (admission.ts; CONTRACT.md
// part 13): what it keeps, for how long, and its bound. Its use after a Redis loss is gateway-redis-loss.test.ts's.
describe('the memory of nonces signed ahead of the clock', () => {
  const nowMs = 1_700_000_000_500;
  const second = Math.floor(nowMs / 1000);

  it('keeps only a nonce whose created is ahead of the clock\'s second, until Redis would forget it', () => {
    const memory = new SignedAhead();
    memory.remember('n-now', second, nowMs, nowMs + 1000);
    memory.remember('n-before', second - 5, nowMs, nowMs + 1000);
    memory.remember('n-ahead', second + 1, nowMs, nowMs + 1000);
    assert.deepEqual([memory.admitted('n-now', nowMs), memory.admitted('n-before', nowMs), memory.admitted('n-ahead', nowMs)], [false, false, true]);
    assert.equal(memory.admitted('n-ahead', nowMs + 1000), false, 'past its time');
    memory.prune(nowMs + 1000);
    assert.equal(memory.empty, true);
  });

  it('holds at most its bound: the one created first is forgotten, its created kept as a floor until the clock has passed it', () => {
    const memory = new SignedAhead(2);
    // One far ahead, then a clock a little ahead: the far one is kept, the floor stays low.
    memory.remember('far', second + 299, nowMs, nowMs + 600_000);
    memory.remember('b', second + 2, nowMs, nowMs + 61_000);
    memory.remember('c', second + 1, nowMs, nowMs + 62_000);
    memory.remember('d', second + 3, nowMs, nowMs + 63_000);
    assert.deepEqual([...memory.nonces.keys()].sort(), ['d', 'far']);
    assert.deepEqual(memory.forgotten, { created: second + 2, untilMs: nowMs + 62_000 });
    // The same nonce twice is one.
    memory.remember('d', second + 3, nowMs, nowMs + 63_000);
    assert.equal(memory.nonces.size, 2);
    // The floor stays while a signature at or below it could still be after a loss; then it goes.
    memory.prune(nowMs + 3000);
    assert.equal(memory.forgotten.created, second + 2);
    memory.prune(nowMs + 4000);
    assert.deepEqual(memory.forgotten, { created: 0, untilMs: 0 });
    memory.prune(nowMs + 63_000);
    assert.deepEqual([...memory.nonces.keys()], ['far']);
  });
});
