import axios from 'axios';

export interface HttpDeliveryOptions {
  url: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  token?: string;
  timeoutMs: number;
}

/**
 * POSTs a JSON message to a provider and says whether it took it (2xx). A 4xx is final: the message
 * is wrong and sending it again will not help; a timeout, network fault or 5xx gets one more try.
 * Rejects with a reason that names the status only, never the provider's body. `withinMs` bounds both
 * tries together (an answer that waits for the delivery is due by then): no try starts once it is spent.
 */
export async function postJson(options: HttpDeliveryOptions, body: unknown, withinMs = Infinity): Promise<void> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const until = performance.now() + withinMs;
  for (let attempt = 1; ; attempt += 1) {
    const leftMs = until - performance.now();
    if (!(leftMs >= 1)) throw new Error('no time left before the answer is due');
    let status: number | undefined;
    try {
      const response = await axios.post(options.url, body, {
        headers,
        timeout: Math.min(options.timeoutMs, Math.floor(leftMs)),
        validateStatus: () => true,
        maxRedirects: 0,
        responseType: 'text',
      });
      status = response.status;
    } catch (err) {
      if (attempt >= 2) throw new Error(`provider unreachable: ${(err as Error).message}`);
      continue;
    }
    if (status >= 200 && status < 300) return;
    if (status < 500 || attempt >= 2) throw new Error(`provider answered ${status}`);
  }
}
