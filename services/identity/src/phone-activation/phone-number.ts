import { type CountryCode, isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js/max';

/**
 * The E.164 form of a stored phone number (`0532 123 45 67` → `+905321234567` with region TR), or
 * undefined when it is not a valid mobile-capable number. The account keeps the number as the user
 * typed it; only the SMS and the code record use this form.
 */
export function toE164(raw: string, defaultRegion: string): string | undefined {
  const parsed = parsePhoneNumberFromString(raw, isSupportedCountry(defaultRegion) ? { defaultCountry: defaultRegion as CountryCode } : {});
  if (parsed === undefined || !parsed.isValid()) return undefined;
  const type = parsed.getType();
  // Landlines cannot receive the SMS; unknown types (some countries do not tell) are given the benefit of the doubt.
  if (type === 'FIXED_LINE' || type === 'TOLL_FREE' || type === 'PREMIUM_RATE' || type === 'SHARED_COST') return undefined;
  return parsed.number;
}

/** True for an ISO 3166 region code the phone number library knows (config check). */
export function isPhoneRegion(region: string): boolean {
  return isSupportedCountry(region);
}
