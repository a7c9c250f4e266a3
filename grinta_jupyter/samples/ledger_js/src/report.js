/**
 * Reports: the trial balance, and a plain-text table formatter for it.
 */

import { Money } from './money.js';

export class TrialBalance {
  constructor(rows, { asOf, currency }) {
    this.rows = rows;
    this.asOf = asOf;
    this.currency = currency;
  }

  get totalDebits() {
    return Money.sum(this.rows.map((row) => row.debit), this.currency);
  }

  get totalCredits() {
    return Money.sum(this.rows.map((row) => row.credit), this.currency);
  }

  /** Whether the debit and credit columns add up to the same amount. */
  isBalanced() {
    return this.totalDebits.equals(this.totalCredits);
  }

  /** Rows with a non-zero balance. */
  nonZeroRows() {
    return this.rows.filter((row) => !row.debit.isZero() || !row.credit.isZero());
  }

  /** The trial balance as a text table; accounts with no balance are left out. */
  format({ title = 'Trial balance' } = {}) {
    const heading = this.asOf === undefined ? title : `${title} as of ${this.asOf}`;
    const body = this.nonZeroRows().map((row) => [
      row.account.code,
      row.account.name,
      row.debit.isZero() ? '' : row.debit.format(),
      row.credit.isZero() ? '' : row.credit.format(),
    ]);
    const table = new TextTable(['Code', 'Account', 'Debit', 'Credit'], { numeric: [2, 3] });
    const totals = ['', 'Total', this.totalDebits.format(), this.totalCredits.format()];
    return `${heading} (${this.currency})\n${table.format(body, totals)}`;
  }
}

/** A fixed-width text table: a header, a rule, the rows, a rule and a footer. */
export class TextTable {
  constructor(headers, { numeric = [] } = {}) {
    this.headers = headers;
    this.numeric = new Set(numeric);
  }

  format(rows, footer) {
    const all = [this.headers, ...rows, ...(footer ? [footer] : [])];
    const widths = this.headers.map((_, column) =>
      Math.max(...all.map((row) => String(row[column]).length)),
    );
    const line = (row) =>
      row
        .map((cell, column) => this.#pad(String(cell), widths[column], column))
        .join('  ')
        .trimEnd();
    const rule = widths.map((width) => '-'.repeat(width)).join('  ');
    const lines = [line(this.headers), rule, ...rows.map(line)];
    if (footer) lines.push(rule, line(footer));
    return `${lines.join('\n')}\n`;
  }

  #pad(cell, width, column) {
    return this.numeric.has(column) ? cell.padStart(width) : cell.padEnd(width);
  }
}
