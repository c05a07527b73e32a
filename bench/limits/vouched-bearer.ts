// Limit F′: limit B behind what a call to risk vouched for by the gateway must do before it answers
// (CONTRACT.md part 10): the assertion checked (service-kit's trustForwardingOnlyFromGateway), the bearer
// token verified as risk verifies it under the assertion (@platform/auth's bearerAuth with checkedByGateway:
// no revocation read); no validator, logs, metrics or headers.
// Usage: node bench/limits/vouched-bearer.ts --port <port> --redis-url <url> --redis-prefix <prefix> --jwks-url <url> --issuer <origin> --assertion-key <key>
import { listenBearerLimit } from './bearer-of.ts';
import { limitOptions } from './common.ts';

const options = limitOptions('vouched-bearer', ['redisUrl', 'redisPrefix', 'jwksUrl', 'issuer']);
if (options.assertionKey === undefined) {
  process.stderr.write('usage: node bench/limits/vouched-bearer.ts --port <port> --redis-url <redis-url> --redis-prefix <redis-prefix> --jwks-url <jwks-url> --issuer <issuer> --assertion-key <assertion-key>\n');
  process.exit(2);
}
listenBearerLimit(options, 'limit-f-vouched', options.assertionKey);
