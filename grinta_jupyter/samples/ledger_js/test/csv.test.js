import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { CsvError, CsvImporter, Ledger, UnknownAccountError, parseCsv } from '../src/index.js';

const HEADER = 'date,ref,description,account,debit,credit,memo';

function ledgerWithAccounts() {
  const ledger = new Ledger();
  ledger.openAccount({ code: '1000', name: 'Cash', type: 'asset' });
  ledger.openAccount({ code: '2100', name: 'Sales tax payable', type: 'liability' });
  ledger.openAccount({ code: '4000', name: 'Sales', type: 'income' });
  ledger.openAccount({ code: '6000', name: 'Rent', type: 'expense' });
  return ledger;
}

describe('reading CSV', () => {
  it('splits records and fields', () => {
    assert.deepEqual(parseCsv('a,b,c\n1,,3\n'), [
      ['a', 'b', 'c'],
      ['1', '', '3'],
    ]);
  });

  it('handles quotes, doubled quotes, commas and newlines inside fields', () => {
    const text = 'name,note\r\n"Smith, J.","said ""hi""\nthen left"\r\n';
    assert.deepEqual(parseCsv(text), [
      ['name', 'note'],
      ['Smith, J.', 'said "hi"\nthen left'],
    ]);
  });

  it('skips blank lines and reads a last line without a newline', () => {
    assert.deepEqual(parseCsv('a\n\n1\n\n2'), [['a'], ['1'], ['2']]);
  });

  it('reports an unterminated quote', () => {
    assert.throws(() => parseCsv('a\n"oops\n'), CsvError);
  });
});

describe('importing entries', () => {
  it('groups rows by ref into balanced entries', () => {
    const ledger = ledgerWithAccounts();
    const text = [
      HEADER,
      '2024-04-01,S1,Sale with tax,1000,108.00,,',
      '2024-04-01,S1,,4000,,100.00,net',
      '2024-04-01,S1,,2100,,8.00,tax',
      '2024-04-02,R1,April rent,6000,900,,',
      '2024-04-02,R1,,1000,,900,',
    ].join('\n');
    const posted = new CsvImporter(ledger).import(text);
    assert.deepEqual(
      posted.map((entry) => [entry.id, entry.date, entry.description, entry.lines.length]),
      [
        [1, '2024-04-01', 'Sale with tax', 3],
        [2, '2024-04-02', 'April rent', 2],
      ],
    );
    assert.equal(posted[0].lines[1].memo, 'net');
    assert.equal(ledger.balance('1000').format(), '-792.00');
    assert.equal(ledger.balance('2100').format(), '8.00');
  });

  it('names the line of a bad row', () => {
    const importer = new CsvImporter(ledgerWithAccounts());
    const bothSides = `${HEADER}\n2024-04-01,S1,Sale,1000,5,5,\n`;
    assert.throws(() => importer.read(bothSides), { name: 'CsvError', line: 2 });
    const badDate = `${HEADER}\n2024-04-01,S1,Sale,1000,5,,\n2024-04-31,S2,Sale,1000,5,,\n`;
    assert.throws(() => importer.read(badDate), { name: 'CsvError', line: 3 });
    const badAmount = `${HEADER}\n2024-04-01,S1,Sale,1000,5.001,,\n`;
    assert.throws(() => importer.read(badAmount), { name: 'CsvError', line: 2 });
  });

  it('requires the columns it needs', () => {
    const importer = new CsvImporter(ledgerWithAccounts());
    assert.throws(() => importer.read('date,ref,account\n'), /missing column\(s\): description/);
  });

  it('posts nothing when one entry is invalid', () => {
    const ledger = ledgerWithAccounts();
    const text = [
      HEADER,
      '2024-04-01,S1,Sale,1000,10,,',
      '2024-04-01,S1,,4000,,10,',
      '2024-04-02,X1,Unknown,1000,10,,',
      '2024-04-02,X1,,9999,,10,',
    ].join('\n');
    assert.throws(() => new CsvImporter(ledger).import(text), UnknownAccountError);
    assert.equal(ledger.entries.length, 0);
  });
});
