/**
 * The documented route template the validator matched for `req` (`/v1/accounts/{userId}`); undefined before
 * it ran or when none matched. Read from the request alone, so that code which never validates (the
 * gateway, metrics) does not load the validator to ask.
 */
export function openApiRouteOf(req: object): string | undefined {
  return (req as { openapi?: { openApiRoute?: string } }).openapi?.openApiRoute || undefined;
}
