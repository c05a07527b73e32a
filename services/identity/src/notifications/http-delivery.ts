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
 * Rejects with a reason that names the status only, never the provider's body.
 */
export async function postJson(options: HttpDeliveryOptions, body: unknown): Promise<void> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  for (let attempt = 1; ; attempt += 1) {
    let status: number | undefined;
    try {
      const response = await axios.post(options.url, body, {
        headers,
        timeout: options.timeoutMs,
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
