import assert from 'node:assert/strict';
import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { HeadResponse, type ServerHandle, keepHeader, listen, peekHeader } from '../src/index.ts';

/** What a client sees of an answer: status line, header lines (Date aside) in the order sent, body. */
interface Seen {
  status: number;
  message: string;
  lines: string[];
  body: string;
}

function get(url: string, path: string): Promise<Seen> {
  return new Promise((resolve, reject) => {
    request(`${url}${path}`, { headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        const lines: string[] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          if (res.rawHeaders[i]?.toLowerCase() !== 'date') lines.push(`${res.rawHeaders[i]}: ${res.rawHeaders[i + 1]}`);
        }
        resolve({ status: res.statusCode ?? 0, message: res.statusMessage ?? '', lines, body });
      });
    })
      .on('error', reject)
      .end();
  });
}

/**
 * Each case keeps headers as the envelope does, then answers the way some path of ours (or of Express)
 * does. The kept headers must reach the client exactly as `setHeader` at the same point would have sent
 * them: the same header lines (in any order, since the one-write path puts the kept ones first), status
 * and body. What a case throws is answered as `threw <code>`, so both sides' errors are compared too.
 */
const CASES: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  'writeHead with an object, as the forwarding does': (_req, res) => {
    keepAll(res);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2', etag: '"g1"' }).end('{}');
  },
  'writeHead naming a kept header, in another case: the answer\'s value wins': (_req, res) => {
    keepAll(res);
    res.writeHead(200, { 'cache-control': 'private, max-age=60', 'X-REQUEST-ID': 'upstream-id' }).end('ok');
  },
  'writeHead with a reason phrase': (_req, res) => {
    keepAll(res);
    res.writeHead(299, 'Fine Indeed', { 'x-b': '1' }).end();
  },
  'a 304 with its validators only': (_req, res) => {
    keepAll(res);
    res.writeHead(304, { etag: '"g1"' }).end();
  },
  'the head written by end() alone': (_req, res) => {
    keepAll(res);
    res.statusCode = 202;
    res.end('accepted');
  },
  'writeHead with no headers': (_req, res) => {
    keepAll(res);
    res.writeHead(204).end();
  },
  'setHeader after keeping, then writeHead': (_req, res) => {
    keepAll(res);
    res.setHeader('X-Later', '1');
    res.setHeader('cache-control', 'no-cache');
    res.writeHead(200, { 'x-b': '2' }).end();
  },
  'appendHeader to a kept header': (_req, res) => {
    keepHeader(res, 'X-Many', 'first');
    res.appendHeader('x-many', 'second');
    res.end();
  },
  'removeHeader of a kept header': (_req, res) => {
    keepAll(res);
    res.removeHeader('x-frame-options');
    res.writeHead(200, { 'x-b': '3' }).end();
  },
  'getHeader, hasHeader and getHeaders see kept headers': (_req, res) => {
    keepAll(res);
    const seen = [res.getHeader('X-Request-Id'), res.hasHeader('cache-control'), Object.keys(res.getHeaders()).sort().join(',')];
    res.writeHead(200, { 'content-type': 'text/plain' }).end(JSON.stringify(seen));
  },
  'writeHead with an array holding a duplicate': (_req, res) => {
    keepAll(res);
    res.writeHead(200, ['x-dup', '1', 'x-dup', '2', 'Cache-Control', 'max-age=1']).end();
  },
  'a header kept twice in two cases: the last wins': (_req, res) => {
    keepHeader(res, 'x-twice', 'one');
    keepHeader(res, 'X-Twice', 'two');
    res.writeHead(200, { 'x-b': '4' }).end();
  },
  'flushHeaders after keeping': (_req, res) => {
    keepAll(res);
    res.flushHeaders();
    res.end('late body');
  },
  'a value Node refuses in writeHead throws as setHeader would': (_req, res) => {
    keepAll(res);
    res.writeHead(200, { 'x-bad': 'a\nb' }).end();
  },
  'an undefined value in writeHead throws as setHeader would': (_req, res) => {
    keepAll(res);
    res.writeHead(200, { 'x-undefined': undefined }).end();
  },
  'keeping after the head was written throws as setHeader would': (_req, res) => {
    res.writeHead(200, { 'x-b': '5' });
    try {
      keepHeader(res, 'x-late', '1');
    } catch (err) {
      res.end(`threw ${(err as { code?: string }).code}`);
      return;
    }
    res.end('kept');
  },
};

function keepAll(res: ServerResponse): void {
  keepHeader(res, 'X-Request-Id', 'f1e2d3c4');
  keepHeader(res, 'Cache-Control', 'no-store');
  keepHeader(res, 'X-Frame-Options', 'DENY');
  keepHeader(res, 'RateLimit', '"default";r=9;t=60');
}

/** Runs the case named by the path; a throw is answered (a fresh status, no kept headers), so both sides can be compared. */
const caseRunner: RequestListener = (req, res) => {
  const run = CASES[decodeURIComponent(req.url?.slice(1) ?? '')];
  if (run === undefined) {
    res.writeHead(404).end();
    return;
  }
  try {
    run(req, res);
  } catch (err) {
    if (res.headersSent) throw err;
    // Nothing kept may leak into the answer of a failed write: a fresh head, as on the plain server.
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`threw ${(err as { code?: string }).code}`);
  }
};

describe('the answer head written once (service-kit HeadResponse)', () => {
  let oneWrite: ServerHandle;
  let plain: Server;
  let plainUrl: string;

  before(async () => {
    oneWrite = await listen(caseRunner, 0);
    // Node's own response class: keepHeader is setHeader there.
    plain = createServer(caseRunner);
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
  });

  after(async () => {
    await oneWrite.close();
    await new Promise((resolve) => plain.close(resolve));
  });

  for (const name of Object.keys(CASES)) {
    it(`sends what setHeader would: ${name}`, async () => {
      const path = `/${encodeURIComponent(name)}`;
      const [got, expected] = await Promise.all([get(oneWrite.url, path), get(plainUrl, path)]);
      assert.equal(got.status, expected.status);
      assert.equal(got.message, expected.message);
      assert.equal(got.body, expected.body);
      assert.deepEqual([...got.lines].sort(), [...expected.lines].sort());
      // A failed write must fail on both sides, with the same error (the body names its code).
      if (name.includes('throws')) assert.match(got.body, /^threw ERR_/);
    });
  }

  it('writes an object head and the kept headers in one go: nothing passes through the header map', async () => {
    const seen: Record<string, unknown> = {};
    const server = await listen((_req, res) => {
      seen.isHeadResponse = res instanceof HeadResponse;
      keepAll(res);
      // Read without applying what was kept.
      keepHeader(res, 'X-Peeked', 'kept');
      seen.peeked = [peekHeader(res, 'x-peeked'), peekHeader(res, 'X-Request-Id'), peekHeader(res, 'x-none')];
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'private' });
      // After a one-write head Node's map is empty; after setHeader and a merged writeHead it holds them all.
      seen.inMap = res.getHeaderNames().length;
      res.end('ok');
    }, 0);
    try {
      const answer = await get(server.url, '/');
      assert.equal(seen.isHeadResponse, true);
      assert.equal(seen.inMap, 0);
      assert.deepEqual(seen.peeked, ['kept', 'f1e2d3c4', undefined]);
      assert.ok(answer.lines.includes('X-Peeked: kept'));
      assert.ok(answer.lines.includes('X-Request-Id: f1e2d3c4'));
      assert.ok(answer.lines.includes('cache-control: private'));
      assert.ok(!answer.lines.includes('Cache-Control: no-store'));
    } finally {
      await server.close();
    }
  });

  it('under Express, an error handler\'s answer and a thrown route still carry what was kept', async () => {
    const app = express();
    app.use((_req, res, next) => {
      keepAll(res);
      next();
    });
    app.get('/json', (_req, res) => {
      res.status(400).json({ message: 'bad' });
    });
    app.get('/throws', () => {
      throw new Error('boom');
    });
    app.use((_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).type('application/json').send('{"message":"failed"}');
    });
    const server = await listen(app, 0);
    try {
      for (const path of ['/json', '/throws']) {
        const answer = await get(server.url, path);
        assert.ok(answer.lines.includes('X-Request-Id: f1e2d3c4'), `${path}: ${answer.lines.join(' | ')}`);
        assert.ok(answer.lines.includes('Cache-Control: no-store'));
        assert.ok(answer.lines.includes('X-Frame-Options: DENY'));
        assert.equal(answer.status, path === '/json' ? 400 : 500);
      }
    } finally {
      await server.close();
    }
  });
});
