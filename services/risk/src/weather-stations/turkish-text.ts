// Combining marks left by NFD: the cedilla of ç/ş, the breve of ğ, the diaeresis of ö/ü, the circumflex
// of â/î/û, and the dot above that non-Turkish lower-casing leaves on İ (i + U+0307).
const COMBINING_MARKS = /[\u0300-\u036f]/g;
const WHITESPACE_RUNS = /\s+/g;

/**
 * The matching key of a Turkish place name: case, Turkish diacritics and extra whitespace ignored.
 * Lower-cases with the Turkish rules first (İ→i, I→ı), so `ISTANBUL`, `İstanbul` and `istanbul` meet,
 * then drops the marks and folds ı→i, so the ASCII spellings people type (`sanliurfa`) find the name.
 */
export function foldTurkish(text: string): string {
  return text
    .replace(WHITESPACE_RUNS, ' ')
    .trim()
    .toLocaleLowerCase('tr')
    .normalize('NFD')
    .replace(COMBINING_MARKS, '')
    .replaceAll('ı', 'i');
}

const collator = new Intl.Collator('tr');

/** Orders names as a Turkish dictionary does: ç after c, ğ after g, ı before i, ö after o, ş after s, ü after u. */
export function compareTurkish(a: string, b: string): number {
  return collator.compare(a, b);
}
