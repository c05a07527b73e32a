// Limit E′ enveloped: limit E′ (lean-checks.ts) writing what the gateway must write for every request besides
// forwarding it (envelope-of.ts: the request envelope with its line and metrics, the quota headers), and its
// request id and a `traceparent` upstream. The gateway's distance to it is what its own pipeline costs (the
// operation table, the chain's steps, the forwarding's error paths), not the contract's output.
// Usage: node bench/limits/enveloped-checks.ts (the options of checks.ts)
import { formatTraceparent, requestTrace } from '@platform/service-kit';
import { checkedHandler, checksOf } from './checks-of.ts';
import { checkedUpstreamHeaders, limitOptions, listen, undiciForwarder } from './common.ts';
import { envelopedServer, withQuota } from './envelope-of.ts';

const options = limitOptions('enveloped-checks', ['target', 'redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const { forward } = undiciForwarder(options.target);
const checked = checkedHandler(
  checksOf(options),
  withQuota((req, res, body, vouch) => {
    const headers = checkedUpstreamHeaders(req, body, vouch === undefined ? undefined : { ...vouch, requestId: req.id ?? vouch.requestId });
    headers.traceparent = formatTraceparent(requestTrace(req));
    forward(req, res, headers, body.length === 0 ? null : body);
  }),
);
listen(envelopedServer('limit-e-enveloped', checked), options.port);
