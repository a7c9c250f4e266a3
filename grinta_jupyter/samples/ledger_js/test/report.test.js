import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { JournalEntry, Ledger, TextTable } from '../src/index.js';

describe('trial balance report', () => {
  it('formats a table with totals, leaving out empty accounts', () => {
    const ledger = new Ledger();
    ledger.openAccount({ code: '1000', name: 'Cash', type: 'asset' });
    ledger.openAccount({ code: '3000', name: 'Owner equity', type: 'equity' });
    ledger.openAccount({ code: '4000', name: 'Sales', type: 'income' });
    ledger.openAccount({ code: '6000', name: 'Rent', type: 'expense' });
    ledger.post(
      new JournalEntry({ date: '2024-01-01', description: 'Capital' })
        .debit('1000', '10000')
        .credit('3000', '10000'),
    );
    ledger.post(
      new JournalEntry({ date: '2024-01-31', description: 'Rent' })
        .debit('6000', '1250.5')
        .credit('1000', '1250.5'),
    );
    const expected = [
      'Trial balance as of 2024-01-31 (USD)',
      'Code  Account           Debit     Credit',
      '----  ------------  ---------  ---------',
      '1000  Cash           8,749.50',
      '3000  Owner equity             10,000.00',
      '6000  Rent           1,250.50',
      '----  ------------  ---------  ---------',
      '      Total         10,000.00  10,000.00',
      '',
    ].join('\n');
    assert.equal(ledger.trialBalance({ asOf: '2024-01-31' }).format(), expected);
  });
});

describe('text tables', () => {
  it('pads text left and numbers right', () => {
    const table = new TextTable(['Name', 'Qty'], { numeric: [1] });
    const rows = [
      ['apples', '3'],
      ['kiwi', '12'],
    ];
    assert.equal(table.format(rows), 'Name    Qty\n------  ---\napples    3\nkiwi     12\n');
  });
});
