/**
 * Money as a whole number of cents plus a currency code. Integer cents keep
 * sums exact: 0.1 + 0.2 is 30 cents here, never 0.30000000000000004.
 */

import { CurrencyMismatchError, MoneyFormatError } from './errors.js';

export const DEFAULT_CURRENCY = 'USD';

// An optional sign, digits, and at most two decimals; thousands separators are
// removed before matching.
const AMOUNT_PATTERN = /^[+-]?\d+(\.\d{1,2})?$/;

export class Money {
  constructor(cents, currency = DEFAULT_CURRENCY) {
    if (!Number.isSafeInteger(cents)) {
      throw new TypeError(`cents must be a safe integer, got ${cents}`);
    }
    this.cents = cents === 0 ? 0 : cents; // no -0, so equal amounts format alike
    this.currency = currency;
    Object.freeze(this);
  }

  static zero(currency = DEFAULT_CURRENCY) {
    return new Money(0, currency);
  }

  /** Parse a decimal amount such as `12.34`, `-0.50` or `1,200`. */
  static parse(text, currency = DEFAULT_CURRENCY) {
    const cleaned = String(text).trim().replaceAll(',', '');
    if (!AMOUNT_PATTERN.test(cleaned)) {
      throw new MoneyFormatError(`not an amount: ${JSON.stringify(text)}`);
    }
    const [whole, fraction = ''] = cleaned.split('.');
    const units = Number.parseInt(whole, 10);
    const cents = Number.parseInt(fraction.padEnd(2, '0'), 10);
    return new Money(units * 100 + (units < 0 ? -cents : cents), currency);
  }

  /** The sum of `amounts`, all in `currency` (zero when there are none). */
  static sum(amounts, currency = DEFAULT_CURRENCY) {
    return amounts.reduce((total, amount) => total.add(amount), Money.zero(currency));
  }

  add(other) {
    this.#assertSameCurrency(other);
    return new Money(this.cents + other.cents, this.currency);
  }

  subtract(other) {
    this.#assertSameCurrency(other);
    return new Money(this.cents - other.cents, this.currency);
  }

  negate() {
    return new Money(-this.cents, this.currency);
  }

  abs() {
    return this.cents < 0 ? this.negate() : this;
  }

  /**
   * Split into parts proportional to `ratios`, losing no cent: the remainder
   * goes one cent at a time to the first parts.
   */
  allocate(ratios) {
    const total = ratios.reduce((sum, ratio) => sum + ratio, 0);
    if (ratios.length === 0 || total <= 0 || ratios.some((ratio) => ratio < 0)) {
      throw new RangeError('ratios must be non-negative and sum to more than zero');
    }
    const shares = ratios.map((ratio) => Math.trunc((this.cents * ratio) / total));
    let remainder = this.cents - shares.reduce((sum, share) => sum + share, 0);
    const step = Math.sign(remainder);
    for (let i = 0; remainder !== 0; i = (i + 1) % shares.length) {
      shares[i] += step;
      remainder -= step;
    }
    return shares.map((share) => new Money(share, this.currency));
  }

  isZero() {
    return this.cents === 0;
  }

  isNegative() {
    return this.cents < 0;
  }

  equals(other) {
    return other instanceof Money && this.currency === other.currency && this.cents === other.cents;
  }

  /** Negative, zero or positive, as for `Array.prototype.sort`. */
  compare(other) {
    this.#assertSameCurrency(other);
    return Math.sign(this.cents - other.cents);
  }

  /** The amount with two decimals and thousands separators: `-1,234.50`. */
  format() {
    const digits = String(Math.abs(this.cents)).padStart(3, '0');
    const units = digits.slice(0, -2).replace(/\B(?=(\d{3})+$)/g, ',');
    const sign = this.cents < 0 ? '-' : '';
    return `${sign}${units}.${digits.slice(-2)}`;
  }

  toString() {
    return `${this.format()} ${this.currency}`;
  }

  toJSON() {
    return { cents: this.cents, currency: this.currency };
  }

  #assertSameCurrency(other) {
    if (!(other instanceof Money)) {
      throw new TypeError(`expected Money, got ${other}`);
    }
    if (other.currency !== this.currency) {
      throw new CurrencyMismatchError(`cannot combine ${this.currency} and ${other.currency}`);
    }
  }
}
