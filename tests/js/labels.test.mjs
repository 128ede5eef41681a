// The page's count format (www/js/labels.js `thousands`), run in Node with fast-check: the
// same text as `toLocaleString('en')`, which the page no longer calls (its first call in a
// page loads the browser's number formats).
//   node --test tests/js/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { thousands } from '../../www/js/labels.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 300);

test('a whole number is written as toLocaleString("en") writes it', () => {
  for (const n of [0, 7, 999, 1000, 4608, 49152, 100000, 999999, 1000000, -1, -1000, -4608, Number.MAX_SAFE_INTEGER]) {
    assert.equal(thousands(n), n.toLocaleString('en'), String(n));
  }
  fc.assert(fc.property(fc.maxSafeInteger(), (n) => thousands(n) === n.toLocaleString('en')), { numRuns: runs });
});

test('a fraction keeps its digits after the point, the whole part grouped', () => {
  assert.equal(thousands(1234.5), '1,234.5');
  assert.equal(thousands(-98765.25), '-98,765.25');
});
