/**
 * Every character a terminal may act on, listed by hand (not by the regular expression under test):
 * C0, DEL, C1, the line and paragraph separators, the bidi controls and the zero-width ones.
 */
export const HOSTILE: ReadonlyArray<[string, string]> = [
  ['NUL', '\u0000'],
  ['BEL', '\u0007'],
  ['BS', '\b'],
  ['TAB', '\t'],
  ['LF', '\n'],
  ['CR', '\r'],
  ['ESC', '\u001b'],
  ['DEL', '\u007f'],
  ['NEL (C1)', '\u0085'],
  ['CSI (C1)', '\u009b'],
  ['OSC (C1)', '\u009d'],
  ['ARABIC LETTER MARK', '\u061c'],
  ['LRM', '\u200e'],
  ['RLM', '\u200f'],
  ['LINE SEPARATOR', '\u2028'],
  ['PARAGRAPH SEPARATOR', '\u2029'],
  ['LRE', '\u202a'],
  ['RLE', '\u202b'],
  ['PDF', '\u202c'],
  ['LRO', '\u202d'],
  ['RLO', '\u202e'],
  ['LRI', '\u2066'],
  ['RLI', '\u2067'],
  ['FSI', '\u2068'],
  ['PDI', '\u2069'],
  ['ZERO WIDTH SPACE', '\u200b'],
  ['BOM', '\ufeff'],
  ['a lone surrogate', '\ud800'],
];

/** The name of the first raw hostile character in `text`, by the hand-made list; undefined when there is none. */
export function rawHostile(text: string): string | undefined {
  // `includes('\ud800')` would also match the first half of a well-formed pair (U+10000), which is harmless.
  if (!text.isWellFormed()) return 'a lone surrogate';
  return HOSTILE.find(([name, char]) => name !== 'a lone surrogate' && text.includes(char))?.[0];
}
