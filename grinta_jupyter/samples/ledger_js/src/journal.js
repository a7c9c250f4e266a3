/**
 * Journal entries: a dated description and two or more lines, each a debit
 * or a credit of a positive amount to one account. An entry balances when its
 * debits and credits add up to the same amount.
 */

import { LedgerError, UnbalancedEntryError } from './errors.js';
import { Money } from './money.js';

export const SIDES = Object.freeze(['debit', 'credit']);

const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** Check that `text` is a real calendar date written `YYYY-MM-DD` and return it. */
export function parseDate(text) {
  const date = new Date(`${text}T00:00:00Z`);
  if (!DATE_PATTERN.test(text) || Number.isNaN(date.getTime())) {
    throw new LedgerError(`not a date (YYYY-MM-DD): ${JSON.stringify(text)}`);
  }
  // Date rolls 2024-02-30 over to March; a real date survives the round trip.
  if (date.toISOString().slice(0, 10) !== text) {
    throw new LedgerError(`no such day: ${text}`);
  }
  return text;
}

export class JournalEntry {
  constructor({ date, description = '', lines = [] }) {
    this.date = parseDate(date);
    this.description = description;
    this.lines = [];
    this.id = undefined; // set by Ledger.post
    for (const { account, side, amount, memo } of lines) {
      this.addLine(account, side, amount, memo);
    }
  }

  /** Add a line; `amount` is Money or a decimal string such as `12.50`. */
  addLine(account, side, amount, memo = '') {
    if (this.id !== undefined) {
      throw new LedgerError(`entry #${this.id} is posted and cannot change`);
    }
    if (!SIDES.includes(side)) {
      throw new LedgerError(`side must be debit or credit, got ${JSON.stringify(side)}`);
    }
    const money = amount instanceof Money ? amount : Money.parse(amount);
    if (money.isNegative() || money.isZero()) {
      throw new LedgerError(`line amounts must be positive, got ${money.format()}`);
    }
    this.lines.push(Object.freeze({ account, side, amount: money, memo }));
    return this;
  }

  debit(account, amount, memo) {
    return this.addLine(account, 'debit', amount, memo);
  }

  credit(account, amount, memo) {
    return this.addLine(account, 'credit', amount, memo);
  }

  get currency() {
    return this.lines[0]?.amount.currency;
  }

  total(side) {
    const amounts = this.lines.filter((line) => line.side === side).map((line) => line.amount);
    return Money.sum(amounts, this.currency);
  }

  isBalanced() {
    return this.total('debit').equals(this.total('credit'));
  }

  /** Throw unless the entry can be posted: two lines or more, one currency, balanced. */
  validate() {
    if (this.lines.length < 2) {
      throw new LedgerError('an entry needs at least two lines');
    }
    const currencies = new Set(this.lines.map((line) => line.amount.currency));
    if (currencies.size > 1) {
      throw new LedgerError(`an entry mixes currencies: ${[...currencies].join(', ')}`);
    }
    if (!this.isBalanced()) {
      throw new UnbalancedEntryError(this.total('debit'), this.total('credit'));
    }
    return this;
  }

  /** The account codes this entry touches, in order of first use. */
  accounts() {
    return [...new Set(this.lines.map((line) => line.account))];
  }
}
