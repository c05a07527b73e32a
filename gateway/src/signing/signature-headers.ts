import { type BareItem, type InnerList, type Parameters, isInnerList, parseDictionary, serializeItem, serializeList } from 'structured-headers';
import { SignatureFault } from './signature-fault.ts';

/** One signature of a message: its covered components, its parameters and its bytes (RFC 9421 section 4). */
export interface SignatureEntry {
  /** The label the signature was read under (`sig1`). */
  label: string;
  /** The `Signature-Input` member as parsed: covered components plus parameters. */
  input: InnerList;
  /** The covered component names, lower case, for those carrying no component parameters. */
  bareComponents: readonly string[];
  /** The member as a structured field serialises it: the `@signature-params` line's value. */
  serializedInput: string;
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
 *
 * A header pair in the canonical form the SDK writes (one member each, plain component names, integer and
 * string parameters) is read by `canonicalEntry` without structured-headers: parsing and re-serialising
 * every request's Signature-Input was the largest part of the signature check's cost (the bench diary, `git show f0a4e11:bench/README.md`,
 * issue 27). Anything else, valid or not, goes through the library (`libraryEntry`); the tests compare
 * the two on every form the fast reader takes.
 */
export function readSignature(headers: Readonly<Record<string, string | string[] | undefined>>, label: string): SignatureEntry {
  const inputHeader = headerText(headers['signature-input']);
  const signatureHeader = headerText(headers['signature']);
  if (inputHeader === undefined) throw new SignatureFault('Signature-Input header missing');
  if (signatureHeader === undefined) throw new SignatureFault('Signature header missing');
  return canonicalEntry(inputHeader, signatureHeader, label) ?? libraryEntry(inputHeader, signatureHeader, label);
}

/** A dictionary member `label=` followed by an inner list of plain quoted names and integer or string parameters, in canonical form. */
const CANONICAL_INPUT = /^\((?:"[@a-z0-9!#$%&'*+.^_`|~-]+"(?: "[@a-z0-9!#$%&'*+.^_`|~-]+")*)?\)(?:;[a-z*][a-z0-9_.*-]*=(?:"[\x20\x21\x23-\x5b\x5d-\x7e]*"|0|-?[1-9][0-9]{0,14}))*$/;
const QUOTE = 0x22;
/** Canonical base64 (RFC 4648 padding), as a byte sequence serialises. */
const CANONICAL_BYTES = /^:((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?):$/;
/** The parameters of a covered component that has none (never written to). */
const NO_PARAMS: Parameters = new Map();

/**
 * The entry of a header pair in canonical form: one member each, under `label`; undefined for anything
 * else. In canonical form the received text is what the library would serialise, so it is the
 * `@signature-params` value as it stands.
 */
export function canonicalEntry(inputHeader: string, signatureHeader: string, label: string): SignatureEntry | undefined {
  const prefix = `${label}=`;
  if (!inputHeader.startsWith(prefix) || !signatureHeader.startsWith(prefix)) return undefined;
  const serializedInput = inputHeader.slice(prefix.length);
  if (!CANONICAL_INPUT.test(serializedInput)) return undefined;
  const bytes = CANONICAL_BYTES.exec(signatureHeader.slice(prefix.length));
  if (bytes === null) return undefined;
  const close = serializedInput.indexOf(')');
  const fields = close === 1 ? [] : serializedInput.slice(1, close).split(' ');
  const names = fields.map((field) => field.slice(1, -1));
  // The parameters, `;key=value` after the list. CANONICAL_INPUT has checked their grammar, so they are
  // read by position: a key holds no `=`, a string no `"`, an integer runs to the next `;` (a regular
  // expression's matchAll over them cost ~4 × this, the largest part of reading the header).
  const params: Parameters = new Map();
  let at = close + 1;
  while (at < serializedInput.length) {
    const equals = serializedInput.indexOf('=', at);
    const key = serializedInput.slice(at + 1, equals);
    // A repeated parameter serialises once, with its last value: not this text, so the library reads it.
    if (params.has(key)) return undefined;
    if (serializedInput.charCodeAt(equals + 1) === QUOTE) {
      const end = serializedInput.indexOf('"', equals + 2);
      params.set(key, serializedInput.slice(equals + 2, end));
      at = end + 1;
    } else {
      const next = serializedInput.indexOf(';', equals);
      at = next === -1 ? serializedInput.length : next;
      params.set(key, Number(serializedInput.slice(equals + 1, at)));
    }
  }
  const input: InnerList = [names.map((name) => [name, NO_PARAMS]), params];
  return checkedEntry({ label, input, bareComponents: names, fields, serializedInput, params, signature: Buffer.from(bytes[1] as string, 'base64') });
}

/** Strings (and display strings) of a structured field: the only text where `=1.0` may stand without being a number. */
const SF_STRINGS = /"(?:[^"\\]|\\.)*"/g;
/** A bare item after `=` that is a decimal with no fraction (`1.0`, `-7.000`). */
const INTEGRAL_DECIMAL = /=(-?[0-9]+\.0+)(?![0-9])/;

/**
 * A decimal with no fraction in a structured field's text, outside its strings, or undefined. structured-headers
 * reads `1.0` as the number 1 and writes it back as the integer `1`: a Signature-Input holding one would be
 * signed over other text than it says (RFC 8941 keeps `1.0` a decimal), and `created=N.0` would pass for the
 * integer `created` RFC 9421 requires. No signer writes one; it is refused.
 */
function integralDecimal(text: string): string | undefined {
  return INTEGRAL_DECIMAL.exec(text.replace(SF_STRINGS, '""'))?.[1];
}

/** The entry as structured-headers parses it: any valid form, and the reason when it is not. */
export function libraryEntry(inputHeader: string, signatureHeader: string, label: string): SignatureEntry {
  const decimal = integralDecimal(inputHeader);
  if (decimal !== undefined) throw new SignatureFault(`Signature-Input holds the decimal ${decimal.slice(0, 32)}, which is read back as an integer`);
  const input = dictionary('Signature-Input', inputHeader).get(label);
  const signature = dictionary('Signature', signatureHeader).get(label);
  if (input === undefined) throw new SignatureFault(`Signature-Input has no ${label}`);
  if (signature === undefined) throw new SignatureFault(`Signature has no ${label}`);
  if (!isInnerList(input)) throw new SignatureFault(`Signature-Input ${label} is not an inner list`);
  if (isInnerList(signature) || !(signature[0] instanceof ArrayBuffer)) throw new SignatureFault(`Signature ${label} is not a byte sequence`);
  const names: string[] = [];
  for (const [name, componentParams] of input[0]) {
    if (typeof name !== 'string') throw new SignatureFault(`Signature-Input ${label} has a component that is not a string`);
    if (name !== name.toLowerCase()) throw new SignatureFault(`component "${name.slice(0, 64)}" is not lower case`);
    if (componentParams.size === 0) names.push(name);
  }
  // A plain name (token characters, no parameters) serialises as itself in quotes.
  const fields = input[0].map((item) => (typeof item[0] === 'string' && item[1].size === 0 && PLAIN_NAME.test(item[0]) ? `"${item[0]}"` : serializeItem(item)));
  const serializedInput = serializeList([input]);
  return checkedEntry({ label, input, bareComponents: names, fields, serializedInput, params: input[1], signature: Buffer.from(signature[0]) });
}

function checkedEntry(entry: SignatureEntry): SignatureEntry {
  if (new Set(entry.fields).size !== entry.fields.length) throw new SignatureFault(`Signature-Input ${entry.label} covers a component twice`);
  return entry;
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
