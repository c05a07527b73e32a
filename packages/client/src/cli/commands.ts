import type { Client } from '../client.ts';
import { allPages } from '../operations.ts';
import type { AuditEventType, CreateAccountRequest, CreateUserRequest, Page, Role, UpdateAccountRequest, UpdateUserRequest, UserStatus } from '../types.ts';
import QRCode from 'qrcode';
import { type Flags, UsageError } from './settings.ts';
import { print } from './terminal.ts';

/** What a command gets: the client (holding the saved tokens), its arguments and flags. */
export interface CommandContext {
  client: Client;
  args: string[];
  flags: Flags;
  tokenFile: string;
  /** The password of `login`, asked for only when that command runs. */
  password: () => Promise<string>;
  /** A second-factor code (`--code`, TOTP_CODE, else prompted), asked for only when one is needed. */
  code: () => Promise<string>;
}

type Command = (ctx: CommandContext) => Promise<unknown>;

/** One line per command, printed by `--help` and after a usage error. */
export const USAGE = `usage: pnpm cli [global flags] <command>

commands:
  login <username> [--password <p>] [--code <c>]   password also from PASSWORD, code from TOTP_CODE, else prompted;
                                          the code is asked for when the account has an active second factor
  logout
  factors enroll                          prints the otpauth:// URI and its QR code (on stderr)
  factors confirm <factorId> [--code <c>]  shows the recovery codes once; the session is then aal 2
  factors list
  factors remove <factorId> [--code <c> | --recovery-code <r>]
  users reset-factors <userId>                       (ADMIN: a user who lost device and recovery codes)
  users create --username <e-mail> --first-name <n> --last-name <n> --locale <ll_CC> --timezone <tz>
               --roles <R1,R2> --status <S> [--password <p>] [--mid-name <n>] [--data <json>]
  users update <userId> [--username … --password … --first-name … --mid-name … --last-name …
               --locale … --timezone … --roles … --status …] [--data <json>]
  users unblock <userId>
  users find [--username <e-mail>] [--q <prefix>] [--status <S>] [--role <R>]     (ADMIN)
  users get <userId>
  audit [--subject <userId>] [--actor <userId>] [--type <event type>] [--since <time>] [--until <time>]  (ADMIN)
  sessions list [--user-id <userId>]                 (another user's: ADMIN)
  sessions revoke <sessionId> | sessions revoke --all [--user-id <userId>]
  lists (users find, audit, sessions list): [--limit n] [--cursor <nextCursor>] [--all: every page]
  accounts get <userId>
  accounts create <userId> --type INDIVIDUAL|ORGANIZATION [--plan <plan>] [--phone <n>] [--location …]
               [--company …] [--industry …] [--picture-url …] [--data <json>]
  accounts update <accountId> [--type … --phone … --location … --company … --industry … --picture-url …]
  stations cities | districts <city> | by-id <id> | by-city-district <city> <district> [--limit n]
           | nearest <latitude> <longitude> [--limit n]

global flags:
  --env local|test|prod (PLATFORM_ENV)     --base-url (PLATFORM_BASE_URL)  --risk-base-url (PLATFORM_RISK_BASE_URL)
  --key-id (PLATFORM_KEY_ID)               --secret (PLATFORM_KEY_SECRET)  --private-key-file <ed25519 PKCS#8 PEM>
  --token-file <path> (default ~/.config/identity-risk-platform/<env>.json)  --output json|table  -h, --help
  local defaults: --base-url http://127.0.0.1:8080 --key-id local-dev --secret local-dev-secret`;

function arg(ctx: CommandContext, index: number, name: string): string {
  const value = ctx.args[index];
  if (value === undefined || value === '') throw new UsageError(`missing <${name}>`);
  return value;
}

function numberArg(value: string | undefined, name: string, integer: boolean): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || (integer && !Number.isInteger(parsed))) throw new UsageError(`${name} must be ${integer ? 'an integer' : 'a number'}, not ${value}`);
  return parsed;
}

/**
 * A list command: one page (from `--cursor`), or with `--all` every item of every page. Pages are
 * `--limit` long; the server checks the filters.
 */
async function listing<T>(ctx: CommandContext, fetchPage: (query: { limit?: number; cursor?: string }) => Promise<Page<T>>): Promise<Page<T> | T[]> {
  const limit = numberArg(ctx.flags.limit, '--limit', true);
  if (ctx.flags.all !== true) return fetchPage({ limit, cursor: ctx.flags.cursor });
  const items: T[] = [];
  for await (const item of allPages((cursor) => fetchPage({ limit, cursor: cursor ?? ctx.flags.cursor }))) items.push(item);
  return items;
}

/** The request body: `--data` JSON first, then each given flag under its field name. */
function body(flags: Flags, fields: Record<string, keyof Flags>): Record<string, unknown> {
  let out: Record<string, unknown> = {};
  if (flags.data !== undefined) {
    try {
      out = JSON.parse(flags.data) as Record<string, unknown>;
    } catch {
      throw new UsageError('--data must be a JSON object');
    }
  }
  for (const [field, flag] of Object.entries(fields)) {
    const value = flags[flag];
    if (typeof value === 'string') out[field] = field === 'roles' ? value.split(',').map((r) => r.trim()) : value;
  }
  return out;
}

const userFields = {
  username: 'username',
  password: 'password',
  firstName: 'first-name',
  midName: 'mid-name',
  lastName: 'last-name',
  locale: 'locale',
  timezone: 'timezone',
  roles: 'roles',
  status: 'status',
} as const;
const accountFields = {
  type: 'type',
  mobilePhoneNumber: 'phone',
  location: 'location',
  company: 'company',
  industry: 'industry',
  profilePictureUrl: 'picture-url',
} as const;

/** Every command, by its words. The server validates bodies; the CLI only shapes them. */
export const COMMANDS: Record<string, Command> = {
  login: async (ctx) => {
    const username = arg(ctx, 0, 'username');
    const result = await ctx.client.auth.login({ username, password: await ctx.password() });
    if (!ctx.client.auth.needsSecondFactor()) return { username: result.username, tokenFile: ctx.tokenFile };
    // The user must show a second factor: with one active, its code now; without (a role that requires one),
    // enrolment is all the session may do.
    const factors = await ctx.client.factors.list();
    if (!factors.items.some((factor) => factor.status === 'ACTIVE')) {
      return { username: result.username, tokenFile: ctx.tokenFile, secondFactor: 'required: enrol one (pnpm cli factors enroll, then factors confirm)' };
    }
    await ctx.client.auth.secondFactor(proofOf(await ctx.code()));
    return { username: result.username, tokenFile: ctx.tokenFile, secondFactor: 'verified' };
  },
  'factors enroll': async (ctx) => {
    const enrolment = await ctx.client.factors.enrollTotp();
    // The QR code on stderr (stdout stays the JSON), in block characters: no escape sequence to strip.
    print('stderr', (await QRCode.toString(enrolment.otpauthUri, { type: 'utf8' })).split('\n'));
    return enrolment;
  },
  'factors confirm': async (ctx) => {
    const confirmed = await ctx.client.factors.confirmTotp({ factorId: arg(ctx, 0, 'factorId'), code: await ctx.code() });
    // The session is at aal 2 now: a refresh brings its tokens.
    await ctx.client.auth.refresh();
    return confirmed;
  },
  'factors list': (ctx) => ctx.client.factors.list().then((page) => page.items),
  'factors remove': async (ctx) => {
    const factorId = arg(ctx, 0, 'factorId');
    const recovery = ctx.flags['recovery-code'];
    let proof = recovery !== undefined ? { recoveryCode: recovery } : ctx.flags.code !== undefined ? { code: ctx.flags.code } : undefined;
    // An active factor goes only with a code of it: asked for when none was given (a pending one needs none).
    if (proof === undefined && (await ctx.client.factors.list()).items.some((factor) => factor.factorId === factorId && factor.status === 'ACTIVE')) {
      proof = proofOf(await ctx.code());
    }
    await ctx.client.factors.remove(factorId, proof);
    return undefined;
  },
  'users reset-factors': async (ctx) => {
    await ctx.client.factors.resetForUser(arg(ctx, 0, 'userId'));
    return undefined;
  },
  logout: async (ctx) => {
    if (ctx.client.getTokens() === undefined) throw new UsageError(`not logged in (no tokens in ${ctx.tokenFile})`);
    await ctx.client.auth.logout();
    return undefined;
  },
  'users create': (ctx) => ctx.client.users.create(body(ctx.flags, userFields) as CreateUserRequest),
  'users update': (ctx) => ctx.client.users.update({ ...body(ctx.flags, userFields), userId: arg(ctx, 0, 'userId') } as UpdateUserRequest),
  'users unblock': (ctx) => ctx.client.users.unblock(arg(ctx, 0, 'userId')),
  'users find': (ctx) =>
    listing(ctx, (page) =>
      ctx.client.users.find({
        username: ctx.flags.username,
        q: ctx.flags.q,
        status: ctx.flags.status as UserStatus | undefined,
        role: ctx.flags.role as Role | undefined,
        ...page,
      }),
    ),
  'users get': (ctx) => ctx.client.users.get(arg(ctx, 0, 'userId')),
  audit: (ctx) =>
    listing(ctx, (page) =>
      ctx.client.audit.events({
        subjectUserId: ctx.flags.subject,
        actorUserId: ctx.flags.actor,
        type: ctx.flags.type as AuditEventType | undefined,
        since: ctx.flags.since,
        until: ctx.flags.until,
        ...page,
      }),
    ),
  'sessions list': (ctx) => listing(ctx, (page) => ctx.client.sessions.list({ userId: ctx.flags['user-id'], ...page })),
  'sessions revoke': async (ctx) => {
    if (ctx.flags.all === true) {
      if (ctx.args.length > 0) throw new UsageError('sessions revoke takes a <sessionId> or --all, not both');
      await ctx.client.sessions.revokeAll({ userId: ctx.flags['user-id'] });
    } else {
      if (ctx.flags['user-id'] !== undefined) throw new UsageError('--user-id goes with --all; a <sessionId> names its user already');
      await ctx.client.sessions.revoke(arg(ctx, 0, 'sessionId'));
    }
    return undefined;
  },
  'accounts get': (ctx) => ctx.client.accounts.get(arg(ctx, 0, 'userId')),
  'accounts create': (ctx) =>
    ctx.client.accounts.create({ ...body(ctx.flags, { ...accountFields, subscriptionPlan: 'plan' }), userId: arg(ctx, 0, 'userId') } as CreateAccountRequest),
  'accounts update': (ctx) =>
    ctx.client.accounts.update({ ...body(ctx.flags, accountFields), accountId: arg(ctx, 0, 'accountId') } as UpdateAccountRequest),
  'stations cities': (ctx) => ctx.client.stations.cities(),
  'stations districts': (ctx) => ctx.client.stations.districtsOf(arg(ctx, 0, 'city')),
  'stations by-id': (ctx) => ctx.client.stations.byId(numberArg(arg(ctx, 0, 'id'), '<id>', true) ?? 0),
  'stations by-city-district': (ctx) =>
    ctx.client.stations.byCityDistrict({ city: arg(ctx, 0, 'city'), district: arg(ctx, 1, 'district'), limit: numberArg(ctx.flags.limit, '--limit', true) }),
  'stations nearest': (ctx) =>
    ctx.client.stations.nearest({
      latitude: numberArg(arg(ctx, 0, 'latitude'), '<latitude>', false) ?? 0,
      longitude: numberArg(arg(ctx, 1, 'longitude'), '<longitude>', false) ?? 0,
      limit: numberArg(ctx.flags.limit, '--limit', true),
    }),
};

/** A typed code as the API takes it: six digits are a TOTP code, anything else a recovery code. */
function proofOf(typed: string): { code: string } | { recoveryCode: string } {
  const text = typed.trim();
  return /^[0-9]{6}$/.test(text) ? { code: text } : { recoveryCode: text };
}

/** The columns `--output table` shows for the lists whose items are too wide to show whole. */
export const TABLE_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  'users find': ['userId', 'username', 'firstName', 'lastName', 'status', 'roles'],
  audit: ['at', 'type', 'actorUserId', 'subjectUserId', 'clientKeyId', 'sourceAddress', 'details'],
  'sessions list': ['sessionId', 'current', 'createdAt', 'lastUsedAt', 'expiresAt', 'clientKeyId', 'sourceAddress'],
};

/** Finds the command named by the leading positionals (one word or two) and returns it, its name and the rest. */
export function findCommand(positionals: string[]): { name: string; command: Command; args: string[] } {
  const [first = '', second = ''] = positionals;
  const two = COMMANDS[`${first} ${second}`];
  if (two !== undefined) return { name: `${first} ${second}`, command: two, args: positionals.slice(2) };
  const one = COMMANDS[first];
  if (one !== undefined) return { name: first, command: one, args: positionals.slice(1) };
  throw new UsageError(first === '' ? 'no command given' : `unknown command: ${positionals.slice(0, 2).join(' ')}`);
}
