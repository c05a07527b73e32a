// `pnpm gen:types`: the TypeScript types of each service's OpenAPI document, written to the one place
// that holds them, packages/client/src/generated/<service>.ts. The SDK is published on its own, so the
// types live in it; the services import the same files (type-only) from `@platform/client/openapi/<service>`.
// test/openapi.test.ts runs `typesOf` again and fails when a committed file is stale.
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import openapiTS, { COMMENT_HEADER, type OpenAPITSOptions, astToString } from 'openapi-typescript';

/** The services whose documents have types. */
export const SERVICES = ['identity', 'risk'] as const;
export type Service = (typeof SERVICES)[number];

/**
 * The one set of options. `defaultNonNullable: false`: a property with a `default` that the schema does
 * not list as required stays optional. openapi-typescript's own default would make it required, which is
 * wrong for a request body (the sender may leave it out: `subscriptionPlan`, `limit`), and the server's
 * code must handle its absence too.
 */
const OPTIONS: OpenAPITSOptions = { defaultNonNullable: false };

/** The OpenAPI document of a service. */
export const documentOf = (service: Service): URL => new URL(`../services/${service}/openapi.yaml`, import.meta.url);

/** Where the types of a service's document are committed. */
export const typesFileOf = (service: Service): URL => new URL(`../packages/client/src/generated/${service}.ts`, import.meta.url);

/** The generated types of a service's current document, exactly as the committed file must read. */
export async function typesOf(service: Service): Promise<string> {
  return COMMENT_HEADER + astToString(await openapiTS(documentOf(service), OPTIONS));
}

if (import.meta.main) {
  for (const service of SERVICES) {
    await writeFile(typesFileOf(service), await typesOf(service));
    console.log(`wrote ${fileURLToPath(typesFileOf(service))}`);
  }
}
