import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { CurrencyMismatchError, Money, MoneyFormatError } from '../src/index.js';

describe('parsing amounts', () => {
  it('reads whole units and cents', () => {
    assert.equal(Money.parse('12.34').cents, 1234);
    assert.equal(Money.parse('7').cents, 700);
    assert.equal(Money.parse('0.05').cents, 5);
  });

  it('pads a single decimal to cents', () => {
    assert.equal(Money.parse('2.5').cents, 250);
  });

  it('ignores thousands separators and surrounding spaces', () => {
    assert.equal(Money.parse(' 1,234,567.89 ').cents, 123456789);
  });

  it('reads negative amounts', () => {
    assert.equal(Money.parse('-12.34').cents, -1234);
    assert.equal(Money.parse('-3').cents, -300);
  });

  it('keeps the sign of negative amounts under one unit', () => {
    assert.equal(Money.parse('-0.50').cents, -50);
    assert.equal(Money.parse('-0.07').cents, -7);
  });

  it('rejects text that is not an amount', () => {
    for (const text of ['', 'abc', '1.234', '1.2.3', '--1', '$5']) {
      assert.throws(() => Money.parse(text), MoneyFormatError, text);
    }
  });
});

describe('arithmetic', () => {
  it('adds and subtracts exactly', () => {
    const total = Money.parse('0.10').add(Money.parse('0.20'));
    assert.equal(total.cents, 30);
    assert.equal(total.subtract(Money.parse('1')).cents, -70);
  });

  it('sums a list, zero when empty', () => {
    const amounts = ['1.10', '2.20', '3.30'].map((text) => Money.parse(text));
    assert.equal(Money.sum(amounts).cents, 660);
    assert.ok(Money.sum([]).isZero());
  });

  it('refuses to mix currencies', () => {
    assert.throws(() => new Money(100, 'USD').add(new Money(100, 'EUR')), CurrencyMismatchError);
  });

  it('allocates without losing a cent', () => {
    const parts = Money.parse('100').allocate([1, 1, 1]);
    assert.deepEqual(
      parts.map((part) => part.cents),
      [3334, 3333, 3333],
    );
    assert.deepEqual(
      Money.parse('-1')
        .allocate([1, 1, 1])
        .map((part) => part.cents),
      [-34, -33, -33],
    );
    assert.throws(() => Money.parse('1').allocate([]), RangeError);
  });

  it('compares and tests equality by value', () => {
    assert.ok(Money.parse('1.00').equals(new Money(100)));
    assert.ok(!new Money(100, 'USD').equals(new Money(100, 'EUR')));
    assert.equal(Money.parse('2').compare(Money.parse('3')), -1);
    assert.equal(Money.parse('-0').compare(Money.zero()), 0);
  });

  it('accepts only whole cents', () => {
    assert.throws(() => new Money(1.5), TypeError);
  });
});

describe('formatting amounts', () => {
  it('writes two decimals and thousands separators', () => {
    assert.equal(new Money(123456789).format(), '1,234,567.89');
    assert.equal(new Money(5).format(), '0.05');
    assert.equal(new Money(-150000).format(), '-1,500.00');
  });

  it('adds the currency in toString', () => {
    assert.equal(String(new Money(250, 'EUR')), '2.50 EUR');
  });
});
