import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  JournalEntry,
  LedgerError,
  Money,
  UnbalancedEntryError,
  parseDate,
} from '../src/index.js';

describe('building entries', () => {
  it('adds debit and credit lines in order', () => {
    const entry = new JournalEntry({ date: '2024-03-01', description: 'Rent' })
      .debit('6000', '1200.00', 'March')
      .credit('1000', '1200.00');
    assert.deepEqual(
      entry.lines.map((line) => [line.account, line.side, line.amount.cents, line.memo]),
      [
        ['6000', 'debit', 120000, 'March'],
        ['1000', 'credit', 120000, ''],
      ],
    );
    assert.deepEqual(entry.accounts(), ['6000', '1000']);
  });

  it('takes lines in the constructor too', () => {
    const entry = new JournalEntry({
      date: '2024-03-01',
      lines: [
        { account: '1000', side: 'debit', amount: new Money(500) },
        { account: '4000', side: 'credit', amount: '5' },
      ],
    });
    assert.ok(entry.isBalanced());
  });

  it('refuses zero, negative and one-sided lines', () => {
    const entry = new JournalEntry({ date: '2024-03-01' });
    assert.throws(() => entry.debit('1000', '0'), LedgerError);
    assert.throws(() => entry.debit('1000', '-5'), LedgerError);
    assert.throws(() => entry.addLine('1000', 'both', '5'), LedgerError);
  });

  it('accepts only real calendar dates', () => {
    assert.equal(parseDate('2024-02-29'), '2024-02-29');
    for (const text of ['2023-02-29', '2024-13-01', '24-01-01', 'yesterday']) {
      assert.throws(() => parseDate(text), LedgerError, text);
    }
  });
});

describe('balance checks', () => {
  it('totals each side', () => {
    const entry = new JournalEntry({ date: '2024-03-02' })
      .debit('5000', '30.00')
      .debit('2100', '2.40')
      .credit('1000', '32.40');
    assert.equal(entry.total('debit').cents, 3240);
    assert.equal(entry.total('credit').cents, 3240);
    assert.ok(entry.isBalanced());
    assert.equal(entry.validate(), entry);
  });

  it('reports an unbalanced entry with both totals', () => {
    const entry = new JournalEntry({ date: '2024-03-02' })
      .debit('5000', '30.00')
      .credit('1000', '29.99');
    assert.throws(
      () => entry.validate(),
      (error) => {
        assert.ok(error instanceof UnbalancedEntryError);
        assert.equal(error.debits.cents, 3000);
        assert.equal(error.credits.cents, 2999);
        assert.match(error.message, /30\.00 != credits 29\.99/);
        return true;
      },
    );
  });

  it('needs two lines and one currency', () => {
    const single = new JournalEntry({ date: '2024-03-02' }).debit('1000', '1');
    assert.throws(() => single.validate(), /at least two lines/);
    const mixed = new JournalEntry({ date: '2024-03-02' })
      .debit('1000', new Money(100, 'USD'))
      .credit('4000', new Money(100, 'EUR'));
    assert.throws(() => mixed.validate(), /mixes currencies/);
  });
});
