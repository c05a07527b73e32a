/**
 * The canonical text (lower case, no `urn:uuid:` prefix) of a uuid the OpenAPI validator accepted. Its
 * `uuid` format lets both variants through: Postgres refuses the prefix (a 500 instead of a 400/404), and
 * an ownership check comparing strings would refuse an owner who writes their own id in upper case.
 */
export function canonicalUuid(id: string): string {
  return id.replace(/^urn:uuid:/i, '').toLowerCase();
}
