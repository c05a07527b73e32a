import { type BareItem, type InnerList, type Parameters, isInnerList, parseDictionary, serializeItem } from 'structured-headers';
import { SignatureFault } from './signature-fault.ts';

/** One signature of a message: its covered components, its parameters and its bytes (RFC 9421 section 4). */
export interface SignatureEntry {
  /** The label the signature was read under (`sig1`). */
  label: string;
  /** The `Signature-Input` member as parsed: covered components plus parameters. */
  input: InnerList;
  /** The covered component names, lower case, for those carrying no component parameters. */
  bareComponents: readonly string[];
  /** Each covered component serialised (`"@method"`, `"content-digest";sf`), in order. */
  fields: string[];
  /** The signature parameters (`created`, `keyid`, `nonce`, ...). */
  params: Parameters;
  signature: Buffer;
}

/** A component name that serialises as itself in quotes: token characters (and `@`), nothing to escape. */
export const PLAIN_NAME = /^[@a-z0-9!#$%&'*+.^_`|~-]+$/;

function headerText(value: string | string[] | undefined): string | undefined {
  // Several field lines of one header combine with ", " (RFC 9110 section 5.3).
  return Array.isArray(value) ? value.join(', ') : value;
}

function dictionary(name: string, value: string): ReturnType<typeof parseDictionary> {
  try {
    return parseDictionary(value);
  } catch {
    throw new SignatureFault(`${name} is not a structured dictionary`);
  }
}

/**
 * Reads the signature under `label` from `Signature-Input` and `Signature`; other labels are ignored.
 * Throws a SignatureFault naming what is missing or malformed.
 */
export function readSignature(headers: Readonly<Record<string, string | string[] | undefined>>, label: string): SignatureEntry {
  const inputHeader = headerText(headers['signature-input']);
  const signatureHeader = headerText(headers['signature']);
  if (inputHeader === undefined) throw new SignatureFault('Signature-Input header missing');
  if (signatureHeader === undefined) throw new SignatureFault('Signature header missing');
  const input = dictionary('Signature-Input', inputHeader).get(label);
  const signature = dictionary('Signature', signatureHeader).get(label);
  if (input === undefined) throw new SignatureFault(`Signature-Input has no ${label}`);
  if (signature === undefined) throw new SignatureFault(`Signature has no ${label}`);
  if (!isInnerList(input)) throw new SignatureFault(`Signature-Input ${label} is not an inner list`);
  if (isInnerList(signature) || !(signature[0] instanceof ArrayBuffer)) throw new SignatureFault(`Signature ${label} is not a byte sequence`);
  const names: string[] = [];
  for (const [name, componentParams] of input[0]) {
    if (typeof name !== 'string') throw new SignatureFault(`Signature-Input ${label} has a component that is not a string`);
    if (name !== name.toLowerCase()) throw new SignatureFault(`component "${name}" is not lower case`);
    if (componentParams.size === 0) names.push(name);
  }
  // A plain name (token characters, no parameters) serialises as itself in quotes.
  const serialized = input[0].map((item) => (typeof item[0] === 'string' && item[1].size === 0 && PLAIN_NAME.test(item[0]) ? `"${item[0]}"` : serializeItem(item)));
  if (new Set(serialized).size !== serialized.length) throw new SignatureFault(`Signature-Input ${label} covers a component twice`);
  return { label, input, bareComponents: names, fields: serialized, params: input[1], signature: Buffer.from(signature[0]) };
}

/** The parameter `name` when it is a string, else undefined. */
export function stringParam(params: Parameters, name: string): string | undefined {
  const value: BareItem | undefined = params.get(name);
  return typeof value === 'string' ? value : undefined;
}

/** The parameter `name` when it is an integer, else undefined. */
export function integerParam(params: Parameters, name: string): number | undefined {
  const value: BareItem | undefined = params.get(name);
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}
