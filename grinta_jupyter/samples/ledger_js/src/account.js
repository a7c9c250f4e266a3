/**
 * Accounts of the chart of accounts. The type decides the normal side: assets
 * and expenses grow with debits; liabilities, equity and income with credits.
 */

import { LedgerError } from './errors.js';
import { DEFAULT_CURRENCY, Money } from './money.js';

export const ACCOUNT_TYPES = Object.freeze(['asset', 'liability', 'equity', 'income', 'expense']);

const DEBIT_NORMAL = new Set(['asset', 'expense']);

// Codes are short and stable, like `1000` or `4000-01`, so that CSV files stay readable.
const CODE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9-]*$/;

export class Account {
  constructor({ code, name, type, currency = DEFAULT_CURRENCY }) {
    if (typeof code !== 'string' || !CODE_PATTERN.test(code)) {
      throw new LedgerError(`invalid account code ${JSON.stringify(code)}`);
    }
    if (!ACCOUNT_TYPES.includes(type)) {
      throw new LedgerError(`account ${code}: type must be one of ${ACCOUNT_TYPES.join(', ')}`);
    }
    this.code = code;
    this.name = name ?? code;
    this.type = type;
    this.currency = currency;
    Object.freeze(this);
  }

  /** `debit` or `credit`: the side on which this account's balance grows. */
  get normalSide() {
    return DEBIT_NORMAL.has(this.type) ? 'debit' : 'credit';
  }

  /** The balance on the normal side, given the account's total debits and credits. */
  balanceFrom(debits, credits) {
    return this.normalSide === 'debit' ? debits.subtract(credits) : credits.subtract(debits);
  }

  /** A zero amount in the account's currency. */
  zero() {
    return Money.zero(this.currency);
  }

  toString() {
    return `${this.code} ${this.name}`;
  }
}
