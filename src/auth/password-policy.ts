// Password strength rules from the `console` section (docs/configuration.md "console"), checked as
// Kura's IdentityService checks them.

import type { ConsoleConfig } from './config.js';

/** identity/v1/passwordRequirements, keys in Kura's JSON order (special before cases). */
export interface PasswordRequirements {
  passwordMinimumLength: number;
  passwordRequireDigits: boolean;
  passwordRequireSpecialChars: boolean;
  passwordRequireBothCases: boolean;
}

export function requirementsOf(c: ConsoleConfig): PasswordRequirements {
  return {
    passwordMinimumLength: c['new.password.min.length'],
    passwordRequireDigits: c['new.password.require.digits'],
    passwordRequireSpecialChars: c['new.password.require.special.characters'],
    passwordRequireBothCases: c['new.password.require.both.cases'],
  };
}

// Kura's rules are whole-string Java regex matches where `.` does not cross line terminators, so a
// password holding one fails every enabled regex rule; U+0085 is one of Java's terminators.
const LINE_TERMINATOR = /[\n\r\u0085\u2028\u2029]/;

/**
 * Every failing rule, in Kura's order: length → digits → both cases → special characters.
 * Length counts UTF-16 code units, as Java's String.length() does.
 */
export function passwordFailures(password: string, r: PasswordRequirements): string[] {
  const out: string[] = [];
  if (r.passwordMinimumLength > 0 && password.length < r.passwordMinimumLength) {
    out.push(`Password length must be at least ${r.passwordMinimumLength} characters`);
  }
  const terminated = LINE_TERMINATOR.test(password);
  if (r.passwordRequireDigits && (terminated || !/[0-9]/.test(password))) out.push('Password must contain at least one digit');
  if (r.passwordRequireBothCases && (terminated || !/[a-z]/.test(password) || !/[A-Z]/.test(password))) {
    out.push('Password must contain both uppercase and lowercase characters');
  }
  if (r.passwordRequireSpecialChars && (terminated || !/[^A-Za-z0-9]/.test(password))) {
    out.push('Password must contain at least one non alphanumeric character');
  }
  return out;
}
