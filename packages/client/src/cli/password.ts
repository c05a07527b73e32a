import { print } from './terminal.ts';

/**
 * Reads a password: from the terminal without echo, or the first line of a piped stdin. Used only
 * when neither --password nor PASSWORD is given, so scripts never block on a prompt they cannot see.
 */
export function promptPassword(prompt: string): Promise<string> {
  const { stdin } = process;
  if (!stdin.isTTY) {
    return new Promise((resolve, reject) => {
      let text = '';
      stdin.setEncoding('utf8');
      stdin.on('data', (chunk: string) => (text += chunk));
      stdin.on('end', () => resolve(text.split(/\r?\n/)[0] ?? ''));
      stdin.on('error', reject);
    });
  }
  print('stderr', [prompt], '');
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let password = '';
    const done = (finish: () => void): void => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      print('stderr', ['']);
      finish();
    };
    const onData = (chunk: string): void => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') return done(() => resolve(password));
        if (char === '\u0003') return done(() => reject(new Error('cancelled')));
        password = char === '\u007f' || char === '\b' ? password.slice(0, -1) : password + char;
      }
    };
    stdin.on('data', onData);
  });
}
