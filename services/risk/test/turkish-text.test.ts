import assert from 'node:assert/strict';
import { compareTurkish, foldTurkish } from '../src/weather-stations/turkish-text.ts';
import { citiesInFile, files } from './support/station-files.ts';

describe('foldTurkish', () => {
  const sameKey = (canonical: string, spellings: readonly string[]) => {
    for (const spelling of spellings) assert.equal(foldTurkish(spelling), foldTurkish(canonical), `${spelling} → ${canonical}`);
  };

  it('when İstanbul is written istanbul, ISTANBUL, İstanbul, Istanbul or İSTANBUL, gives them one key', () => {
    sameKey('İstanbul', ['istanbul', 'ISTANBUL', 'İstanbul', 'Istanbul', 'İSTANBUL', 'iSTANBUL']);
  });

  it('when Şanlıurfa is written sanliurfa or SANLIURFA, gives its key', () => {
    sameKey('Şanlıurfa', ['sanliurfa', 'SANLIURFA', 'ŞANLIURFA', 'şanlıurfa']);
  });

  it('when Keçiören is written KEÇİÖREN, kecioren or KECIOREN, gives its key', () => {
    sameKey('Keçiören', ['KEÇİÖREN', 'kecioren', 'KECIOREN', 'keçiören']);
  });

  it('when every Turkish letter is written in either case or as ASCII, folds to ASCII', () => {
    assert.equal(foldTurkish('ÇĞİIÖŞÜ çğıiöşü'), 'cgiiosu cgiiosu');
    assert.equal(foldTurkish('Ağrı'), 'agri');
    assert.equal(foldTurkish('Iğdır'), 'igdir');
  });

  it('when the text is decomposed (I + U+0307, s + U+0327) or lower-cased without Turkish rules, still matches', () => {
    sameKey('İstanbul', ['I\u0307stanbul', 'İstanbul'.toLowerCase(), 'İstanbul'.normalize('NFD')]);
    sameKey('Şişli', ['S\u0327is\u0327li', 'Şişli'.normalize('NFD')]);
  });

  it('when the text has leading, trailing or repeated whitespace, ignores it', () => {
    sameKey('19 Mayıs', [' 19 mayis ', '19   MAYIS', '19\tmayıs']);
  });

  it('keeps names apart that differ in more than case and diacritics', () => {
    assert.notEqual(foldTurkish('Merkez'), foldTurkish('Merkezefendi'));
    assert.notEqual(foldTurkish('Eyüpsultan'), foldTurkish('Eyüp Sultan'));
  });

  it('when given the 81 official cities and 973 districts, no two cities and no two districts of one city share a key', () => {
    const cities = citiesInFile();
    assert.equal(cities.length, 81);
    assert.equal(new Set(cities.map(foldTurkish)).size, cities.length);
    let districts = 0;
    for (const city of cities) {
      const names = files.districts.filter((d) => d.city === city).map((d) => d.district);
      const keys = new Map<string, string>();
      for (const name of names) {
        const key = foldTurkish(name);
        assert.equal(keys.get(key), undefined, `${city}: "${keys.get(key)}" and "${name}" fold to "${key}"`);
        keys.set(key, name);
      }
      districts += names.length;
    }
    assert.equal(districts, 973);
  });
});

describe('compareTurkish', () => {
  it('orders ç after c, ğ after g, ı before i, ö after o, ş after s, ü after u, whatever the case', () => {
    const shuffled = ['Üzüm', 'Şile', 'sa', 'ud', 'Öz', 'oz', 'İz', 'ıa', 'ğa', 'gz', 'Ça', 'cz'];
    assert.deepEqual([...shuffled].sort(compareTurkish), ['cz', 'Ça', 'gz', 'ğa', 'ıa', 'İz', 'oz', 'Öz', 'sa', 'Şile', 'ud', 'Üzüm']);
  });

  it('orders the cities as provinces_districts.csv lists them (SOURCES.md: Turkish alphabetical order)', () => {
    const cities = citiesInFile();
    assert.deepEqual([...cities].reverse().sort(compareTurkish), cities);
  });
});
