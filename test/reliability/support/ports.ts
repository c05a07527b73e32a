export { freePort } from '@platform/stack';

/** Polls `probe` every `intervalMs` until it returns true; false when `timeoutMs` passed first. */
export async function eventually(probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return false;
}
