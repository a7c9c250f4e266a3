/**
 * CSV import. `parseCsv` reads RFC 4180 text (quoted fields, doubled quotes,
 * CRLF or LF). `CsvImporter` turns rows of
 *
 *     date,ref,description,account,debit,credit,memo
 *
 * into journal entries: consecutive rows with the same `ref` make one entry,
 * whose date and description come from its first row. Each row fills exactly
 * one of `debit` and `credit`. `memo` is optional.
 */

import { CsvError, LedgerError } from './errors.js';
import { JournalEntry } from './journal.js';

export const COLUMNS = Object.freeze(['date', 'ref', 'description', 'account', 'debit', 'credit']);

const QUOTE = '"';

/** Parse CSV text into records, each an array of strings; blank lines are skipped. */
export function parseCsv(text) {
  const records = [];
  let record = [];
  let field = '';
  let quoted = false;
  let line = 1;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (quoted) {
      if (char === QUOTE && text[i + 1] === QUOTE) {
        field += QUOTE;
        i += 1;
      } else if (char === QUOTE) {
        quoted = false;
      } else {
        if (char === '\n') line += 1;
        field += char;
      }
    } else if (char === QUOTE && field === '') {
      quoted = true;
    } else if (char === ',') {
      record.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[i + 1] === '\n') i += 1;
      record.push(field);
      if (record.length > 1 || record[0] !== '') records.push(record);
      record = [];
      field = '';
      line += 1;
    } else {
      field += char;
    }
  }
  if (quoted) {
    throw new CsvError(line, 'unterminated quoted field');
  }
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

export class CsvImporter {
  constructor(ledger) {
    this.ledger = ledger;
  }

  /** Build the entries of `text` without posting them. */
  read(text) {
    const [header, ...rows] = parseCsv(text);
    const columns = this.#columns(header ?? []);
    const entries = [];
    let current;
    let currentRef;
    rows.forEach((row, index) => {
      const lineNumber = index + 2;
      const field = (name) => (row[columns[name]] ?? '').trim();
      if (current === undefined || field('ref') !== currentRef) {
        current = this.#newEntry(field('date'), field('description'), lineNumber);
        currentRef = field('ref');
        entries.push(current);
      }
      const [debit, credit] = [field('debit'), field('credit')];
      if ((debit === '') === (credit === '')) {
        throw new CsvError(lineNumber, 'fill exactly one of debit and credit');
      }
      const memo = columns.memo === undefined ? '' : field('memo');
      try {
        current.addLine(field('account'), debit ? 'debit' : 'credit', debit || credit, memo);
      } catch (error) {
        if (error instanceof LedgerError) throw new CsvError(lineNumber, error.message);
        throw error;
      }
    });
    return entries;
  }

  /** Read `text` and post its entries, all or none; returns the posted entries. */
  import(text) {
    return this.ledger.postAll(this.read(text));
  }

  #columns(header) {
    const columns = Object.fromEntries(header.map((name, index) => [name.trim(), index]));
    const missing = COLUMNS.filter((name) => columns[name] === undefined);
    if (missing.length > 0) {
      throw new CsvError(1, `missing column(s): ${missing.join(', ')}`);
    }
    return columns;
  }

  #newEntry(date, description, lineNumber) {
    try {
      return new JournalEntry({ date, description });
    } catch (error) {
      if (error instanceof LedgerError) throw new CsvError(lineNumber, error.message);
      throw error;
    }
  }
}
