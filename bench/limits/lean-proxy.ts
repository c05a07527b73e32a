// Limit C′: the leanest forwarder on this machine: a plain node:http server passing every request to
// --target on undici's pool (dispatch, the answer's head written once), no Express and no checks. What
// forwarding alone costs, below limit C's libraries.
// Usage: node bench/limits/lean-proxy.ts --port <port> --target <origin>
import { createServer } from 'node:http';
import { answeredHealth, bodyOf, limitOptions, listen, passedHeaders, refuse, undiciForwarder } from './common.ts';

const { port, target } = limitOptions('lean-proxy', ['target']);
const { forward } = undiciForwarder(target);
const server = createServer((req, res) => {
  if (answeredHealth(req, res)) return;
  bodyOf(req).then(
    (body) => forward(req, res, passedHeaders(req.headers), body.length === 0 ? null : body),
    () => refuse(res, 400),
  );
});
listen(server, port);
