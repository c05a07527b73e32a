import assert from 'node:assert/strict';
import { CallerQueue, type Lane } from '../src/passwords/caller-queue.ts';

describe('CallerQueue: the callers take turns for the hashing threads', () => {
  /** Pushes one waiter per lane given, named by its lane and its number there, and returns the order served. */
  const served = (lanes: Lane[]): string[] => {
    const queue = new CallerQueue();
    const counts = new Map<string, number>();
    const order: string[] = [];
    for (const lane of lanes) {
      const name = lane.join('/');
      const n = (counts.get(name) ?? 0) + 1;
      counts.set(name, n);
      queue.push(lane, () => order.push(`${name}#${n}`));
    }
    for (let waiter = queue.shift(); waiter !== undefined; waiter = queue.shift()) waiter();
    return order;
  };

  it('serves one address first come, first served', () => {
    assert.deepEqual(served([['k', 'a'], ['k', 'a'], ['k', 'a']]), ['k/a#1', 'k/a#2', 'k/a#3']);
  });

  it('gives each client key one turn in its round, whatever the number of its waiters', () => {
    const flood: Lane[] = Array.from({ length: 5 }, () => ['flood', '10.0.0.1']);
    assert.deepEqual(served([...flood, ['victim', '10.0.0.2'], ['other', '10.0.0.3']]).slice(0, 4), ['flood/10.0.0.1#1', 'victim/10.0.0.2#1', 'other/10.0.0.3#1', 'flood/10.0.0.1#2']);
  });

  it('within a key, gives each address one turn in the key\'s round, so many addresses of one key do not outnumber another key', () => {
    const lanes: Lane[] = [['k', 'a'], ['k', 'a'], ['k', 'b'], ['k', 'c'], ['j', 'x'], ['j', 'x']];
    assert.deepEqual(served(lanes), ['k/a#1', 'j/x#1', 'k/b#1', 'j/x#2', 'k/c#1', 'k/a#2']);
  });

  it('counts as ahead of a newcomer what its key\'s turn comes after: a flood of one key ahead of another key\'s newcomer counts once', () => {
    const queue = new CallerQueue();
    for (let i = 0; i < 8; i += 1) queue.push(['flood', 'a'], () => undefined);
    assert.equal(queue.ahead(['victim', 'b']), 1, 'one of the flood, then the newcomer');
    assert.equal(queue.ahead(['flood', 'a']), 8, 'the flood waits behind itself');
    assert.equal(queue.ahead(['flood', 'z']), 1, 'a new address of the key: one of the key\'s turns first');
    queue.push(['victim', 'b'], () => undefined);
    assert.equal(queue.ahead(['victim', 'b']), 3, 'its own waiter, and one of the flood per turn of its key');
    assert.equal(new CallerQueue().ahead(['any', 'one']), 0);
  });
});
