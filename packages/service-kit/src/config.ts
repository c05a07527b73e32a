/** The deployment environments of CONTRACT.md part 1. */
export const APP_ENVS = ['local', 'test', 'prod'] as const;
export type AppEnv = (typeof APP_ENVS)[number];

/** One configuration key: how to read it, what it is for, and where its default applies. */
export interface ConfigField<T> {
  /** One line saying what the key is; printed when it is missing. */
  doc: string;
  /** Turns the raw text into a value, throwing an Error whose message says what is wrong. */
  parse: (raw: string) => T;
  /** Used in every environment when the variable is unset. */
  default?: T;
  /** Used only in `local` when the variable is unset: secrets and addresses that differ per environment. */
  localDefault?: T;
  /** Never printed; `describeConfig` shows it as `[redacted]`. */
  secret?: boolean;
  /** Not required (and left unset) when this other key is set: one of two ways to name a thing. */
  unlessSet?: string;
}

interface FieldOptions<T> {
  default?: T;
  localDefault?: T;
  secret?: boolean;
  unlessSet?: string;
}

function field<T>(doc: string, parse: (raw: string) => T, options: FieldOptions<T> = {}): ConfigField<T> {
  return { doc, parse, ...options };
}

function parseInteger(raw: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(raw.trim())) throw new Error(`must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new Error(`must be between ${min} and ${max}, got ${value}`);
  return value;
}

function parseUrl(raw: string, protocols: readonly string[]): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('must be an absolute URL');
  }
  if (!protocols.includes(url.protocol)) throw new Error(`must use one of ${protocols.join(', ')}`);
  return raw;
}

/** Builders for configuration keys; each takes the key's one-line description first. */
export const env = {
  string: (doc: string, options?: FieldOptions<string>) => field(doc, (raw) => raw, options),
  integer: (doc: string, range: { min: number; max: number }, options?: FieldOptions<number>) =>
    field(doc, (raw) => parseInteger(raw, range.min, range.max), options),
  port: (doc: string, options?: FieldOptions<number>) => field(doc, (raw) => parseInteger(raw, 0, 65535), options),
  boolean: (doc: string, options?: FieldOptions<boolean>) =>
    field(
      doc,
      (raw) => {
        if (/^(true|1|yes)$/i.test(raw)) return true;
        if (/^(false|0|no)$/i.test(raw)) return false;
        throw new Error('must be true or false');
      },
      options,
    ),
  oneOf: <const V extends string>(values: readonly V[], doc: string, options?: FieldOptions<V>) =>
    field(
      doc,
      (raw) => {
        if (!(values as readonly string[]).includes(raw)) throw new Error(`must be one of ${values.join(', ')}`);
        return raw as V;
      },
      options,
    ),
  url: (doc: string, protocols: readonly string[], options?: FieldOptions<string>) =>
    field(doc, (raw) => parseUrl(raw, protocols), options),
  /** A comma-separated list; empty entries are dropped. */
  list: (doc: string, options?: FieldOptions<readonly string[]>) =>
    field(
      doc,
      (raw) =>
        raw
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      options,
    ),
  custom: <T>(doc: string, parse: (raw: string) => T, options?: FieldOptions<T>) => field(doc, parse, options),
};

/** A service's configuration schema: environment variable name → field. */
export type ConfigSpec = Record<string, ConfigField<unknown>>;

/** The parsed configuration of a spec, plus the environment it was parsed for. */
export type ConfigOf<S extends ConfigSpec> = { readonly [K in keyof S]: S[K] extends ConfigField<infer T> ? T : never } & {
  readonly APP_ENV: AppEnv;
};

/** Thrown when configuration is invalid; `problems` names every bad key, one per entry. */
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * Parses the environment once, against a spec. Every problem is collected before failing, so an
 * operator sees all missing secrets at once. In `test` and `prod` only `default`s apply: a key with
 * just a `localDefault` (every secret) must be set, and the error names it.
 */
export function loadConfig<S extends ConfigSpec>(spec: S, source: Readonly<Record<string, string | undefined>>): ConfigOf<S> {
  const problems: string[] = [];
  const rawEnv = source.APP_ENV?.trim() || 'local';
  const appEnv = (APP_ENVS as readonly string[]).includes(rawEnv) ? (rawEnv as AppEnv) : undefined;
  if (appEnv === undefined) problems.push(`APP_ENV must be one of ${APP_ENVS.join(', ')}, got "${rawEnv}"`);

  const values: Record<string, unknown> = { APP_ENV: appEnv ?? 'local' };
  for (const [name, spec_] of Object.entries(spec)) {
    const raw = source[name];
    if (raw !== undefined && raw.trim() !== '') {
      try {
        values[name] = spec_.parse(raw.trim());
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        // A secret's raw text is never echoed back, even when it is malformed.
        problems.push(`${name} ${spec_.secret ? why.replaceAll(raw.trim(), '[redacted]') : why}`);
      }
    } else if (spec_.unlessSet !== undefined && (source[spec_.unlessSet]?.trim() ?? '') !== '') {
      values[name] = undefined;
    } else if (appEnv === 'local' && spec_.localDefault !== undefined) {
      values[name] = spec_.localDefault;
    } else if (spec_.default !== undefined) {
      values[name] = spec_.default;
    } else {
      problems.push(`${name} is required in APP_ENV=${appEnv ?? rawEnv}: ${spec_.doc}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return values as ConfigOf<S>;
}

/** The configuration as it may be logged: secrets replaced by `[redacted]`. */
export function describeConfig<S extends ConfigSpec>(spec: S, config: ConfigOf<S>): Record<string, unknown> {
  const out: Record<string, unknown> = { APP_ENV: config.APP_ENV };
  for (const [name, spec_] of Object.entries(spec)) {
    out[name] = spec_.secret ? '[redacted]' : config[name];
  }
  return out;
}

/**
 * For composition roots: parses the configuration, and on any problem prints every bad key to stderr
 * and exits 1 before anything connects. `refine` adds cross-key rules (e.g. a URL required by a provider).
 */
export function loadConfigOrExit<S extends ConfigSpec>(
  spec: S,
  source: Readonly<Record<string, string | undefined>>,
  refine?: (config: ConfigOf<S>) => string[],
): ConfigOf<S> {
  try {
    const config = loadConfig(spec, source);
    const problems = refine?.(config) ?? [];
    if (problems.length > 0) throw new ConfigError(problems);
    return config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
