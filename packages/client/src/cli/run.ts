import { createClient } from '../client.ts';
import { ApiError, NetworkError } from '../errors.ts';
import { TABLE_COLUMNS, USAGE, findCommand } from './commands.ts';
import { render } from './output.ts';
import { promptPassword } from './password.ts';
import { UsageError, parseCommandLine, resolveSettings } from './settings.ts';
import { print } from './terminal.ts';
import { readTokens, writeTokens } from './token-file.ts';

/**
 * Runs one command line; returns the exit code (0 ok, 1 the API or network failed, 2 usage). Everything
 * goes out through `print`, which escapes whatever the API (or anyone) put in the text.
 */
export async function run(argv: string[], vars: NodeJS.ProcessEnv): Promise<number> {
  try {
    const { values: flags, positionals } = parseCommandLine(argv);
    if (flags.help === true || positionals.length === 0) {
      print('stdout', USAGE.split('\n'));
      return flags.help === true ? 0 : 2;
    }
    const { name, command, args } = findCommand(positionals);
    const settings = resolveSettings(flags, vars);
    // Refresh tokens rotate, so every change (login, automatic refresh, logout) is saved at once.
    // `login` replaces whatever the file holds, so a damaged file must not stop it.
    const saved = positionals[0] === 'login' ? undefined : readTokens(settings.tokenFile);
    const client = createClient({ ...settings.client, tokens: saved, onTokens: (t) => writeTokens(settings.tokenFile, t) });
    const password = async (): Promise<string> => flags.password ?? vars.PASSWORD ?? (await promptPassword('Password: '));
    const code = async (): Promise<string> => flags.code ?? vars.TOTP_CODE ?? (await promptPassword('Code (or a recovery code): '));
    const result = await command({ client, args, flags, tokenFile: settings.tokenFile, password, code });
    const lines = render(result, settings.output, TABLE_COLUMNS[name]);
    if (lines.length > 0) print('stdout', lines);
    return 0;
  } catch (err) {
    if (err instanceof ApiError) {
      print('stderr', JSON.stringify(err.body, null, 2).split('\n'));
      return 1;
    }
    if (err instanceof NetworkError) {
      print('stderr', [err.message]);
      return 1;
    }
    if (err instanceof UsageError || (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      print('stderr', [err.message, '', ...USAGE.split('\n')]);
      return 2;
    }
    print('stderr', [err instanceof Error ? err.message : String(err)]);
    return 1;
  }
}
