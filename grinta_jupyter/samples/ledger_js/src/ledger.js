/**
 * The ledger: a chart of accounts and the journal of posted entries, from
 * which balances and the trial balance are computed. Posted entries never
 * change; a mistake is corrected by posting another entry.
 */

import { Account } from './account.js';
import { LedgerError, UnknownAccountError } from './errors.js';
import { DEFAULT_CURRENCY, Money } from './money.js';
import { TrialBalance } from './report.js';

export class Ledger {
  #accounts = new Map();
  #entries = [];

  constructor({ currency = DEFAULT_CURRENCY } = {}) {
    this.currency = currency;
  }

  /** Add an account to the chart; codes are unique. */
  openAccount({ code, name, type }) {
    if (this.#accounts.has(code)) {
      throw new LedgerError(`account ${code} is already open`);
    }
    const account = new Account({ code, name, type, currency: this.currency });
    this.#accounts.set(code, account);
    return account;
  }

  /** The account with `code`; throws UnknownAccountError if there is none. */
  account(code) {
    const account = this.#accounts.get(code);
    if (account === undefined) {
      throw new UnknownAccountError(code);
    }
    return account;
  }

  /** Every open account, sorted by code. */
  get accounts() {
    return [...this.#accounts.values()].sort((a, b) => a.code.localeCompare(b.code));
  }

  /** Posted entries, oldest first (by date, then by posting order). */
  get entries() {
    return [...this.#entries].sort((a, b) => a.date.localeCompare(b.date) || a.id - b.id);
  }

  /** The posted entry with number `id`, or undefined. */
  entry(id) {
    return this.#entries.find((entry) => entry.id === id);
  }

  /**
   * Validate `entry` and add it to the journal. It gets the next number as
   * its `id` and is frozen: a posted entry never changes.
   */
  post(entry) {
    this.#assertPostable(entry);
    entry.id = this.#entries.length + 1;
    Object.freeze(entry.lines);
    Object.freeze(entry);
    this.#entries.push(entry);
    return entry;
  }

  /** Post several entries, all or none: nothing is posted if one is invalid. */
  postAll(entries) {
    entries.forEach((entry) => this.#assertPostable(entry));
    if (new Set(entries).size !== entries.length) {
      throw new LedgerError('the same entry appears twice in the batch');
    }
    return entries.map((entry) => this.post(entry));
  }

  /** Total debits and credits of `code`, counting entries dated on or before `asOf`. */
  totals(code, { asOf } = {}) {
    const account = this.account(code);
    let debits = account.zero();
    let credits = account.zero();
    for (const entry of this.#entries) {
      if (asOf !== undefined && entry.date > asOf) continue;
      for (const line of entry.lines) {
        if (line.account !== code) continue;
        if (line.side === 'debit') debits = debits.add(line.amount);
        else credits = credits.add(line.amount);
      }
    }
    return { debits, credits };
  }

  /** The balance of `code` on its normal side (negative when it is overdrawn). */
  balance(code, { asOf } = {}) {
    const { debits, credits } = this.totals(code, { asOf });
    return this.account(code).balanceFrom(debits, credits);
  }

  /** Every account's balance in a debit or a credit column, as of `asOf`. */
  trialBalance({ asOf } = {}) {
    const rows = this.accounts.map((account) => {
      const { debits, credits } = this.totals(account.code, { asOf });
      const net = debits.subtract(credits);
      const zero = Money.zero(this.currency);
      return {
        account,
        debit: net.isNegative() ? zero : net,
        credit: net.isNegative() ? net.negate() : zero,
      };
    });
    return new TrialBalance(rows, { asOf, currency: this.currency });
  }

  #assertPostable(entry) {
    if (entry.id !== undefined) {
      throw new LedgerError(`entry #${entry.id} is already posted`);
    }
    entry.validate();
    for (const code of entry.accounts()) {
      this.account(code);
    }
    if (entry.currency !== this.currency) {
      throw new LedgerError(`entry is in ${entry.currency}, the ledger in ${this.currency}`);
    }
  }
}
