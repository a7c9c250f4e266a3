/**
 * Errors thrown by the ledger. Every one is a LedgerError, so callers can
 * catch the whole family at once and still tell the cases apart.
 */

export class LedgerError extends Error {
  constructor(message) {
    super(message);
    this.name = new.target.name;
  }
}

/** An amount that is not written like `12.34`, `-0.50` or `1,200`. */
export class MoneyFormatError extends LedgerError {}

/** Two amounts in different currencies were combined. */
export class CurrencyMismatchError extends LedgerError {}

/** A journal entry whose debits and credits differ. */
export class UnbalancedEntryError extends LedgerError {
  constructor(debits, credits) {
    super(`entry does not balance: debits ${debits.format()} != credits ${credits.format()}`);
    this.debits = debits;
    this.credits = credits;
  }
}

/** An account code that the ledger has not opened. */
export class UnknownAccountError extends LedgerError {
  constructor(code) {
    super(`unknown account ${JSON.stringify(code)}`);
    this.code = code;
  }
}

/** A malformed CSV file; `line` is 1-based and counts the header. */
export class CsvError extends LedgerError {
  constructor(line, message) {
    super(`line ${line}: ${message}`);
    this.line = line;
  }
}
