/**
 * Characters a terminal may act on instead of showing them: C0 controls, DEL and C1 controls (ESC and CSI
 * start sequences that move the cursor, erase lines or set the window title; CR and LF forge rows; BEL
 * rings), format characters (the bidi embeddings, overrides, isolates and marks reorder what follows; the
 * zero-width ones hide), the line and paragraph separators, and lone surrogates.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;

/** `\uXXXX` for each UTF-16 unit of `char`: a pair of escapes for a character beyond U+FFFF. */
function escapeUnits(char: string): string {
  let out = '';
  for (let i = 0; i < char.length; i++) out += `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/**
 * `text` with every control, format (bidi, zero-width), line-separator character and lone surrogate
 * replaced by its visible `\uXXXX` escape, so the operator sees what was sent and the terminal does
 * nothing. The escapes are JSON's and JavaScript's, so a JSON text stays JSON and means the same.
 * Idempotent: what it returns holds none of those characters.
 */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, escapeUnits);
}

/**
 * Writes `lines` to stdout or stderr, each escaped by escapeControls, joined by '\n' and ended by `end`.
 * The CLI's only way to print (lint refuses `process.stdout` and `process.stderr` anywhere else in the
 * package), so no output path can let a character from the API act on the terminal, and a line break
 * comes only from here, never from data.
 */
export function print(stream: 'stdout' | 'stderr', lines: readonly string[], end = '\n'): void {
  process[stream].write(`${lines.map(escapeControls).join('\n')}${end}`);
}
