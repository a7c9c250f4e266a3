import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';

import {
  JournalEntry,
  Ledger,
  LedgerError,
  UnbalancedEntryError,
  UnknownAccountError,
} from '../src/index.js';

function smallBusiness() {
  const ledger = new Ledger();
  ledger.openAccount({ code: '1000', name: 'Cash', type: 'asset' });
  ledger.openAccount({ code: '2000', name: 'Card payable', type: 'liability' });
  ledger.openAccount({ code: '3000', name: 'Owner equity', type: 'equity' });
  ledger.openAccount({ code: '4000', name: 'Sales', type: 'income' });
  ledger.openAccount({ code: '6000', name: 'Rent', type: 'expense' });
  return ledger;
}

function entry(date, description, debitAccount, creditAccount, amount) {
  return new JournalEntry({ date, description })
    .debit(debitAccount, amount)
    .credit(creditAccount, amount);
}

describe('the chart of accounts', () => {
  it('lists accounts by code and looks them up', () => {
    const ledger = new Ledger();
    ledger.openAccount({ code: '4000', name: 'Sales', type: 'income' });
    ledger.openAccount({ code: '1000', name: 'Cash', type: 'asset' });
    assert.deepEqual(
      ledger.accounts.map((account) => account.code),
      ['1000', '4000'],
    );
    assert.equal(ledger.account('1000').name, 'Cash');
    assert.equal(ledger.account('1000').normalSide, 'debit');
    assert.equal(ledger.account('4000').normalSide, 'credit');
  });

  it('refuses duplicate codes, bad types and unknown accounts', () => {
    const ledger = smallBusiness();
    assert.throws(() => ledger.openAccount({ code: '1000', type: 'asset' }), LedgerError);
    assert.throws(() => ledger.openAccount({ code: '1100', type: 'cash' }), LedgerError);
    assert.throws(() => ledger.account('9999'), UnknownAccountError);
  });
});

describe('posting', () => {
  let ledger;
  beforeEach(() => {
    ledger = smallBusiness();
  });

  it('numbers posted entries and freezes them', () => {
    const first = ledger.post(entry('2024-01-01', 'Capital', '1000', '3000', '5000'));
    const second = ledger.post(entry('2024-01-05', 'Rent', '6000', '1000', '1200'));
    assert.equal(first.id, 1);
    assert.equal(second.id, 2);
    assert.equal(ledger.entry(2), second);
    assert.equal(ledger.entry(3), undefined);
    assert.throws(() => second.debit('6000', '1'), LedgerError);
    assert.throws(() => ledger.post(second), /already posted/);
  });

  it('refuses unbalanced entries and unknown accounts, posting nothing', () => {
    const unbalanced = new JournalEntry({ date: '2024-01-02' })
      .debit('1000', '10')
      .credit('4000', '9');
    assert.throws(() => ledger.post(unbalanced), UnbalancedEntryError);
    assert.throws(
      () => ledger.post(entry('2024-01-02', 'Oops', '1000', '4999', '10')),
      UnknownAccountError,
    );
    assert.equal(ledger.entries.length, 0);
  });

  it('posts a batch all or none', () => {
    const good = entry('2024-01-01', 'Capital', '1000', '3000', '5000');
    const bad = entry('2024-01-02', 'Oops', '1000', '4999', '10');
    assert.throws(() => ledger.postAll([good, bad]), UnknownAccountError);
    assert.throws(() => ledger.postAll([good, good]), /twice/);
    assert.equal(ledger.entries.length, 0);
    assert.equal(ledger.postAll([good]).length, 1);
  });

  it('lists entries by date, then by posting order', () => {
    ledger.post(entry('2024-02-01', 'Later', '1000', '4000', '1'));
    ledger.post(entry('2024-01-01', 'Earlier', '1000', '4000', '1'));
    ledger.post(entry('2024-02-01', 'Same day', '1000', '4000', '1'));
    assert.deepEqual(
      ledger.entries.map((posted) => posted.description),
      ['Earlier', 'Later', 'Same day'],
    );
  });
});

describe('balances', () => {
  it('reports each account on its normal side', () => {
    const ledger = smallBusiness();
    ledger.post(entry('2024-01-01', 'Capital', '1000', '3000', '5000'));
    ledger.post(entry('2024-01-05', 'Rent', '6000', '2000', '1200'));
    ledger.post(entry('2024-01-20', 'Sale', '1000', '4000', '800.50'));
    ledger.post(entry('2024-01-31', 'Pay the card', '2000', '1000', '1200'));
    assert.equal(ledger.balance('1000').format(), '4,600.50');
    assert.equal(ledger.balance('2000').format(), '0.00');
    assert.equal(ledger.balance('4000').format(), '800.50');
    assert.equal(ledger.balance('6000').format(), '1,200.00');
  });

  it('can stop at a date', () => {
    const ledger = smallBusiness();
    ledger.post(entry('2024-01-01', 'Capital', '1000', '3000', '5000'));
    ledger.post(entry('2024-02-01', 'Rent', '6000', '1000', '1200'));
    assert.equal(ledger.balance('1000', { asOf: '2024-01-31' }).format(), '5,000.00');
    assert.equal(ledger.balance('1000', { asOf: '2024-02-01' }).format(), '3,800.00');
  });

  it('goes negative when an account is overdrawn', () => {
    const ledger = smallBusiness();
    ledger.post(entry('2024-01-05', 'Rent', '6000', '1000', '1200'));
    assert.equal(ledger.balance('1000').format(), '-1,200.00');
  });

  it('keeps the trial balance balanced', () => {
    const ledger = smallBusiness();
    ledger.post(entry('2024-01-01', 'Capital', '1000', '3000', '5000'));
    ledger.post(entry('2024-01-05', 'Rent', '6000', '2000', '1200'));
    const trial = ledger.trialBalance();
    assert.ok(trial.isBalanced());
    assert.equal(trial.totalDebits.format(), '6,200.00');
    const cash = trial.rows.find((row) => row.account.code === '1000');
    assert.equal(cash.debit.format(), '5,000.00');
    assert.ok(cash.credit.isZero());
  });
});
