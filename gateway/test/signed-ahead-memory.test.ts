import assert from 'node:assert/strict';
import { signedAheadMemory } from '../src/admission/admission.ts';

// The gateway's memory of the nonces it admitted signed ahead of its clock (admission.ts; CONTRACT.md part 13):
// what it keeps, for how long, and its bound. Its use after a Redis loss is gateway-redis-loss.test.ts's.
describe('the memory of nonces signed ahead of the clock', () => {
  const nowMs = 1_700_000_000_500;
  const second = Math.floor(nowMs / 1000);

  it('keeps only a nonce whose created is ahead of the clock\'s second, until Redis would forget it', () => {
    const memory = signedAheadMemory();
    const key = { signedAhead: 0 };
    memory.remember(key, 'n-now', second, nowMs, nowMs + 1000);
    memory.remember(key, 'n-before', second - 5, nowMs, nowMs + 1000);
    memory.remember(key, 'n-ahead', second + 1, nowMs, nowMs + 1000);
    assert.deepEqual([memory.admitted('n-now', nowMs), memory.admitted('n-before', nowMs), memory.admitted('n-ahead', nowMs)], [false, false, true]);
    assert.equal(key.signedAhead, 1);
    assert.equal(memory.admitted('n-ahead', nowMs + 1000), false, 'past its time');
    memory.prune(nowMs + 1000);
    assert.equal(key.signedAhead, 0);
    assert.deepEqual(memory.of(key), []);
  });

  it('holds at most its bound, all client keys together, forgetting the oldest first; each key counts its own', () => {
    const memory = signedAheadMemory(3);
    const [a, b] = [{ signedAhead: 0 }, { signedAhead: 0 }];
    for (const [key, nonce] of [[a, 'a1'], [b, 'b1'], [a, 'a2'], [b, 'b2']] as const) memory.remember(key, nonce, second + 10, nowMs, nowMs + 60_000);
    assert.equal(memory.admitted('a1', nowMs), false, 'the oldest is forgotten');
    assert.deepEqual([a.signedAhead, b.signedAhead], [1, 2]);
    assert.deepEqual(memory.of(b), [['b1', nowMs + 60_000], ['b2', nowMs + 60_000]]);
    // The same nonce twice is one.
    memory.remember(a, 'a2', second + 10, nowMs, nowMs + 60_000);
    assert.equal(a.signedAhead, 1);
  });
});
