/**
 * ledger-js: a small double-entry bookkeeping ledger.
 *
 * - `money.js`: `Money`, amounts in integer cents.
 * - `account.js`: `Account` and the five account types.
 * - `journal.js`: `JournalEntry`, balanced debits and credits.
 * - `ledger.js`: `Ledger`, which posts entries and computes balances.
 * - `report.js`: `TrialBalance` and the `TextTable` formatter.
 * - `csv.js`: `parseCsv` and `CsvImporter`.
 */

export { ACCOUNT_TYPES, Account } from './account.js';
export { COLUMNS, CsvImporter, parseCsv } from './csv.js';
export {
  CsvError,
  CurrencyMismatchError,
  LedgerError,
  MoneyFormatError,
  UnbalancedEntryError,
  UnknownAccountError,
} from './errors.js';
export { JournalEntry, SIDES, parseDate } from './journal.js';
export { Ledger } from './ledger.js';
export { DEFAULT_CURRENCY, Money } from './money.js';
export { TextTable, TrialBalance } from './report.js';
