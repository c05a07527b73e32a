import assert from 'node:assert/strict';
import fc from 'fast-check';
import { render } from '../src/cli/output.ts';
import { escapeControls } from '../src/cli/terminal.ts';
import { HOSTILE, rawHostile } from './support/hostile-text.ts';

describe('escapeControls (what the CLI prints)', () => {
  for (const [name, char] of HOSTILE) {
    it(`replaces ${name} with its visible \\u escape`, () => {
      const escaped = escapeControls(`a${char}b`);
      assert.equal(escaped, `a\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}b`);
      assert.equal(rawHostile(escaped), undefined);
    });
  }

  it('writes a format character beyond U+FFFF (a tag) as the escapes of its surrogate pair', () => {
    assert.equal(escapeControls('x\u{e0001}y'), 'x\\udb40\\udc01y');
  });

  it('leaves printable text alone: Turkish, Arabic and CJK letters, an emoji, backslashes', () => {
    for (const text of ['İstanbul Şanlıurfa ğüşöçı', 'محمد', '東京', 'Eve 😀', 'C:\\path\\u202e', '~!@#$%^&*()_+{}|:"<>?`-=[];\',./']) {
      assert.equal(escapeControls(text), text);
    }
  });

  it('a forged row, a window title and a reversed name come out as one visible line', () => {
    const name = 'Eve\r\n11111111-1111-1111-1111-111111111111  admin@example.com\u001b]0;pwned\u0007\u202egnp.exe';
    const escaped = escapeControls(name);
    assert.equal(escaped, 'Eve\\u000d\\u000a11111111-1111-1111-1111-111111111111  admin@example.com\\u001b]0;pwned\\u0007\\u202egnp.exe');
  });

  it('for any text: leaves no hostile character, is idempotent, and keeps JSON text meaning the same', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const escaped = escapeControls(text);
        assert.equal(rawHostile(escaped), undefined);
        assert.equal(escapeControls(escaped), escaped);
        assert.equal(JSON.parse(escapeControls(JSON.stringify(text))), text);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('render (the lines the CLI prints)', () => {
  const user = { userId: 'u-1', username: 'eve@example.com', firstName: 'Eve\nu-2  admin@example.com', lastName: '\u202eevE', status: 'ACTIVE', roles: ['GUEST'] };

  it('a table: a line break inside a value never starts a row; each value escaped', () => {
    const lines = render([user], 'table', ['userId', 'firstName', 'lastName']);
    assert.equal(lines.length, 2);
    assert.match(lines[1]!, /^u-1\s+Eve\\u000au-2 {2}admin@example\.com\s+\\u202eevE$/);
  });

  it('a table: columns are as wide as the escaped text the terminal shows', () => {
    const lines = render([{ a: '\u001b', b: 'x' }, { a: 'abcdef', b: 'y' }], 'table');
    assert.equal(lines[1]!.indexOf('x'), lines[2]!.indexOf('y'));
  });

  it('a field/value table of one object and a list of plain values: one line per field, per value', () => {
    assert.equal(render(user, 'table').length, Object.keys(user).length);
    assert.deepEqual(render(['a\nb', 'c'], 'table'), ['a\\u000ab', 'c']);
  });

  it('JSON: line breaks only between JSON tokens (JSON.stringify escapes those in strings)', () => {
    const lines = render(user, 'json');
    assert.deepEqual(JSON.parse(lines.join('\n')), user);
    assert.ok(lines.every((line) => !line.includes('\n') && !line.includes('\r')));
  });
});
