import assert from 'node:assert/strict';
import { createHmac, createPublicKey, createSecretKey, generateKeyPairSync, sign } from 'node:crypto';
import { contentDigestOf, contentDigestProblem } from '../src/signing/content-digest.ts';
import { type SignedRequest, librarySignatureBase, signatureBase } from '../src/signing/signature-base.ts';
import { SignatureFault } from '../src/signing/signature-fault.ts';
import { canonicalEntry, libraryEntry, readSignature } from '../src/signing/signature-headers.ts';
import { createVerifier } from 'http-message-signatures';
import { signatureMatches } from '../src/signing/signature-match.ts';
import { checkParams, requiredComponents } from '../src/signing/signature-policy.ts';
import { verifyRequestSignature } from '../src/signing/verify-request.ts';
import { verificationKeys } from '../src/signing/verification-keys.ts';
import { digestOf, signedHeaders } from './support/signing-client.ts';

// RFC 9421 Appendix B.2: the test-request message (B.2 header fields used by B.2.5 and B.2.6).
const RFC_REQUEST_HEADERS = {
  host: 'example.com',
  date: 'Tue, 20 Apr 2021 02:07:55 GMT',
  'content-type': 'application/json',
  'content-length': '18',
};
// Appendix B.1.5 test-shared-secret, and B.1.4 test-key-ed25519 (public half).
const RFC_SHARED_SECRET = 'uzvJfB4u3N0Jy4T7NZ75MDVcr8zSTInedJtkgcu46YW4XByzNJjxBdtjUkdJPBtbmHhIDi6pcl8jsasjlTMtDQ==';
const RFC_ED25519_PUBLIC = '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=\n-----END PUBLIC KEY-----\n';

function rfcRequest(signatureInput: string, signature: string): SignedRequest {
  return {
    method: 'POST',
    target: '/foo?param=Value&Pet=dog',
    authority: 'example.com',
    headers: { ...RFC_REQUEST_HEADERS, 'signature-input': signatureInput, signature },
  };
}

function fault(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SignatureFault, `expected a SignatureFault, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected a SignatureFault');
}

describe('RFC 9421 Appendix B.2 examples', () => {
  it('B.2.5 (hmac-sha256): the signature base is the RFC text and the published signature verifies', async () => {
    const request = rfcRequest('sig-b25=("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"', 'sig-b25=:pxcQw6G3AjtMBQjwo8XzkZf/bws5LelbaMk5rGIGtE8=:');
    const entry = readSignature(request.headers, 'sig-b25');
    const base = signatureBase(request, entry);
    assert.equal(
      base,
      [
        '"date": Tue, 20 Apr 2021 02:07:55 GMT',
        '"@authority": example.com',
        '"content-type": application/json',
        '"@signature-params": ("date" "@authority" "content-type");created=1618884473;keyid="test-shared-secret"',
      ].join('\n'),
    );
    const key = { keyId: 'test-shared-secret', alg: 'hmac-sha256' as const, key: createSecretKey(Buffer.from(RFC_SHARED_SECRET, 'base64')), notAfter: undefined };
    assert.equal(signatureMatches(base, entry.signature, key), true);
    assert.equal(signatureMatches(base.replace('example.com', 'example.org'), entry.signature, key), false);
  });

  it('B.2.6 (ed25519): the signature base is the RFC text and the published signature verifies', async () => {
    const request = rfcRequest(
      'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"',
      'sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:',
    );
    const entry = readSignature(request.headers, 'sig-b26');
    const base = signatureBase(request, entry);
    assert.equal(
      base,
      [
        '"date": Tue, 20 Apr 2021 02:07:55 GMT',
        '"@method": POST',
        '"@path": /foo',
        '"@authority": example.com',
        '"content-type": application/json',
        '"content-length": 18',
        '"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"',
      ].join('\n'),
    );
    const key = { keyId: 'test-key-ed25519', alg: 'ed25519' as const, key: createPublicKey(RFC_ED25519_PUBLIC), notAfter: undefined };
    assert.equal(signatureMatches(base, entry.signature, key), true);
    assert.equal(signatureMatches(base.replace('POST', 'GET'), entry.signature, key), false);
  });
});

describe('signature match', () => {
  it('says what http-message-signatures\' verifiers say, for right, wrong, short, long and empty signatures of both algorithms', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const keys = [...verificationKeys([
      { keyId: 'h', alg: 'hmac-sha256', secret: 'a-secret-of-16-bytes-or-more' },
      { keyId: 'e', alg: 'ed25519', publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString() },
    ]).values()];
    const bases = ['"@method": GET\n"@signature-params": ("@method");created=1', '', 'ş ü ğ'];
    let agreed = 0;
    let matched = 0;
    for (const key of keys) {
      for (const base of bases) {
        const data = Buffer.from(base, 'utf8');
        const right = key.alg === 'hmac-sha256' ? createHmac('sha256', key.key).update(data).digest() : sign(null, data, privateKey);
        const flipped = Buffer.from(right);
        flipped[0] = (flipped[0] as number) ^ 1;
        for (const signature of [right, flipped, right.subarray(1), Buffer.concat([right, Buffer.from([0])]), Buffer.alloc(0), Buffer.alloc(right.length)]) {
          let library: boolean;
          try {
            library = (await createVerifier(key.key, key.alg)(data, signature)) === true;
          } catch {
            library = false;
          }
          const ours = signatureMatches(base, signature, key);
          assert.equal(ours, library, `${key.alg} over ${JSON.stringify(base)}, signature of ${signature.length} bytes`);
          agreed += 1;
          if (ours) matched += 1;
        }
      }
    }
    assert.equal(agreed, keys.length * bases.length * 6);
    // Only the right signature of each base matches.
    assert.equal(matched, keys.length * bases.length);
  });
});

describe('signature base', () => {
  it('takes @path and @query from the raw target, `?` when there is no query', () => {
    const headers = { 'signature-input': 'sig1=("@path" "@query");created=1', signature: 'sig1=:AAAA:' };
    const base = (target: string) => signatureBase({ method: 'GET', target, authority: 'h', headers }, readSignature(headers, 'sig1')).split('\n').slice(0, 2);
    assert.deepEqual(base('/v1/a/../b?x=%20y&z'), ['"@path": /v1/a/../b', '"@query": ?x=%20y&z']);
    assert.deepEqual(base('/v1/a'), ['"@path": /v1/a', '"@query": ?']);
    assert.deepEqual(base('/v1/a?'), ['"@path": /v1/a', '"@query": ?']);
  });

  it('is built directly for plain components exactly as http-message-signatures builds it, on many requests', () => {
    const headerValues: Array<string | string[]> = ['abc', '  padded value\t ', 'folded\n   over lines', ['first line', ' second line '], '', 'ş ü ğ', 'quote " and \\ backslash'];
    const params = [
      ';created=1618884473;keyid="test-key"',
      ';created=1;keyid="a\\"b\\\\c";nonce="n-1";alg="hmac-sha256"',
      ';created=1;keyid="k";tag=token-like;flag;bytes=:AQID:;ratio=1.5;expires=99',
    ];
    const componentSets = [
      ['@method', '@path', '@query', 'x-idempotency-key'],
      ['@method', '@path', '@query', 'x-idempotency-key', 'content-digest', 'authorization'],
      ['x-custom_header.v1', '@query', '@method'],
      ['@path'],
    ];
    let compared = 0;
    for (const components of componentSets) {
      for (const param of params) {
        for (const value of headerValues) {
          for (const [method, target] of [['GET', '/v1/a?x=1&y=%20'], ['post', '/v1/b/../c'], ['DELETE', '/v1/d?']] as const) {
            const input = `sig1=(${components.map((c) => `"${c}"`).join(' ')})${param}`;
            const headers: Record<string, string | string[]> = { 'signature-input': input, signature: 'sig1=:AAAA:' };
            for (const name of components) if (!name.startsWith('@')) headers[name] = value;
            const request = { method, target, authority: 'gw.example', headers };
            const entry = readSignature(headers, 'sig1');
            assert.equal(signatureBase(request, entry), librarySignatureBase(request, entry), `${input} with ${JSON.stringify(value)}`);
            compared += 1;
          }
        }
      }
    }
    assert.equal(compared, componentSets.length * params.length * headerValues.length * 3);
  });

  it('leaves other components, component parameters and missing headers to the library', () => {
    const headers = { 'signature-input': 'sig1=("@authority" "@method" "x-a";sf);created=1;keyid="k"', signature: 'sig1=:AAAA:', 'x-a': '1,  2' };
    const request = { method: 'GET', target: '/v1/x', authority: 'gw.example', headers };
    assert.equal(signatureBase(request, readSignature(headers, 'sig1')), '"@authority": gw.example\n"@method": GET\n"x-a";sf: 1, 2\n"@signature-params": ("@authority" "@method" "x-a";sf);created=1;keyid="k"');
    const missing = { 'signature-input': 'sig1=("@method" "x-absent");created=1;keyid="k"', signature: 'sig1=:AAAA:' };
    assert.match(fault(() => signatureBase({ ...request, headers: missing }, readSignature(missing, 'sig1'))), /cannot build the signature base: No header "x-absent"/);
  });

  it('matches what an independent client signer builds, for both algorithms', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const keys = verificationKeys([
      { keyId: 'h', alg: 'hmac-sha256', secret: 'a-secret-of-16-bytes-or-more' },
      { keyId: 'e', alg: 'ed25519', publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString() },
    ]);
    const body = Buffer.from('{"a":"ş"}');
    for (const key of [{ keyId: 'h', alg: 'hmac-sha256' as const, secret: 'a-secret-of-16-bytes-or-more' }, { keyId: 'e', alg: 'ed25519' as const, privateKey }]) {
      const headers = signedHeaders('POST', '/v1/x?b=2&a=1', { key, body, bearer: 'abc.def.ghi' });
      const signed = verifyRequestSignature({ method: 'POST', target: '/v1/x?b=2&a=1', authority: 'gw', headers }, body, { keys, maxSkewS: 300 });
      assert.equal(signed.keyId, key.keyId);
    }
  });
});

describe('Signature-Input parsing', () => {
  it('names what is missing or malformed', () => {
    assert.equal(fault(() => readSignature({ signature: 'sig1=:AA==:' }, 'sig1')), 'Signature-Input header missing');
    assert.equal(fault(() => readSignature({ 'signature-input': 'sig1=("@method")' }, 'sig1')), 'Signature header missing');
    assert.equal(fault(() => readSignature({ 'signature-input': 'sig1=(', signature: 'sig1=:AA==:' }, 'sig1')), 'Signature-Input is not a structured dictionary');
    assert.equal(fault(() => readSignature({ 'signature-input': 'sig2=("@method")', signature: 'sig2=:AA==:' }, 'sig1')), 'Signature-Input has no sig1');
    assert.equal(fault(() => readSignature({ 'signature-input': 'sig1="@method"', signature: 'sig1=:AA==:' }, 'sig1')), 'Signature-Input sig1 is not an inner list');
    assert.equal(fault(() => readSignature({ 'signature-input': 'sig1=("@method")', signature: 'sig1="AA"' }, 'sig1')), 'Signature sig1 is not a byte sequence');
    assert.equal(fault(() => readSignature({ 'signature-input': 'sig1=("@method" "@method")', signature: 'sig1=:AA==:' }, 'sig1')), 'Signature-Input sig1 covers a component twice');
    assert.equal(fault(() => readSignature({ 'signature-input': 'sig1=("Date")', signature: 'sig1=:AA==:' }, 'sig1')), 'component "Date" is not lower case');
    const long = `D${'x'.repeat(300)}`;
    assert.equal(fault(() => readSignature({ 'signature-input': `sig1=("${long}")`, signature: 'sig1=:AA==:' }, 'sig1')), `component "${long.slice(0, 64)}" is not lower case`);
  });

  it('refuses a decimal with no fraction, which structured-headers would read back as an integer, and takes every other number and string', () => {
    const read = (input: string) => readSignature({ 'signature-input': input, signature: 'sig1=:AA==:' }, 'sig1');
    for (const [input, decimal] of [
      ['sig1=("@method");created=1618884473.0;keyid="k"', '1618884473.0'],
      ['sig1=("@method");keyid="k";expires=-7.000', '-7.000'],
      ['sig1=("@method");created=1;x=2.0', '2.0'],
      ['sig1=("@method";y=0.0);created=1', '0.0'],
      ['sig1=("@method");keyid="a\\\\";x=3.0', '3.0'],
    ] as const) {
      assert.equal(fault(() => read(input)), `Signature-Input holds the decimal ${decimal}, which is read back as an integer`, input);
    }
    for (const input of ['sig1=("@method");created=1;ratio=1.5', 'sig1=("@method");created=1;ratio=2.05', 'sig1=("@method");keyid="v=1.0";tag=a1.0', 'sig1=("@method");keyid="a\\"x=1.0";created=1']) {
      assert.equal(read(input).params.get('created') ?? 1, 1, input);
    }
  });

  it('reads every form the canonical reader takes exactly as structured-headers does, and leaves the rest to it', () => {
    // Pieces in canonical form and near misses (spaces, escapes, upper case, repeats, other item types).
    const canonical = ['"@method"', '"@path"', '"@query"', '"x-idempotency-key"', '"content-digest"', '"authorization"', '"x-a.b_c"'];
    const components = [...canonical, ...canonical, '"@Method"', '"x-a";sf', '"x\\"q"', 'token'];
    const separators = [' ', ' ', ' ', ' ', ' ', '  '];
    const params = [
      ';created=1618884473', ';created=0', ';created=-5', ';created=007', ';created=-0', ';created=1234567890123456', ';created=1.5',
      ';keyid="test-key"', ';keyid="test-key"', ';nonce="abcdefghijklmnop"', ';created=1618884473', ';keyid="a b;c=d)"', ';keyid="a\\"b"', ';keyid=""', ';nonce="abcdefghijklmnop"', ';alg="hmac-sha256"',
      '; created=1', ';flag', ';flag=?0', ';tag=tok', ';bytes=:AQID:', ';Created=1', ';*x-y.z_1=2', ';created=1.0', ';keyid="v=1.0"',
    ];
    const signatures = ['sig1=:AAAA:', 'sig1=:AQID:', 'sig1=:AQ==:', 'sig1=:AQI=:', 'sig1=:AAAA:', 'sig1=:AQID:', 'sig1=:AQ=:', 'sig1=:AQ:', 'sig1=::', 'sig1=:AAAA:, sig2=:AA==:', 'sig1=("@x")'];
    const outcome = (read: () => unknown) => {
      try {
        return { entry: read() };
      } catch (err) {
        assert.ok(err instanceof SignatureFault, String(err));
        return { fault: err.message };
      }
    };
    let seed = 7;
    const pick = <T>(list: readonly T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return list[seed % list.length] as T;
    };
    let fast = 0;
    for (let i = 0; i < 4000; i += 1) {
      const count = i % 7;
      const covered = Array.from({ length: count }, () => pick(components));
      const list = `(${covered.map((c, at) => (at === 0 ? c : `${pick(separators)}${c}`)).join('')})`;
      const input = `sig1=${list}${Array.from({ length: i % 4 }, () => pick(params)).join('')}${i % 50 === 0 ? ', sig2=()' : ''}`;
      const signature = pick(signatures);
      const headers = { 'signature-input': input, signature };
      if (outcome(() => canonicalEntry(input, signature, 'sig1')).entry !== undefined) fast += 1;
      assert.deepEqual(outcome(() => readSignature(headers, 'sig1')), outcome(() => libraryEntry(input, signature, 'sig1')), `${input} / ${signature}`);
    }
    // The generator reaches both readers often.
    assert.ok(fast > 300 && fast < 3700, `canonical reader took ${fast} of 4000`);
  });

  it("takes the SDK's own headers without the library", () => {
    const headers = signedHeaders('POST', '/v1/x?b=2', { key: { keyId: 'h', alg: 'hmac-sha256', secret: 'a-secret-of-16-bytes-or-more' }, body: Buffer.from('{}'), bearer: 'a.b.c' });
    const entry = canonicalEntry(String(headers['signature-input']), String(headers.signature), 'sig1');
    assert.ok(entry !== undefined);
    assert.deepEqual(entry, libraryEntry(String(headers['signature-input']), String(headers.signature), 'sig1'));
  });

  it('lists only parameterless components as covering a required one', () => {
    const entry = readSignature({ 'signature-input': 'sig1=("@method" "@query";req "x-a";sf);created=1', signature: 'sig1=:AA==:' }, 'sig1');
    assert.deepEqual(entry.bareComponents, ['@method']);
  });
});

describe('signature parameters', () => {
  const parse = (input: string) => readSignature({ 'signature-input': `sig1=()${input}`, signature: 'sig1=:AA==:' }, 'sig1').params;
  const now = 1_700_000_000;

  it('accepts created at both edges of the window and returns keyid, nonce and alg', () => {
    for (const created of [now - 300, now + 300]) {
      assert.deepEqual(checkParams(parse(`;created=${created};keyid="k";nonce="${'n'.repeat(16)}";alg="ed25519"`), now, 300), {
        keyId: 'k',
        nonce: 'n'.repeat(16),
        created,
        alg: 'ed25519',
      });
    }
  });

  it('refuses each broken parameter with its own reason', () => {
    const ok = `keyid="k";nonce="${'n'.repeat(16)}"`;
    const cases: Array<[string, string]> = [
      [`;created=${now}`, 'keyid parameter missing or not a string'],
      [`;created=${now};keyid="k"`, 'nonce parameter missing or not a string'],
      [`;created=${now};keyid="k";nonce="short"`, 'nonce must be 16-128 characters of [A-Za-z0-9_-]'],
      [`;created=${now};keyid="k";nonce="${'n'.repeat(129)}"`, 'nonce must be 16-128 characters of [A-Za-z0-9_-]'],
      [`;created=${now};keyid="k";nonce="${'n'.repeat(15)}+"`, 'nonce must be 16-128 characters of [A-Za-z0-9_-]'],
      [`;${ok}`, 'created parameter missing or not an integer'],
      [`;created="${now}";${ok}`, 'created parameter missing or not an integer'],
      [`;created=${now - 301};${ok}`, 'created is 301 s old'],
      [`;created=${now + 301};${ok}`, 'created is 301 s in the future'],
      [`;created=${now};expires=${now - 1};${ok}`, 'signature expired 1 s ago'],
      [`;created=${now};alg=ed25519;${ok}`, 'alg parameter is not a string'],
    ];
    for (const [input, reason] of cases) assert.equal(fault(() => checkParams(parse(input), now, 300)), reason, input);
  });

  it('requires content-digest with a body and authorization when that header is sent', () => {
    assert.deepEqual(requiredComponents({ hasBody: false, hasAuthorization: false }), ['@method', '@path', '@query', 'x-idempotency-key']);
    assert.deepEqual(requiredComponents({ hasBody: true, hasAuthorization: true }), ['@method', '@path', '@query', 'x-idempotency-key', 'content-digest', 'authorization']);
  });
});

describe('Content-Digest', () => {
  const body = Buffer.from('{"hello": "world"}');

  it('is sha-256 of the exact bytes, as the RFC 9530 example gives it', () => {
    // RFC 9530 section 2 example: the body {"hello": "world"} with a trailing newline.
    assert.equal(contentDigestOf(Buffer.from('{"hello": "world"}\n')), 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:');
    assert.equal(contentDigestOf(body), digestOf(body));
  });

  it('accepts a matching sha-256 beside other algorithms, and names every other problem', () => {
    assert.equal(contentDigestProblem(`sha-512=:AAAA:, ${contentDigestOf(body)}`, body), undefined);
    assert.equal(contentDigestProblem(undefined, body), 'Content-Digest header missing');
    assert.equal(contentDigestProblem('sha-256=', body), 'Content-Digest is not a structured dictionary');
    assert.equal(contentDigestProblem('sha-512=:AAAA:', body), 'Content-Digest has no sha-256 entry');
    assert.equal(contentDigestProblem('sha-256="abc"', body), 'Content-Digest sha-256 is not a byte sequence');
    assert.equal(contentDigestProblem(contentDigestOf(body), Buffer.from('{"hello": "World"}')), 'Content-Digest does not match the body');
  });

  it('reads the canonical form and its near misses as the structured-field parser does', () => {
    const digest = contentDigestOf(body);
    const other = contentDigestOf(Buffer.from('x'));
    const b64 = digest.slice('sha-256=:'.length, -1);
    const headers = [digest, other, `sha-256=:${b64.slice(0, -2)}B=:`, `sha-256=:${b64.slice(0, -1)}:`, `sha-256=:${b64}=:`, `${digest} `, `sha-256=:${b64.slice(0, 42)}:`, `SHA-256=:${b64}:`, `${digest}, sha-512=:AAAA:`];
    const viaLibrary = (header: string) => contentDigestProblem(`sha-512=:AAAA:, ${header}`, body);
    for (const header of headers) {
      const direct = contentDigestProblem(header, body);
      assert.equal(direct === undefined, viaLibrary(header) === undefined, header);
    }
    assert.equal(contentDigestProblem(digest, body), undefined);
    assert.equal(contentDigestProblem(`sha-256=:${b64.slice(0, -2)}B=:`, body), 'Content-Digest does not match the body');
  });
});
